"""Markdown lines shared by the STATE.md and ROADMAP.md editors."""

from __future__ import annotations

import pytest

from gsd.formats.lines import Lines

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("text", "frontmatter", "plain"),
    [
        pytest.param("a\n```\nb\n```\nc\n", True, [0, 4], id="fence"),
        pytest.param("a\n````\n```\nb\n````\nc", True, [0, 5], id="longer-fence-holds-a-shorter"),
        pytest.param("a\n~~~\n```\nb\n", True, [0, 1, 2, 3], id="unclosed-fence-fences-nothing"),
        pytest.param("---\nx: 1\n---\nbody\n", True, [3], id="frontmatter"),
        pytest.param("---\nx: 1\n---\nbody\n", False, [0, 1, 2, 3], id="no-frontmatter"),
    ],
)
def test_plain_lines(text: str, frontmatter: bool, plain: list[int]) -> None:
    assert Lines(text).plain(frontmatter) == plain


def test_edits_keep_line_endings_and_an_unchanged_text_is_the_same_string() -> None:
    text = "one\r\ntwo\r\nthree"
    lines = Lines(text)
    assert lines.result(text) is text
    lines.set(1, "TWO")
    lines.insert(3, ["four"])
    assert lines.result(text) == "one\r\nTWO\r\nthree\r\nfour"
    same = Lines(text)
    same.set(1, "two")
    assert same.result(text) is text
