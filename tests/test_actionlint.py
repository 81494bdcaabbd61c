"""Every GitHub Actions workflow the project ships passes actionlint, the workflow checker.

actionlint (tests/actionlint/install.sh, `make actionlint`) knows which action majors run
on today's runners: an action whose node20 runtime GitHub removed is a finding, so a
workflow a user copies from examples/ runs. Skipped, saying why, when it cannot install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

INSTALL = Path(__file__).parent / "actionlint" / "install.sh"
# shellcheck and pyflakes are optional plug-ins of actionlint: off, so a finding does not
# depend on what else a machine has installed
FLAGS = ["-no-color", "-oneline", "-shellcheck=", "-pyflakes="]


def is_workflow(path: Path) -> bool:
    """A YAML file with the two keys every GitHub Actions workflow has: `on` and `jobs`."""
    try:
        loaded: Any = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError):
        return False
    # YAML 1.1 reads a bare `on` as true
    return isinstance(loaded, dict) and "jobs" in loaded and ("on" in loaded or True in loaded)


def shipped_workflows() -> list[Path]:
    """The workflow files git tracks (examples and .github/workflows alike)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.yml", "*.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [REPO / name for name in listed.split("\0") if name and is_workflow(REPO / name)]


WORKFLOWS = shipped_workflows()


@pytest.fixture(scope="module")
def actionlint() -> Path:
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["sh", str(INSTALL)], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install actionlint: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def lint(binary: Path, workflow: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *FLAGS, str(workflow)],
        capture_output=True,
        text=True,
        cwd=workflow.parent,
        timeout=120,
    )


def test_the_shipped_workflows_are_found() -> None:
    assert REPO / "examples" / "github" / "gsd.yml" in WORKFLOWS


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: str(p.relative_to(REPO)))
def test_workflow_has_no_actionlint_finding(actionlint: Path, workflow: Path) -> None:
    done = lint(actionlint, workflow)
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr


def test_an_action_on_the_removed_node20_runtime_is_a_finding(
    actionlint: Path, tmp_path: Path
) -> None:
    # the control: the checker really reports the majors examples/github/gsd.yml once used
    old = tmp_path / "old.yml"
    old.write_text(
        "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n"
        "      - uses: actions/github-script@v7\n        with:\n          script: return 1\n"
    )
    done = lint(actionlint, old)
    assert done.returncode == 1
    findings = done.stdout.splitlines()
    assert len(findings) == 3
    assert all('runtime "node20" is deprecated' in line for line in findings)
