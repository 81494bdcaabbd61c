"""The progress writer: plain `[gsd]` lines, live elapsed-time lines on a terminal."""

from __future__ import annotations

import io

import pytest

from gsd.io.live import Console, elapsed, wants_live

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    console = Console(out)
    assert console.live is False
    with console.running("plan 01-01 task 1 worker"):
        console.say("phase 1 wave 1/1 plan 01-01 task 1: worker (attempt 1)")
        console.refresh()
    console.close()
    assert out.getvalue() == "[gsd] phase 1 wave 1/1 plan 01-01 task 1: worker (attempt 1)\n"


def test_live_lines_show_running_tasks_and_are_erased() -> None:
    out = io.StringIO()
    console = Console(out, live=True)
    with console.running("plan 01-01 task 1 worker"), console.running("plan 01-02 task 1 worker"):
        console.say("a line that stays")
        text = out.getvalue()
        assert "0s  plan 01-01 task 1 worker\n" in text and "plan 01-02 task 1 worker" in text
        # the stayer is written after erasing the two live lines, which come back below it
        tail = text[text.index("\x1b[2F\x1b[J") :]
        assert tail.index("[gsd] a line that stays") < tail.index("plan 01-02 task 1 worker")
    console.close()
    assert out.getvalue().endswith("\x1b[1F\x1b[J")  # the last live line erased


def test_a_stream_that_is_no_terminal_or_ci_gets_no_live_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_live(Tty()) is True
    monkeypatch.setenv("CI", "true")
    assert wants_live(Tty()) is False
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TERM", "dumb")
    assert wants_live(Tty()) is False
    assert wants_live(io.StringIO()) is False


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0.4, "0s"), (59, "59s"), (125, "2:05"), (3729, "1:02:09")]
)
def test_elapsed(seconds: float, shown: str) -> None:
    assert elapsed(seconds) == shown
