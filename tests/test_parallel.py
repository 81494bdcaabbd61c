"""Large trees are validated by several processes with the same result as one."""

from __future__ import annotations

import json

from gsd.io.plans.validate import PARALLEL_MIN_PLANS
from tests.conftest import plan_text


def test_workers_report_exactly_what_one_process_reports(project, gsd) -> None:
    per_phase = 50
    for n in range(PARALLEL_MIN_PLANS + 20):
        phase, number = n // per_phase + 1, n % per_phase + 1
        phase_dir = f"{phase:02d}-p"
        deps = f'["{phase:02d}-{number - 1:02d}"]' if number > 1 else "[]"
        text = plan_text(
            phase=phase_dir,
            plan=f"{number:02d}",
            wave=number,
            depends_on=deps,
            files_modified=f"[src/{phase}_{number}.py]",
        )
        if n % 97 == 0:
            text = text.replace("type: execute", "type: wrong")
        project.plan(f"{phase:02d}-{number:02d}", text=text, phase_dir=phase_dir)
    one = gsd("validate", "--format", "json", "--jobs", "1")
    many = gsd("validate", "--format", "json", "--jobs", "2")
    assert one.code == many.code == 1
    assert json.loads(one.out) == json.loads(many.out)
    report = json.loads(many.out)
    assert report["files"] == PARALLEL_MIN_PLANS + 20
    assert report["errors"] == len(range(0, PARALLEL_MIN_PLANS + 20, 97))
