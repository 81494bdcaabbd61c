"""gsd-plans installed from its wheel, not editable: `pip install --user` and an install
into another prefix (as a system pip install is) find the bundled agents, workflows and
`gsd init` template as package data.

The wheel is built once (pip with the setuptools in this venv, else pip's isolated build
from the configured index); the tests skip with the reason when neither can build it.
The installed gsd gets its dependencies from this venv's site-packages through
PYTHONPATH, which does not read .pth files: this checkout's editable install stays out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO, snapshot_checkout

BUILD_TIMEOUT_S = 300
VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("gsd-source")
    snapshot_checkout(source)
    out = tmp_path_factory.mktemp("wheel")
    tried = []
    for isolation in (["--no-build-isolation"], []):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                *isolation,
                "-w",
                str(out),
                str(source),
            ],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        built = list(out.glob("gsd_plans-*.whl"))
        if done.returncode == 0 and built:
            return built[0]
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        tried.append(f"pip wheel {' '.join(isolation) or '(isolated)'}: {last}")
    pytest.skip("cannot build the gsd-plans wheel here: " + "; ".join(tried))


def _deps_path() -> str:
    """This venv's site-packages: gsd's dependencies, without gsd (editable: a .pth)."""
    return sysconfig.get_paths()["purelib"]


def _base_python() -> str:
    """A python outside this venv: pip refuses --user inside a virtualenv."""
    return getattr(sys, "_base_executable", sys.executable)


class Installed:
    """A gsd installed from the wheel: its `gsd` program and the environment it needs."""

    def __init__(self, program: Path, site: Path, env: dict[str, str]) -> None:
        self.program, self.site, self.env = program, site, env

    def run(self, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.program), *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    def python(self, cwd: Path, code: str) -> str:
        done = subprocess.run(
            [_base_python(), "-c", code],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


def _install(wheel: Path, where: Path, how: str) -> Installed:
    home = where / "home"
    home.mkdir()
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PIP_USER")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(HOME=str(home), PIP_NO_INDEX="1")
    if how == "--user":
        base = where / "userbase"
        env["PYTHONUSERBASE"] = str(base)
        options = ["--user"]
    else:  # another prefix: where a system pip install puts gsd is not sys.prefix here
        base = where / "prefix"
        options = ["--prefix", str(base)]
    done = subprocess.run(
        [
            _base_python(),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-warn-script-location",
            *options,
            str(wheel),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    if done.returncode != 0:
        pytest.skip(f"pip install {how} of the wheel failed here: {done.stderr.strip()[-300:]}")
    site = base / "lib" / VERSION / "site-packages"
    paths = [_deps_path()] if how == "--user" else [str(site), _deps_path()]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return Installed(base / "bin" / "gsd", site, env)


@pytest.fixture(params=["--user", "--prefix"])
def installed(request: pytest.FixtureRequest, wheel: Path, tmp_path: Path) -> Installed:
    where = tmp_path / "install"
    where.mkdir()
    return _install(wheel, where, request.param)


def test_the_installed_gsd_is_the_wheel_not_this_checkout(installed: Installed, tmp_path):
    where = installed.python(tmp_path, "import gsd; print(gsd.__file__)")
    assert Path(where).is_relative_to(installed.site), where
    assert not Path(where).is_relative_to(REPO)


def test_agents_list_finds_the_bundled_agents(installed: Installed, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".planning").mkdir(parents=True)
    done = installed.run(project, "agents", "list", "--format", "json")
    agents = {a["name"]: a for a in json.loads(done.stdout)["agents"]}
    bundled = sorted(p.stem for p in (REPO / "agents").glob("*.md") if p.stem != "README")
    assert sorted(agents) == bundled
    assert agents["gsd-executor"]["source"] == "(bundled) gsd-executor.md"


def test_init_scaffolds_from_the_bundled_template(installed: Installed, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    done = installed.run(fresh, "init")
    assert done.stdout.count("created ") == 5
    template = REPO / ".planning-template"
    for name in (".gitattributes", "PROJECT.md", "ROADMAP.md", "STATE.md", "config.json"):
        assert (fresh / ".planning" / name).read_bytes() == (template / name).read_bytes()


def test_the_prompt_templates_are_the_bundled_workflows(installed: Installed, tmp_path) -> None:
    code = (
        "from gsd.formats.prompt import Templates\n"
        "t = Templates.load(__import__('pathlib').Path('.'))\n"
        "print(t.source('task-report'))"
    )
    found = Path(installed.python(tmp_path, code))
    assert found.is_relative_to(installed.site / "gsd" / "bundled" / "workflows")
    assert found.read_bytes() == (REPO / "workflows" / "task-report.md").read_bytes()
