"""Reading SUMMARY.md back: frontmatter (broken YAML salvaged), where a plan's is, the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.core.errors import InputError
from gsd.formats.planning import summaryread
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_no_frontmatter_parses_as_empty() -> None:
    assert summaryread.parse("# Phase 1 Plan 01: Summary\n\nDone.\n") == {}


BROKEN = """\
---
phase: 02-data
plan: 01
decisions:
  - loader tries yaml first
    (locked decision: registry is a convenience)
metrics:
  duration: 3 min
---

# Phase 02 Plan 01: Summary
"""


def test_broken_frontmatter_keeps_the_keys_that_read() -> None:
    assert summaryread.parse(BROKEN) == {
        "phase": "02-data",
        "plan": "01",
        "metrics": {"duration": "3 min"},
    }


def test_broken_frontmatter_is_an_input_error_when_strict() -> None:
    with pytest.raises(InputError, match=r"^02-01-SUMMARY.md:\d+: invalid YAML"):
        summaryread.parse(BROKEN, "02-01-SUMMARY.md", strict=True)


def test_exists_means_the_plan_is_done(tmp_path: Path) -> None:
    phase = tmp_path / "01-alpha"
    phase.mkdir()
    assert not summaryread.exists(phase, "01-02")
    (phase / "01-02-PLAN.md").write_text("plan")
    (phase / "01-02-03-SUMMARY.md").write_text("not ours")  # a longer id, not a slug
    assert not summaryread.exists(phase, "01-02")
    (phase / "01-02-SUMMARY.md").write_text("done")
    assert summaryread.exists(phase, "01-02")
    assert summaryread.exists(str(phase), "01-02")
    (phase / "01-03-auth-SUMMARY.md").write_text("done")  # upstream's slugged name
    assert summaryread.exists(phase, "01-03")
    assert not summaryread.exists(tmp_path / "missing", "01-02")
    # `find` is what `exists` asks: the orchestrator reads a dependency's SUMMARY with it
    assert summaryread.find(phase, "01-03") == phase / "01-03-auth-SUMMARY.md"
    assert summaryread.find(phase, "01-02") == phase / "01-02-SUMMARY.md"
    assert summaryread.find(phase, "01-04") is None


def corpus_summaries() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.rglob("*-SUMMARY.md"))


@requires_corpus
def test_every_corpus_summary_frontmatter_parses() -> None:
    paths = corpus_summaries()
    assert paths
    with_frontmatter = 0
    for path in paths:
        data = summaryread.load(path)  # some are not valid YAML: the keys that read are kept
        if data:
            with_frontmatter += 1
            assert isinstance(data.get("phase", ""), str), path
            assert isinstance(data.get("plan", ""), str), path
    assert with_frontmatter >= len(paths) - 5


@requires_corpus
def test_corpus_zero_padded_plans_stay_text() -> None:
    plans = {summaryread.load(p).get("plan") for p in corpus_summaries()}
    assert "01" in plans and 1 not in plans
