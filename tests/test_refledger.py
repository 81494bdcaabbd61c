"""The ledger of refs gsd wrote: which values are gsd's own after a mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.io.git import refledger

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_the_ledger_answers_for_writes_after_a_mark(tmp_path: Path) -> None:
    ledger = refledger.ledger(tmp_path)
    assert refledger.ledger(tmp_path) is ledger
    ledger.wrote("refs/heads/a", "1")
    mark = ledger.now()
    ledger.wrote("refs/heads/b", "2")
    ledger.wrote("refs/heads/b", "")
    # every value since the mark is gsd's: another thread's listing may have seen "2"
    assert ledger.since(mark) == {"refs/heads/b": frozenset({"2", ""})}
    ledger.forget("refs/heads/b")
    assert ledger.since(0) == {"refs/heads/a": frozenset({"1"})}
