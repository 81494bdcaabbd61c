"""`gsd verify`: the plans a target names, each checked against the working tree."""

from __future__ import annotations

import os
from pathlib import Path

from gsd.core.ids import is_plan_id
from gsd.core.models import Plan
from gsd.io.artifacts import PlanChecks, Tree, check_plan, plan_text
from gsd.io.project import Project
from gsd.io.sources import relative_to_root


def target_plans(project: Project, target: str) -> list[Plan]:
    """A plan file (or a folder of them), a plan id (01-02) or a phase (1, 01-setup)."""
    if os.path.exists(target) and not is_plan_id(target):
        paths = project.plans_under(relative_to_root(project.root, target))
        return [project.plan(p) for p in paths]
    if is_plan_id(target):
        return [project.find_plan(target)]
    return project.phase_plans(project.phase(target))


def verify(project: Project, target: str) -> list[PlanChecks]:
    """Every plan `target` names, checked; files outside the project only with
    `verification.outside_references: check` (`@~/` then resolves against $HOME)."""
    check = project.config.verification.outside_references == "check"
    tree = Tree(project.root, Path.home() if check else None)
    plans = target_plans(project, target)
    return [check_plan(tree, plan, plan_text(project.root, plan)) for plan in plans]
