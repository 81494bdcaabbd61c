"""`.pre-commit-hooks.yaml` under the real pre-commit framework.

Slow on purpose: pre-commit clones this checkout (a snapshot of its current files),
builds a virtualenv and pip-installs gsd-plans into it from the clone, fetching the
build backend and dependencies from PyPI. The first test pays for that (about 10-60 s,
cached for the session in one PRE_COMMIT_HOME); the others reuse the environment.
If the install fails, the test is skipped only when PyPI cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, git, plan_text, snapshot_checkout

pytestmark = pytest.mark.slow

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
BROKEN = plan_text().replace("type: execute", "type: bogus")  # GSD003 on line 4
INSTALL_TIMEOUT_S = 900


class Framework:
    """pre-commit with one session-wide cache, pointed at a snapshot of this checkout."""

    def __init__(self, source: Path, rev: str, home: Path) -> None:
        self.source, self.rev, self.home = source, rev, home

    def config(self) -> str:
        return f"repos:\n- repo: {self.source}\n  rev: {self.rev}\n  hooks:\n  - id: gsd-validate\n"

    def env(self) -> dict[str, str]:
        # no PYTHONPATH: the hook must run the gsd that pre-commit installed, not this checkout
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        return {**env, "PRE_COMMIT_HOME": str(self.home), "PRE_COMMIT_COLOR": "never"}

    def run(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pre_commit", *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        if "Installing environment" in done.stdout and "An unexpected error" in done.stdout:
            _skip_if_pypi_unreachable(done.stdout + done.stderr)
        return done

    def installed_gsd(self) -> Path:
        (found,) = self.home.glob("repo*/py_env-*/bin/gsd")
        return found


def _skip_if_pypi_unreachable(output: str) -> None:
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/")
    try:
        urllib.request.urlopen(f"{index}/pip/", timeout=20).close()
    except OSError as exc:
        pytest.skip(
            f"pre-commit could not install gsd-plans and {index} is unreachable ({exc}); "
            f"this test needs PyPI. pre-commit said: {output.strip().splitlines()[-1]}"
        )


@pytest.fixture(scope="session")
def framework(tmp_path_factory: pytest.TempPathFactory) -> Framework:
    source = tmp_path_factory.mktemp("gsd-source")
    rev = snapshot_checkout(source)
    return Framework(source, rev, tmp_path_factory.mktemp("pre-commit-home"))


@pytest.fixture
def target(git_project, framework: Framework):
    """A project whose .pre-commit-config.yaml uses gsd's hook."""
    git_project.write(".pre-commit-config.yaml", framework.config())
    git(git_project.root, "add", ".pre-commit-config.yaml")
    return git_project


def test_valid_plan_passes_and_invalid_plan_fails(target, framework: Framework) -> None:
    target.write(PLAN, plan_text())
    git(target.root, "add", PLAN)
    passed = framework.run(target.root, "run")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "gsd validate (PLAN.md)" in passed.stdout and "Passed" in passed.stdout

    target.write(PLAN, BROKEN)
    git(target.root, "add", PLAN)
    failed = framework.run(target.root, "run")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "- hook id: gsd-validate" in failed.stdout
    assert f"{PLAN}:4:1: error GSD003" in failed.stdout


def test_installed_as_git_hook_it_blocks_a_bad_commit(target, framework: Framework) -> None:
    assert framework.run(target.root, "install").returncode == 0
    target.write("notes.txt", "no plan here\n")
    git(target.root, "add", "notes.txt")
    skipped = subprocess.run(
        ["git", "commit", "-m", "notes"],
        cwd=target.root,
        env=framework.env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "(no files to check)Skipped" in skipped.stdout + skipped.stderr

    target.write(PLAN, BROKEN)
    git(target.root, "add", PLAN)
    blocked = subprocess.run(
        ["git", "commit", "-m", "plan"],
        cwd=target.root,
        env=framework.env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    assert blocked.returncode == 1
    assert "GSD003" in blocked.stdout + blocked.stderr


def test_the_installed_package_scaffolds_from_its_package_data(
    target, framework: Framework, tmp_path: Path
) -> None:
    """gsd-plans as pip installed it: `gsd init` finds its template in the package."""
    assert framework.run(target.root, "install-hooks").returncode == 0
    gsd = framework.installed_gsd()
    where = tmp_path / "fresh"
    where.mkdir()
    done = subprocess.run(
        [str(gsd), "init"],
        cwd=where,
        env=framework.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("created ") == 5
    template = REPO / ".planning-template"
    for name in (".gitattributes", "PROJECT.md", "ROADMAP.md", "STATE.md", "config.json"):
        assert (where / ".planning" / name).read_bytes() == (template / name).read_bytes()
