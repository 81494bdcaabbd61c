"""Counted nouns: `1 task`, `2 tasks`."""

from __future__ import annotations

import pytest

from gsd.core.words import plural

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("count", "noun", "many", "expected"),
    [
        pytest.param(1, "task", None, "1 task", id="one"),
        pytest.param(2, "task", None, "2 tasks", id="two"),
        pytest.param(0, "group", None, "0 groups", id="zero"),
        pytest.param(1, "validation error", None, "1 validation error", id="two-words-one"),
        pytest.param(3, "validation error", None, "3 validation errors", id="two-words"),
        pytest.param(2, "process", None, "2 processes", id="irregular"),
        pytest.param(2, "checkpoint tag", None, "2 checkpoint tags", id="tag"),
        pytest.param(2, "child", "children", "2 children", id="spelled"),
        pytest.param(1, "child", "children", "1 child", id="spelled-one"),
    ],
)
def test_plural(count: int, noun: str, many: str | None, expected: str) -> None:
    assert plural(count, noun, many) == expected
