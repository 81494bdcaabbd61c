"""simpleyaml gives exactly what PyYAML's BaseLoader gives, or steps aside."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gsd.formats import simpleyaml
from tests.conftest import CORPUS, REPO, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

CASES = [
    pytest.param("plan: 01\nwave: 2\nautonomous: false\n", id="scalars-stay-strings"),
    pytest.param("completed: 2026-01-02\nratio: 1.50\nnull_value: ~\nempty:\n", id="no-resolution"),
    pytest.param("depends_on: []\nfiles: [a.py, 'b c.py', \"d.py\", ]\n", id="flow-lists"),
    pytest.param("depends_on: [\"01-01\", '01-02']\n", id="quoted-ids"),
    pytest.param("a: {}\nb: { }\n", id="empty-flow-mapping"),
    pytest.param("key: value # a comment\n# own line\nother: 'it''s'\n", id="comments-quotes"),
    pytest.param("list:\n  - a\n  - b\nsame:\n- x\n- y\n", id="block-sequences"),
    pytest.param(
        'must_haves:\n  truths:\n    - "it works"\n  artifacts:\n    - path: src/a.py\n'
        '      provides: "x"\n      min_lines: 3\n  key_links:\n    - from: a\n      to: b\n',
        id="must-haves",
    ),
    pytest.param("seq:\n  -\n    k: v\n  -\n  - plain\n", id="dash-alone"),
    pytest.param("url: http://x.y/z#frag\ntext: a#b\n", id="hash-without-space"),
    pytest.param("a: b: c\n", id="colon-in-plain: error or not, PyYAML decides"),
    pytest.param("a: &x [1]\nb: *x\n", id="anchors"),
    pytest.param("a: |\n  block\n  text\n", id="block-scalar"),
    pytest.param("a: multi\n  line plain\n", id="multi-line-plain"),
    pytest.param('a: "esc\\n"\n', id="escapes"),
    pytest.param("a: {k: v}\n", id="flow-mapping"),
    pytest.param("a: [x, [y]]\n", id="nested-flow"),
    pytest.param("a: [x,,y]\n", id="empty-flow-item"),
    pytest.param("- a\n- b\n", id="top-level-list"),
    pytest.param("a:\n\tb: c\n", id="tab-indent"),
    pytest.param("a: 1\n  b: 2\n", id="bad-indentation"),
    pytest.param("a: 1\na: 2\n", id="duplicate-key-last-wins"),
    pytest.param("a: x\n\n\nb:   spaced   out  \n", id="blank-lines-trailing-spaces"),
    pytest.param("'quoted key': v\n", id="quoted-key"),
    pytest.param("a: 'unclosed\n", id="unclosed-quote"),
    pytest.param("", id="empty"),
    pytest.param("# only a comment\n", id="only-comment"),
    pytest.param("a:\n  - - nested\n", id="nested-inline-sequence"),
    pytest.param("a: -1\nb: -x\n", id="dash-plain"),
    pytest.param("a: [x] trailing\n", id="flow-trailing-text"),
    pytest.param("a: ]\n", id="reserved-start"),
    pytest.param('a: "tab\\there \\"q\\" \\u00e9 \\x41 \\\\"\n', id="double-quoted-escapes"),
    pytest.param('a: "bad \\q escape"\n', id="unknown-escape"),
    pytest.param("s:\n  - Phase 2: Lifecycle\n  - plain\n", id="key-with-space-in-item"),
    pytest.param("a:\n    []\nb:\n  lone\n", id="value-on-next-line"),
    pytest.param("added: [anthropic>=0.76.0, 'x, y', \"## h\"]\n", id="flow-specials-in-items"),
    pytest.param("added: [@scope/pkg]\n", id="flow-reserved-start"),
    pytest.param("a: [Phase 3: x, y]\n", id="flow-pair"),
    pytest.param("a: [x, y\n", id="flow-unclosed"),
]


def pyyaml(text: str) -> object:
    try:
        value = yaml.load(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError:
        return "error"
    return {} if value is None else value


def check(text: str) -> bool:
    """True when simpleyaml read the text (and agreed with PyYAML); False if it stepped aside."""
    try:
        data, _ = simpleyaml.load(text)
    except simpleyaml.Unsupported:
        return False
    assert data == pyyaml(text)
    return True


@pytest.mark.parametrize("text", CASES)
def test_agrees_with_pyyaml_or_steps_aside(text: str) -> None:
    check(text)


def test_key_lines_are_zero_based() -> None:
    _, lines = simpleyaml.load("# c\na: 1\n\nb:\n  - x\nc: [y]\n")
    assert lines == {"a": 1, "b": 3, "c": 5}


def frontmatters(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_bytes().decode("utf-8-sig", "replace").replace("\r\n", "\n")
        if text.startswith("---\n") and "\n---" in text[3:]:
            found.append(text[4 : text.index("\n---", 3) + 1])
    return found


@requires_corpus
def test_every_corpus_frontmatter() -> None:
    texts = frontmatters(CORPUS)
    read = sum(check(t) for t in texts)
    assert len(texts) > 100
    assert read / len(texts) > 0.95, f"fast path read only {read} of {len(texts)}"


def test_bundled_frontmatters() -> None:
    for text in frontmatters(REPO / "examples") + frontmatters(REPO / "agents"):
        check(text)
