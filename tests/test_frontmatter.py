"""Frontmatter: cut at its fences from text normalised once (BOM dropped, CRLF as LF)."""

from __future__ import annotations

import pytest

from gsd.formats import frontmatter

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("---\na: 1\n---\nbody\n", id="plain"),
        pytest.param("\ufeff---\na: 1\n---\nbody\n", id="bom"),
        pytest.param("---\r\na: 1\r\n---\r\nbody\r\n", id="crlf"),
        pytest.param("\ufeff---\r\na: 1\r\n---\r\nbody\r\n", id="bom-and-crlf"),
    ],
)
def test_split_normalises_once_and_its_offsets_index_its_text(text: str) -> None:
    cut = frontmatter.split(text)
    assert cut.text == "---\na: 1\n---\nbody\n"
    assert (cut.yaml_text, cut.body, cut.body_line) == ("a: 1\n", "body\n", 4)
    assert cut.text[cut.body_offset :] == cut.body
    assert frontmatter.load(cut.yaml_text) == ({"a": "1"}, {"a": 2})
