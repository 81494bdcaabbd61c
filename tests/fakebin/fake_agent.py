#!/usr/bin/env python3
"""A stand-in for `claude`, `gemini` and `codex` in tests: it answers by its own name.

It records its argv, stdin and GSD_* environment as JSON into the file named by
$FAKE_AGENT_RECORD, then prints output shaped like the real program's documented
headless output (claude `-p --output-format json`, gemini `--output-format json`,
codex `exec --json`), with a Task Report as the agent's final text.
"""

import json
import os
import sys

REPORT = """Done.

### Task Report
- Status: success
- Files Created: src/fake.py
- Files Modified: none
- Files Deleted: none
- Validation: skipped
- Errors: none
### Downstream Context
- Key Interfaces Introduced: fake() in src/fake.py
- Patterns Established: none
- Warnings: none

## TASK COMPLETE"""


def main() -> int:
    name = os.path.basename(sys.argv[0])
    record = {
        "name": name,
        "argv": sys.argv[1:],
        "stdin": sys.stdin.read(),
        "env": {k: v for k, v in os.environ.items() if k.startswith("GSD_")},
    }
    with open(os.environ["FAKE_AGENT_RECORD"], "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    if name == "claude":
        print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "num_turns": 2,
                    "result": REPORT,
                    "session_id": "fake",
                    "total_cost_usd": 0.01,
                    "usage": {
                        "input_tokens": 100,
                        "cache_read_input_tokens": 50,
                        "output_tokens": 20,
                    },
                }
            )
        )
    elif name == "gemini":
        print(
            json.dumps(
                {
                    "session_id": "fake",
                    "response": REPORT,
                    "stats": {
                        "models": {
                            "gemini-2.5-pro": {
                                "tokens": {"prompt": 100, "candidates": 20, "total": 120}
                            }
                        }
                    },
                },
                indent=2,
            )
        )
    elif name == "codex":
        for event in (
            {"type": "thread.started", "thread_id": "fake"},
            {"type": "turn.started"},
            {
                "type": "item.completed",
                "item": {"id": "item_0", "type": "agent_message", "text": REPORT},
            },
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 20},
            },
        ):
            print(json.dumps(event))
    else:
        print(f"fake_agent: unknown name {name}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
