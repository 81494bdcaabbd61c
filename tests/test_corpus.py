"""Conformance over every real PLAN.md in ../shared/corpus (skipped when it is absent)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gsd.plan import parse_bytes
from tests.conftest import CORPUS, corpus_plans, requires_corpus

pytestmark = requires_corpus

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def reference_tasks(text: str) -> list[str]:
    """An independent reading: per `<task[\\s>]` outside fences, the first <name> after it."""
    depth = 0
    outside: list[str] = []
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if fence:
            if fence.group(2).strip() or depth == 0:
                depth += 1
            else:
                depth -= 1
            outside.append(" " * len(line))
        else:
            outside.append(line if depth == 0 else " " * len(line))
    body = "\n".join(outside)  # same offsets as `text`, fenced lines blanked
    full = text
    names = []
    starts = [m.start() for m in re.finditer(r"<task[\s>]", body)]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(full)
        match = re.search(r"<name>(.*?)</name>", full[start:end], re.S)
        names.append(" ".join(match.group(1).split()) if match else "")
    return names


def test_the_corpus_is_the_expected_one() -> None:
    plans = corpus_plans()
    assert len(plans) == 72
    total = sum(len(reference_tasks(_text(p))) for p in plans)
    assert total == 187  # SPEC section 2


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n")


@pytest.mark.parametrize(
    "path", corpus_plans(), ids=lambda p: str(p.relative_to(CORPUS)) if CORPUS in p.parents else ""
)
def test_corpus_plan(path: Path) -> None:
    plan = parse_bytes(path.read_bytes(), str(path))
    text = _text(path)
    assert plan.readable
    assert not [d for d in plan.diagnostics if d.code in ("GSD001", "GSD050")]
    assert [t.name for t in plan.tasks] == reference_tasks(text)
    for task in plan.tasks:
        assert text.splitlines()[task.line - 1].lstrip().startswith("<task")
    for key, value in raw_frontmatter_scalars(text).items():
        assert plan.frontmatter[key] == value, key


def raw_frontmatter_scalars(text: str) -> dict[str, str]:
    """Top-level `key: value` scalars exactly as written (quotes removed)."""
    head = text.split("\n---\n", 1)[0]
    found = {}
    for line in head.split("\n")[1:]:
        match = re.match(r"^([A-Za-z_][\w-]*):[ \t]+(\S.*?)[ \t]*$", line)
        if not match or match.group(2)[0] in "[{|>&*!#":
            continue
        value = match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        found[match.group(1)] = value
    return found


def test_plan_field_stays_a_zero_padded_string() -> None:
    values = {parse_bytes(p.read_bytes(), str(p)).frontmatter.get("plan") for p in corpus_plans()}
    assert "01" in values and 1 not in values
