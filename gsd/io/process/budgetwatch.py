"""Watching a running agent's streamed usage: its stdout file read on from where it stopped."""

from __future__ import annotations

from pathlib import Path

from gsd.formats.runners.usage import UsageMeter

CHUNK = 256 * 1024  # read at most this much at a time
LONGEST_LINE = 4 * 1024 * 1024  # a longer line (a tool's output) carries no usage: skipped
# Every line that reports usage holds one of these (formats/runners/usage.py's events): the
# rest (an agent printing 1 GiB of `y`) is passed over at memchr speed, not line by line.
_KEYS = (b'"usage"', b'"total_tokens"')
# The runners whose stream reports usage only at the end (formats/runners/usage.py): the lines
# the meter estimates from until then. gemini: its tool calls and results; codex: its
# items (CodexEstimate).
_ESTIMATE_KEYS = {
    "gemini": (b'"type":"tool_use"', b'"type":"tool_result"'),
    "codex": (b'"item.completed"', b'"turn.started"'),
}


class BudgetWatch:
    """Reads what the agent appended to `stdout_path` since the last look and answers
    whether its reported tokens have passed `abort`. Memory stays bounded whatever the
    agent prints: a chunk, and one partial line of at most LONGEST_LINE."""

    def __init__(self, stdout_path: Path, runner: str, abort: int) -> None:
        self.path = stdout_path
        self.meter = UsageMeter(runner)
        self.abort = abort
        self._offset = 0
        self._partial = b""
        self._skipping = False  # inside a line longer than LONGEST_LINE
        self._keys = _KEYS + _ESTIMATE_KEYS.get(runner, ())

    @property
    def tokens(self) -> int:
        return self.meter.tokens

    @property
    def estimated(self) -> bool:
        """Whether `tokens` is partly an estimate (gemini before its result event, a
        codex turn that has not ended)."""
        return self.meter.estimated

    def __call__(self) -> bool:
        """Read on; True once the stream has reported more than `abort` tokens."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                while chunk := handle.read(CHUNK):
                    self._offset += len(chunk)
                    self._lines(chunk)
                    if self.meter.tokens > self.abort:
                        break
        except OSError:
            pass
        return self.meter.tokens > self.abort

    def _lines(self, chunk: bytes) -> None:
        if self._skipping and b"\n" not in chunk:
            return  # still inside the overlong line
        data = self._partial + chunk
        end = data.rfind(b"\n")
        if end < 0:
            whole, rest = [], data
        elif not any(key in data for key in self._keys):
            whole, rest = [b""], data[end + 1 :]  # nothing to read in the whole lines
        else:
            *whole, rest = data.split(b"\n")
        for number, line in enumerate(whole):
            if number == 0 and self._skipping:
                continue  # the end of a line too long to read
            if any(key in line for key in self._keys):
                self.meter.feed(line)
        if whole:
            self._skipping = False
        if len(rest) > LONGEST_LINE:
            rest, self._skipping = b"", True
        self._partial = rest
