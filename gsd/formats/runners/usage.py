"""Token usage read line by line from a runner's streamed output, while the agent runs.

Each runner's stream says its usage in its own event (the shapes are cited per runner):
- claude-code 2.1.330 `-p --output-format stream-json --verbose`: every `assistant` line
  carries its API call's `message.usage` (input_tokens, cache_creation_input_tokens,
  cache_read_input_tokens, output_tokens); one call's content blocks come as several
  lines with the same `message.id`, so the last usage per id counts; the final `result`
  line holds the run's whole `usage`, which then replaces the sum;
- codex 0.169.0 `exec --json`: `turn.completed` events with `usage` (input_tokens, which
  hold cached_input_tokens, and output_tokens, which hold reasoning_output_tokens), only
  when a turn ends, and `codex exec` runs one turn: until then the meter estimates
  (`CodexEstimate`) and says so (`estimated`);
- gemini-cli 0.61.0 `--output-format stream-json`: the `result` event's `stats`
  (`total_tokens`), written once, at the end (StreamJsonFormatter.convertToStreamStats).
  Before it the stream holds no usage at all (events: init, message, tool_use,
  tool_result), so a runaway would run every turn before its count came: until then the
  meter estimates (`estimated`): each model turn (a `tool_use` not right after another)
  re-sends gemini's system prompt and tool declarations (about 48 kB, measured against
  the scripted model server: GEMINI_TURN_TOKENS) and the conversation so far (what the
  stream showed of it, 4 bytes a token). The `result` replaces the estimate.
"""

from __future__ import annotations

import json
from typing import Any

from gsd.formats.runners.output import int_or_none, loads, total

STREAMS_USAGE = frozenset({"claude", "codex", "gemini"})
GEMINI_TURN_TOKENS = 12_000  # gemini-cli 0.61.0's request without the conversation
_BYTES_PER_TOKEN = 4
_CLAUDE_USAGE = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


class UsageMeter:
    """The tokens a runner's stream has reported so far (`tokens`), fed one line at a time."""

    def __init__(self, runner: str) -> None:
        self.runner = runner
        self.tokens = 0
        self._calls: dict[str, int] = {}  # claude: the usage of each API call, by message id
        self._final: int | None = None
        # `tokens` holds an estimate: gemini before its result, codex mid-turn
        self.estimated = False
        self._said = 0  # gemini: bytes of the conversation the stream showed so far
        self._in_turn = False  # gemini: the last event was a tool call
        self._counted = 0  # codex: the usage of finished turns
        self._turn = CodexEstimate()  # codex: the turn under way

    def feed(self, line: bytes | str) -> int:
        """Read one line of output; returns the tokens reported so far."""
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        text = text.strip()
        if not text.startswith("{"):
            return self.tokens
        event = loads(text)
        if isinstance(event, dict):
            self._read(event)
        return self.tokens

    def _read(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if self.runner == "claude":
            if kind == "assistant" and isinstance(event.get("message"), dict):
                message = event["message"]
                used = _sum(message.get("usage"), _CLAUDE_USAGE)
                if used is not None:
                    self._calls[str(message.get("id", len(self._calls)))] = used
            elif kind == "result":
                self._final = _sum(event.get("usage"), _CLAUDE_USAGE)
            calls = sum(self._calls.values())
            self.tokens = calls if self._final is None else max(self._final, calls)
        elif self.runner == "codex":
            self._codex(kind, event)
        elif self.runner == "gemini":
            self._gemini(kind, event)

    def _codex(self, kind: Any, event: dict[str, Any]) -> None:
        if kind == "turn.completed":
            used = _sum(event.get("usage"), ("input_tokens", "output_tokens"))
            self._counted += used or 0
            self._turn = CodexEstimate()
        else:
            self._turn.read(kind, event)
        self.tokens = self._counted + self._turn.tokens
        self.estimated = self._turn.tokens > 0

    def _gemini(self, kind: Any, event: dict[str, Any]) -> None:
        if kind == "result":
            stats = event.get("stats")
            counted = int_or_none(stats.get("total_tokens")) if isinstance(stats, dict) else None
            if counted is None:
                counted = _sum(stats, ("input_tokens", "output_tokens"))
            self.tokens = max(self.tokens, counted or 0) if not self.estimated else counted or 0
            self.estimated = False
            return
        size = len(str(event.get("content") or event.get("output") or event.get("parameters")))
        if kind == "tool_use" and not self._in_turn:  # a model turn: the whole request again
            self.tokens += GEMINI_TURN_TOKENS + self._said // _BYTES_PER_TOKEN
            self.estimated = True
        self._said += size
        self._in_turn = kind == "tool_use"


# What one request of codex 0.169.0 sends before any conversation: its instructions and
# tool schemas, measured at ~10,000 tokens (4 characters a token) against the test
# model server. Counted at under half that, so that the estimate errs below the real
# figure: a short task is never stopped by it (the final count judges it), a runaway
# (whose every request re-sends all it has seen) still passes the threshold fast.
CODEX_REQUEST_TOKENS = 4_000
CHARS_PER_TOKEN = 4
# item types after which codex asks the model again (the tool's result is sent back)
_CODEX_TOOL_ITEMS = frozenset(
    {"command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"}
)


class CodexEstimate:
    """The tokens of a codex turn under way, estimated from its `item.*` events: every
    request re-sends the whole conversation, so each one costs the request's fixed part
    plus everything the turn has seen so far (4 characters a token); the turn starts with
    one request and makes another after each tool call."""

    def __init__(self) -> None:
        self.tokens = 0
        self._seen = 0  # tokens of conversation the turn has added so far

    def read(self, kind: Any, event: dict[str, Any]) -> None:
        if kind == "turn.started":
            self.tokens += CODEX_REQUEST_TOKENS
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            size = len(json.dumps(item, ensure_ascii=False)) // CHARS_PER_TOKEN
            self._seen += size
            if item.get("type") in _CODEX_TOOL_ITEMS:
                self.tokens += CODEX_REQUEST_TOKENS + self._seen
            else:
                self.tokens += size  # the model's own text: output tokens


def _sum(usage: Any, keys: tuple[str, ...]) -> int | None:
    """The sum of `keys` known in `usage`, or None when it is no usage object."""
    if not isinstance(usage, dict):
        return None
    return total([int_or_none(usage.get(key)) for key in keys])
