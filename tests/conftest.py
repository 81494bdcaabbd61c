"""Shared fixtures: a project on disk, real git with a pinned identity, the CLI."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gsd.cli.entry import main

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def slack(seconds: float) -> float:
    """A time limit that must pass before a test goes on (an agent left to hang until its
    timeout), widened by how busy the machine is: as given on a quiet machine, up to six
    times that when the load per core says other work shares it (other test suites)."""
    busy = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * min(max(busy, 1.0), 6.0)


PLAN_TEMPLATE = """\
---
phase: {phase}
plan: {plan}
type: execute
wave: {wave}
depends_on: {depends_on}
files_modified: {files_modified}
autonomous: {autonomous}
must_haves:
  truths:
    - "it works"
  artifacts:
    - path: src/x.py
      provides: "x"
  key_links: []
---

<objective>Do the thing.</objective>

<tasks>
{tasks}
</tasks>
"""

AUTO_TASK = """\
<task type="auto"{attrs}>
  <name>{name}</name>
  <files>{files}</files>
  <action>Write the code.</action>
  <verify><automated>true</automated></verify>
  <done>It is done.</done>
</task>"""


def auto_task(name: str = "Task 1: do it", files: str = "src/x.py", attrs: str = "") -> str:
    return AUTO_TASK.format(name=name, files=files, attrs=attrs)


def plan_text(
    *,
    phase: str = "01-alpha",
    plan: str = "01",
    wave: int | str = 1,
    depends_on: str = "[]",
    files_modified: str = "[src/x.py]",
    autonomous: str = "true",
    tasks: str | None = None,
) -> str:
    return PLAN_TEMPLATE.format(
        phase=phase,
        plan=plan,
        wave=wave,
        depends_on=depends_on,
        files_modified=files_modified,
        autonomous=autonomous,
        tasks=auto_task() if tasks is None else tasks,
    )


@dataclass
class Project:
    """A temporary project with a `.planning/` folder."""

    root: Path

    @property
    def planning(self) -> Path:
        return self.root / ".planning"

    def write(self, rel: str, content: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content) if content.startswith("\n") else content)
        return path

    def plan(
        self,
        plan_id: str,
        text: str | bytes | None = None,
        phase_dir: str = "01-alpha",
        **fields: object,
    ) -> Path:
        phase, number = plan_id.rsplit("-", 1)
        if text is None:
            fields.setdefault("phase", phase_dir)
            fields.setdefault("plan", number)
            text = plan_text(**fields)  # type: ignore[arg-type]
        return self.write(f".planning/phases/{phase_dir}/{plan_id}-PLAN.md", text)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    root = tmp_path / "repo"
    (root / ".planning" / "phases").mkdir(parents=True)
    monkeypatch.chdir(root)
    return Project(root)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's ~/.gitconfig, ~/.claude or environment knobs."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.invalid")
    for name in (
        "DEBUG",
        "SPECIALIST_TIMEOUT",
        "SKIP_VERIFICATION",
        "GSD_DEFAULT_MODEL",
        "GSD_DISABLED_AGENTS",
        "GIT_DIR",
        "GIT_INDEX_FILE",
        "GIT_WORK_TREE",
        "XDG_STATE_HOME",
        "GSD_WORKTREE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)


def plan_worktree(root: Path, plan_id: str) -> Path:
    """Where gsd keeps a plan's worktree by default: under the (test's) HOME's state folder,
    in the folder named by the repository's key, never in the repository."""
    from gsd.core import layout

    base = Path(os.environ["HOME"]) / ".local" / "state" / "gsd" / "worktrees"
    common = Path(os.path.realpath(root / ".git"))
    return base / layout.repo_key(common) / plan_id


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def git_project(project: Project) -> Project:
    """The project, as a git repository with one commit."""
    git(project.root, "init", "-q", "-b", "main")
    git(project.root, "config", "commit.gpgsign", "false")
    project.write("README.md", "demo\n")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "initial")
    return project


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def gsd(capsys: pytest.CaptureFixture[str]) -> Iterator[object]:
    """Run the CLI in-process, as `gsd ARGS` in the current directory."""

    def run(*args: str) -> Run:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    yield run


FAKE_RUNNER = """#!{python}
import sys
if sys.argv[1:] == ["--version"]:
    print("{version}")
    sys.exit(0)
sys.exit(3)  # a stand-in for --version and PATH lookups only: it runs no agent
"""


def fake_runner_programs(
    folder: Path, names: tuple[str, ...] = ("claude", "gemini", "codex"), version: str = "1.2.3"
) -> Path:
    """Tiny real programs named like the runner CLIs in `folder`: each prints `version`
    for `--version` (as the real ones do), and fails for anything else."""
    import stat
    import sys

    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        program = folder / name
        program.write_text(FAKE_RUNNER.format(python=sys.executable, version=version))
        program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.fixture
def runners_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """claude, gemini and codex stand-ins first on PATH: a dry run finds its programs."""
    import os

    folder = fake_runner_programs(tmp_path / "runner-bin")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    return folder


def corpus_plans() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.rglob("*-PLAN.md"))


requires_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"the shared corpus is not beside this clone ({CORPUS}); it ships with the "
    "development workspace, not with gsd",
)


def snapshot_checkout(dest: Path) -> str:
    """This checkout's files as they are now (tracked and new, ignored ones left out),
    committed in a fresh repository at `dest`; returns the commit. Tests that build or
    install gsd-plans use it, so they see uncommitted work too."""
    import shutil

    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file() or source.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel, follow_symlinks=False)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    identity = ["-c", "user.name=gsd tests", "-c", "user.email=tests@gsd.invalid"]
    git(dest, *identity, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "x")
    return git(dest, "rev-parse", "HEAD").strip()
