"""`gsd sync` on projects upstream GSD kept (issue 21, trap 6): a shipped milestone's
position lines, a collapsed milestone's phase names and `Phase: N of M` with phase
numbers the folders skip. Measured on the corpus projects ag-cli, docora and
tpm-admin-agent (read only: `sync --check` writes nothing), then on small projects."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.io.plans.project import Project
from gsd.run.derive import gather, state_text
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

PLAN = (
    '---\nphase: {phase}\nplan: 01\nwave: 1\n---\n<tasks><task type="auto"><name>T</name>'
    "<files>a</files><action>a</action><verify>v</verify><done>d</done></task></tasks>\n"
)
SUMMARY = "---\nphase: {phase}\nplan: 01\ncompleted: 2026-02-13\nduration: 3min\n---\n# done\n"

SHIPPED = """\
# Project State

## Current Position

Phase: v1.0 complete
Plan: All plans complete
Status: Milestone shipped
Last activity: 2026-01-19 — v1.0 milestone archived

Progress: [=========================] 100% (31/31 plans)

## Performance Metrics

**v1.0 Velocity:**
- Total plans completed: 25
- Average duration: 3.5 min
- Total execution time: 1.52 hours

## Session Continuity

Last session: 2026-01-19
Stopped at: v1.0 milestone complete
Resume file: None
"""

WORKING = SHIPPED.replace("Phase: v1.0 complete", "Phase: 1 of 1 (Old)").replace(
    "Status: Milestone shipped", "Status: Ready to execute"
)

COLLAPSED = """\
# Roadmap: Docora

## Phases

<details>
<summary>v1.0 (Phases 1-4) - SHIPPED 2026-02-13</summary>

- [x] Phase 1: Foundation & Authentication (5/5 plans) — completed 2026-01-29
- [x] Phase 4: Enhanced Visibility (5/5 plans) — completed 2026-02-13

</details>

- [ ] **Phase 5: Hardening** - later
"""


def _project(root: Path, phases: dict[str, bool], roadmap: str | None = None) -> Project:
    """Folders `phases` names, one plan each, done (a SUMMARY.md) or not."""
    for name, done in phases.items():
        folder = root / ".planning/phases" / name
        folder.mkdir(parents=True)
        number = name.split("-")[0]
        (folder / f"{number}-01-PLAN.md").write_text(PLAN.format(phase=name))
        if done:
            (folder / f"{number}-01-SUMMARY.md").write_text(SUMMARY.format(phase=name))
    if roadmap is not None:
        (root / ".planning/ROADMAP.md").write_text(roadmap)
    return Project(root)


def test_a_shipped_milestone_keeps_its_position_lines(tmp_path: Path) -> None:
    facts = gather(_project(tmp_path, {"01-alpha": True, "02-beta": True}))
    assert state_text(SHIPPED, facts) == SHIPPED


def test_work_on_a_new_phase_after_shipping_brings_gsds_position_back(tmp_path: Path) -> None:
    project = _project(tmp_path, {"01-alpha": True, "02-beta": True})
    second = PLAN.format(phase="02-beta").replace("plan: 01", "plan: 02")
    (tmp_path / ".planning/phases/02-beta/02-02-PLAN.md").write_text(second)
    derived = state_text(SHIPPED, gather(project))
    assert "Status: In progress" in derived, derived
    assert "Phase: 2 of 2 (Beta)" in derived


def test_a_collapsed_milestone_line_gives_the_phase_name_alone(tmp_path: Path) -> None:
    facts = gather(_project(tmp_path, {"04-enhanced-visibility": True}, COLLAPSED))
    derived = state_text(WORKING, facts)
    assert "Phase: 4 of 5 (Enhanced Visibility)" in derived, derived


def test_phase_n_of_m_never_has_n_above_m(tmp_path: Path) -> None:
    """tpm-admin-agent's folders are 01-06 and 10 (six of them): `Phase: 10 of 6`."""
    folders = {"01-a": True, "02-b": True, "03-c": True, "04-d": True, "06-f": True}
    facts = gather(_project(tmp_path, {**folders, "10-wiring": True}))
    derived = state_text(WORKING, facts)
    assert "Phase: 10 of 10 (Wiring)" in derived, derived


@requires_corpus
@pytest.mark.parametrize(
    "name", ["Biographica__ag-cli", "toto-castaldi__docora", "AllInStride__tpm-admin-agent"]
)
def test_sync_check_leaves_upstreams_state_md_alone(name: str, gsd, monkeypatch) -> None:
    """`sync --check` proposed `Status: Milestone shipped` -> `Status: Phase complete`,
    `Phase: 4 of 17 (Enhanced Visibility (5/5 plans) — completed 2026-02-13)` and
    `Phase: 10 of 6` on these three."""
    monkeypatch.chdir(CORPUS / name)
    result = gsd("sync", "--check")
    said = result.out + result.err
    assert ".planning/STATE.md:" not in said, said
    assert "Phase complete" not in said and "(5/5 plans)" not in said and " of 6 " not in said
