"""Conformance over every real PLAN.md in ../shared/corpus (skipped when it is absent)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gsd.formats.planning.plan import parse_bytes
from tests.conftest import CORPUS, corpus_plans, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

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


# What `gsd validate` finds in each corpus project; docs/PLANS.md shows the same table.
EXPECTED_FINDINGS = {
    "0jrm__gsd-unsupervised": {"GSD002": 21, "GSD014": 1, "GSD040": 1},
    "AllInStride__tpm-admin-agent": {"GSD040": 2, "GSD044": 2},
    "Biographica__ag-cli": {"GSD044": 2},
    "BrandStake__get-shit-done": {"GSD030": 16, "GSD044": 7},
    "Encryptabit__gsd-tandem": {"GSD040": 1},
    "EnesDemir143__mimic-sepsis-drl": {},
    "Maleick__Nemesis": {},
    "toto-castaldi__docora": {"GSD013": 2, "GSD040": 4},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_FINDINGS))
def test_validate_findings_per_project(name: str, gsd, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.chdir(CORPUS / name)
    result = gsd("validate", "--format", "json")
    report = json.loads(result.out)
    found: dict[str, int] = {}
    for d in report["diagnostics"]:
        found[d["code"]] = found.get(d["code"], 0) + 1
    assert found == EXPECTED_FINDINGS[name]
    assert result.code == (1 if report["errors"] else 0)


def test_upstream_checkpoints_without_a_name_draw_no_warning(gsd, monkeypatch) -> None:
    """Upstream's own template writes `<task type="checkpoint:human-verify">` with no
    `<name>`; docora and BrandStake's plans copy it (issue 21, trap 6)."""
    for name in ("toto-castaldi__docora", "BrandStake__get-shit-done", "0jrm__gsd-unsupervised"):
        monkeypatch.chdir(CORPUS / name)
        result = gsd("validate", "--format", "json")
        said = [d["message"] for d in json.loads(result.out)["diagnostics"]]
        assert not [m for m in said if "checkpoint" in m and "<name>" in m], (name, said)
