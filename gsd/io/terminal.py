"""gsd's standard output and error as a terminal gets them: every character an agent could
steer a terminal with shown as text (`gsd.core.visible`), whatever command printed it and
whichever renderer made the text. Small on purpose: `gsd validate` (a git hook) loads it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from gsd.core.visible import visible


class Escaping:
    """A text stream that writes `visible(text, lines=True)` to `raw`: newlines and tabs
    kept, every other control and bidi character shown as `^[`, `M-^[` or `\\u202e`.
    Whatever command printed the text and whichever renderer made it."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(visible(text, lines=True))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> object:
        return getattr(self.raw, name)


def unescaped(stream: TextIO) -> TextIO:
    """The stream below an `Escaping` one (the terminal itself), or `stream`."""
    return stream.raw if isinstance(stream, Escaping) else stream


@contextmanager
def escaped_output() -> Iterator[None]:
    """sys.stdout and sys.stderr behind `Escaping` while the block runs."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Escaping(out), Escaping(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
