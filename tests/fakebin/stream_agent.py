#!/usr/bin/env python3
"""A stand-in agent that streams its usage as a real CLI does, growing step by step.

    stream_agent.py RUNNER TOKENS[,TOKENS...] [--hang] [--write FILE]

For each step it prints the lines RUNNER prints for one model call of that many tokens,
then sleeps 0.3 s; at the end the runner's closing line with the Task Report, unless
--hang (it then sleeps 60 s, as an agent still working would). --write creates FILE
first (so a rollback can be seen). The shapes:
- claude-code 2.1.330 `-p --output-format stream-json --verbose` (captured:
  tests/fixtures/runners/claude-2.1.330_stream_not_logged_in.jsonl): `system/init`,
  one `assistant` line per API call with `message.id` and `message.usage`, a `result`;
- codex 0.169.0 `exec --json` (docs/exec.md, tests/fixtures/runners/codex_success.jsonl):
  `thread.started`, `turn.started`, `item.completed`, `turn.completed` with `usage`;
- gemini-cli 0.61.0 `--output-format stream-json` (bundle StreamJsonFormatter and
  tests/fixtures/runners/gemini-0.61.0_stream_offline.jsonl): `init`, `message`,
  `result` with `stats.total_tokens`, the only usage it streams.
"""

import json
import os
import sys
import time

REPORT = """Done.

### Task Report
- Status: success
- Files Created: src/new.py
- Files Modified: none
- Files Deleted: none
- Validation: pass
- Errors: none
### Downstream Context
- Key Interfaces Introduced: none
- Patterns Established: none
- Warnings: none

## TASK COMPLETE"""
STAMP = "2026-11-24T09:51:33.066Z"


def emit(obj):
    print(json.dumps(obj), flush=True)


def claude(steps, hang):
    emit({"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": []})
    total = 0
    for n, tokens in enumerate(steps):
        usage = {
            "input_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": tokens - 30,
            "output_tokens": 20,
        }
        total += tokens
        for block in ("thinking", "text"):  # one API call, two content blocks: one id
            emit(
                {
                    "type": "assistant",
                    "message": {
                        "id": f"msg_{n}",
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": block, "text": "..."}],
                        "usage": usage,
                    },
                    "parent_tool_use_id": None,
                    "session_id": "s",
                }
            )
        time.sleep(0.3)
    if hang:
        time.sleep(60)
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": REPORT,
            "num_turns": len(steps),
            "session_id": "s",
            "total_cost_usd": 0.25,
            "usage": {
                "input_tokens": 10 * len(steps),
                "output_tokens": 20 * len(steps),
                "cache_read_input_tokens": total - 30 * len(steps),
            },
        }
    )


def codex(steps, hang):
    emit({"type": "thread.started", "thread_id": "t"})
    for tokens in steps:
        emit({"type": "turn.started"})
        message = {"id": "i", "type": "agent_message", "text": REPORT}
        emit({"type": "item.completed", "item": message})
        emit(
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": tokens - 20,
                    "cached_input_tokens": 0,
                    "output_tokens": 20,
                },
            }
        )
        time.sleep(0.3)
    if hang:
        time.sleep(60)


def gemini(steps, hang):
    emit({"type": "init", "timestamp": STAMP, "session_id": "s", "model": "auto"})
    emit({"type": "message", "timestamp": STAMP, "role": "user", "content": "the prompt"})
    emit(
        {
            "type": "message",
            "timestamp": STAMP,
            "role": "assistant",
            "content": REPORT,
            "delta": True,
        }
    )
    time.sleep(0.3 * len(steps))
    total = sum(steps)
    emit(
        {
            "type": "result",
            "timestamp": STAMP,
            "status": "success",
            "stats": {
                "total_tokens": total,
                "input_tokens": total - 20,
                "output_tokens": 20,
                "cached": 0,
                "input": total - 20,
                "duration_ms": 5,
                "tool_calls": 0,
                "models": {},
            },
        }
    )
    if hang:
        time.sleep(60)


def main():
    runner, steps = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    if "--write" in sys.argv:
        path = sys.argv[sys.argv.index("--write") + 1]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as handle:
            handle.write("made = 1\n")
    sys.stdin.read()
    {"claude": claude, "codex": codex, "gemini": gemini}[runner](steps, "--hang" in sys.argv)


main()
