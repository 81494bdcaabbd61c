"""gsd verify's reading of every real plan in ../shared/corpus (skipped when absent).

The corpus holds the projects' `.planning/` folders, not their code: what can be checked
here is that every must_haves entry is read as upstream reads it, and which `@`
references resolve in the corpus tree. The figures are docs/issue15/verify.md's table.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from gsd.core.musthaves import declared
from gsd.formats.planning.plan import parse_bytes
from gsd.io.plans.verify import PlanChecks, Tree, check_plan
from tests.conftest import CORPUS, corpus_plans, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

pytestmark = requires_corpus

# per project: plans, with must_haves, artifacts, key links,
# @ references in the project (found, missing), ~/ or absolute ones (not looked at)
EXPECTED = {
    "0jrm__gsd-unsupervised": (7, 0, 0, 0, 19, 38, 0),
    "AllInStride__tpm-admin-agent": (9, 9, 31, 20, 8, 59, 21),
    "Biographica__ag-cli": (6, 6, 30, 14, 12, 32, 12),
    "BrandStake__get-shit-done": (22, 22, 43, 45, 98, 16, 57),
    "Encryptabit__gsd-tandem": (6, 6, 24, 23, 17, 48, 0),
    "EnesDemir143__mimic-sepsis-drl": (9, 9, 27, 11, 18, 27, 18),
    "Maleick__Nemesis": (6, 6, 19, 10, 22, 37, 12),
    "toto-castaldi__docora": (7, 7, 13, 10, 17, 31, 14),
}


def _checked(path: Path) -> tuple[str, PlanChecks, object]:
    project = path.relative_to(CORPUS).parts[0]
    root = CORPUS / project
    plan = parse_bytes(path.read_bytes(), path.relative_to(root).as_posix())
    text = path.read_bytes().decode("utf-8-sig")
    return project, check_plan(Tree(root, None), plan, text), plan.frontmatter.get("must_haves")


def figures() -> dict[str, tuple[int, ...]]:
    counts: dict[str, Counter[str]] = {}
    for path in corpus_plans():
        project, checked, must_haves = _checked(path)
        count = counts.setdefault(project, Counter())
        wanted = declared(must_haves)
        count["plans"] += 1
        count["with"] += isinstance(must_haves, dict)
        count["artifacts"] += len(wanted.artifacts)
        count["links"] += len(wanted.key_links)
        for check in checked.checks:
            if check.kind == "reference":
                count[f"ref-{check.status}"] += 1
    keys = ("plans", "with", "artifacts", "links", "ref-pass", "ref-fail", "ref-skip")
    return {project: tuple(c[k] for k in keys) for project, c in sorted(counts.items())}


def test_verify_figures_per_project() -> None:
    assert figures() == EXPECTED


@pytest.mark.parametrize(
    "path", corpus_plans(), ids=lambda p: str(p.relative_to(CORPUS)) if CORPUS in p.parents else ""
)
def test_every_must_have_entry_is_read(path: Path) -> None:
    """Every artifact has a path and every key link a from: nothing in the corpus is
    skipped; a reference found is a file there, one missing is not (an independent look)."""
    project, checked, must_haves = _checked(path)
    assert declared(must_haves).skipped == []
    if isinstance(must_haves, dict):
        assert len(declared(must_haves).artifacts) == len(must_haves.get("artifacts") or [])
        assert len(declared(must_haves).key_links) == len(must_haves.get("key_links") or [])
    for check in checked.checks:
        if check.kind == "reference" and check.status != "skip":
            there = os.path.exists(CORPUS / project / check.subject)
            assert there == (check.status == "pass"), check


def test_brandstakes_contains_list_is_read_item_by_item() -> None:
    """BrandStake's 05-02 gives `contains:` as a YAML list of five headings; it was
    searched as its Python text, `"['## Test Case 1: ...', ...]"` (issue 21, trap 6)."""
    from gsd.core.musthaves import check_artifact

    path = CORPUS / "BrandStake__get-shit-done/.planning/phases"
    path = path / "05-testing-validation-edge-cases/05-02-PLAN.md"
    plan = parse_bytes(path.read_bytes(), path.name)
    (artifact,) = declared(plan.frontmatter.get("must_haves")).artifacts
    assert len(artifact.contains) == 5
    assert all(c.startswith("## Test Case ") for c in artifact.contains)
    text = "\n".join([*artifact.contains, *["x"] * 200])
    assert check_artifact(artifact, text).status == "pass"
    missing = check_artifact(artifact, text.replace(artifact.contains[2], ""))
    assert missing.status == "fail"
    assert missing.detail == f"does not contain {artifact.contains[2]!r}"
