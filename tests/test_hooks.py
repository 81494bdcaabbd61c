"""`gsd hooks install|uninstall`: real `git commit`s through the installed pre-commit hook."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.commands.hooks import MARKER, PREVIOUS, render_hook
from tests.conftest import REPO, git, plan_text

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
BROKEN = plan_text().replace("type: execute", "type: bogus")  # GSD003 on line 4
Completed = subprocess.CompletedProcess[str]
USER_HOOK = b'#!/bin/sh\necho "user hook ran" >> "$USER_HOOK_LOG"\nexit "${USER_HOOK_EXIT:-0}"'


def write_program(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    """The file the stand-in gsd appends a line to each time a hook starts it."""
    return tmp_path / "gsd-calls.log"


@pytest.fixture
def program(tmp_path: Path, calls: Path) -> Path:
    """A gsd program that records each start, then runs this checkout's gsd."""
    return write_program(
        tmp_path / "bin" / "gsd",
        "#!/bin/sh\n"
        f"echo started >> {shlex.quote(str(calls))}\n"
        f'PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} -m gsd "$@"\n',
    )


@pytest.fixture
def repo(git_project, gsd, program: Path, monkeypatch: pytest.MonkeyPatch):
    """The git project with gsd's hook installed, and a log the user's hook writes to."""
    monkeypatch.setenv("USER_HOOK_LOG", str(git_project.root.parent / "user-hook.log"))
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0, result.err
    return git_project


def commit(root: Path, *args: str, env: dict[str, str] | None = None) -> Completed:
    return subprocess.run(
        ["git", "commit", "-m", "change", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def test_a_valid_plan_commits(repo, calls: Path) -> None:
    repo.write(PLAN, plan_text())
    git(repo.root, "add", PLAN)
    done = commit(repo.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls.read_text() == "started\n"
    assert git(repo.root, "show", "--name-only", "--format=", "HEAD").split() == [PLAN]


def test_the_staged_plan_is_checked_not_the_fixed_working_copy(repo) -> None:
    before = head(repo.root)
    repo.write(PLAN, BROKEN)
    git(repo.root, "add", PLAN)
    repo.write(PLAN, plan_text())  # fixed on disk, not staged
    done = commit(repo.root)
    assert done.returncode == 1
    assert f"{PLAN}:4:1: error GSD003" in done.stderr  # git sends hook output to stderr
    assert "gsd pre-commit hook: commit blocked" in done.stderr
    assert head(repo.root) == before


def test_commit_all_checks_the_index_git_commit_builds(repo) -> None:
    """`git commit -a` stages into a temporary index (GIT_INDEX_FILE); the hook reads that."""
    repo.write(PLAN, plan_text())
    git(repo.root, "add", PLAN)
    assert commit(repo.root).returncode == 0
    repo.write(PLAN, BROKEN)  # tracked, modified, not staged
    done = commit(repo.root, "-a")
    assert done.returncode == 1
    assert "GSD003" in done.stderr


def test_a_commit_without_plan_files_never_starts_gsd(repo, calls: Path) -> None:
    repo.write(PLAN, BROKEN)  # a broken plan in the tree, but not in this commit
    repo.write("src/app.py", "print('hi')\n")
    repo.write("docs/NOT-A-PLAN.md.txt", "x\n")
    repo.write("examples/.planning/phases/01-x/01-01-PLAN.md", BROKEN)  # not the top level
    git(repo.root, "add", "src", "docs", "examples")
    done = commit(repo.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not calls.exists()


def test_deleting_a_plan_does_not_start_gsd(repo, calls: Path) -> None:
    repo.write(PLAN, plan_text())
    git(repo.root, "add", PLAN)
    assert commit(repo.root).returncode == 0
    git(repo.root, "rm", "-q", PLAN)
    assert commit(repo.root).returncode == 0
    assert calls.read_text() == "started\n"  # the first commit only


def test_only_the_changed_plans_are_reported(repo) -> None:
    """A plan already committed (here with --no-verify) does not block unrelated plans."""
    other = ".planning/phases/01-alpha/01-02-PLAN.md"
    repo.write(PLAN, BROKEN)
    git(repo.root, "add", PLAN)
    assert commit(repo.root, "--no-verify").returncode == 0
    repo.write(other, plan_text(plan="02", files_modified="[src/y.py]"))
    git(repo.root, "add", other)
    done = commit(repo.root)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(".planning/phases/01 alpha/01-01-PLAN.md", id="space"),
        pytest.param('.planning/phases/01-alpha/01-01-"quoted"-PLAN.md', id="quote"),
        pytest.param(".planning/phases/01-alpha/01-01-tab\there-PLAN.md", id="tab"),
        pytest.param(".planning/phases/01-alpha/01-01-émoji-PLAN.md", id="non-ascii"),
    ],
)
def test_odd_file_names_are_still_checked(repo, name: str) -> None:
    repo.write(name, BROKEN)
    git(repo.root, "add", "--", name)
    done = commit(repo.root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "GSD003" in done.stderr


def test_a_users_hook_keeps_running_and_its_failure_blocks(
    git_project, gsd, program: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = git_project.root / ".git" / "hooks"
    write_program(hooks / "pre-commit", USER_HOOK.decode())
    log = git_project.root.parent / "user-hook.log"
    monkeypatch.setenv("USER_HOOK_LOG", str(log))
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0
    assert f"moved your hook to .git/hooks/{PREVIOUS}" in result.out
    assert (hooks / PREVIOUS).read_bytes() == USER_HOOK

    git_project.write(PLAN, plan_text())
    git(git_project.root, "add", PLAN)
    monkeypatch.setenv("USER_HOOK_EXIT", "3")
    done = commit(git_project.root)
    assert done.returncode == 1  # git reports any hook failure as its own 1
    assert log.read_text() == "user hook ran\n"
    assert not calls.exists()  # the user's hook failed first; gsd had no need to run

    monkeypatch.setenv("USER_HOOK_EXIT", "0")
    done = commit(git_project.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text() == "user hook ran\n" * 2
    assert calls.read_text() == "started\n"


def test_uninstall_restores_the_users_hook_byte_for_byte(git_project, gsd, program) -> None:
    hook = git_project.root / ".git" / "hooks" / "pre-commit"
    original = b"#!/bin/sh\n# \xff\xfe not UTF-8, no final newline\nexit 0"
    hook.write_bytes(original)
    hook.chmod(0o741)
    before = os.stat(hook)
    assert gsd("hooks", "install", "--gsd", str(program)).code == 0
    assert MARKER in hook.read_text()
    result = gsd("hooks", "uninstall")
    assert result.code == 0
    assert result.out == "removed gsd's hook and restored your .git/hooks/pre-commit\n"
    assert hook.read_bytes() == original
    after = os.stat(hook)
    assert stat.S_IMODE(after.st_mode) == 0o741
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in hook.parent.iterdir() if "pre-commit" in p.name) == [
        "pre-commit",
        "pre-commit.sample",
    ]


def test_uninstall_without_a_previous_hook_removes_gsds(repo, gsd) -> None:
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    assert hook.exists()
    result = gsd("hooks", "uninstall")
    assert (result.code, result.out) == (0, "removed .git/hooks/pre-commit\n")
    assert not hook.exists()


def test_uninstall_when_not_installed_says_so_and_exits_0(git_project, gsd) -> None:
    result = gsd("hooks", "uninstall")
    assert (result.code, result.out) == (0, "no gsd pre-commit hook in .git/hooks: nothing to do\n")
    hook = git_project.root / ".git" / "hooks" / "pre-commit"
    hook.write_bytes(USER_HOOK)
    result = gsd("hooks", "uninstall")
    assert result.code == 0
    assert result.out == ".git/hooks/pre-commit is not gsd's hook: left as it is\n"
    assert hook.read_bytes() == USER_HOOK


def test_install_twice_changes_nothing(git_project, gsd, program: Path) -> None:
    hooks = git_project.root / ".git" / "hooks"
    write_program(hooks / "pre-commit", USER_HOOK.decode())
    assert gsd("hooks", "install", "--gsd", str(program)).code == 0
    first = (hooks / "pre-commit").read_bytes(), os.stat(hooks / "pre-commit").st_mtime_ns
    again = gsd("hooks", "install", "--gsd", str(program))
    assert again.code == 0
    assert again.out == "gsd's pre-commit hook is already installed: .git/hooks/pre-commit\n"
    assert ((hooks / "pre-commit").read_bytes(), os.stat(hooks / "pre-commit").st_mtime_ns) == first
    assert (hooks / PREVIOUS).read_bytes() == USER_HOOK  # gsd's hook never moved aside


def test_install_again_with_another_program_updates_the_hook(repo, gsd, tmp_path: Path) -> None:
    other = write_program(tmp_path / "other" / "gsd", "#!/bin/sh\nexit 0\n")
    result = gsd("hooks", "install", "--gsd", str(other))
    assert result.out.startswith("updated .git/hooks/pre-commit: runs ")
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    assert hook.read_text() == render_hook(str(other))
    assert not (hook.parent / PREVIOUS).exists()


def test_a_kept_hook_is_never_overwritten(git_project, gsd, program: Path) -> None:
    hooks = git_project.root / ".git" / "hooks"
    (hooks / "pre-commit").write_bytes(b"#!/bin/sh\nexit 0\n")
    (hooks / PREVIOUS).write_bytes(b"older\n")
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert result.err.startswith("gsd: error: .git/hooks/pre-commit is not gsd's hook, and ")
    assert (hooks / "pre-commit").read_bytes() == b"#!/bin/sh\nexit 0\n"
    assert (hooks / PREVIOUS).read_bytes() == b"older\n"


def test_a_relative_core_hooks_path_is_respected(
    git_project, gsd, program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(git_project.root, "config", "core.hooksPath", "team-hooks")
    (git_project.root / "sub").mkdir()
    monkeypatch.chdir(git_project.root / "sub")  # relative to the work tree, not the cwd
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0, result.err
    assert result.out.startswith(f"installed {git_project.root / 'team-hooks'}/pre-commit: ")
    assert (git_project.root / "team-hooks" / "pre-commit").is_file()
    assert not (git_project.root / ".git" / "hooks" / "pre-commit").exists()
    git_project.write(PLAN, BROKEN)
    git(git_project.root, "add", PLAN)
    done = commit(git_project.root)
    assert done.returncode == 1
    assert "GSD003" in done.stderr


def test_an_absolute_core_hooks_path_is_respected(
    git_project, gsd, program: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared hooks"
    git(git_project.root, "config", "core.hooksPath", str(shared))
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.out.startswith(f"installed {shared}/pre-commit: ")
    assert gsd("hooks", "uninstall").out == f"removed {shared}/pre-commit\n"


def test_a_linked_worktree_uses_the_shared_hooks(git_project, gsd, program, monkeypatch) -> None:
    linked = git_project.root.parent / "linked"
    git(git_project.root, "worktree", "add", "-q", str(linked))
    monkeypatch.chdir(linked)
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0, result.err
    assert (git_project.root / ".git" / "hooks" / "pre-commit").is_file()
    (linked / PLAN).parent.mkdir(parents=True)
    (linked / PLAN).write_text(BROKEN)
    git(linked, "add", PLAN)
    assert commit(linked).returncode == 1


def test_the_hook_names_the_gsd_that_installed_it(git_project, tmp_path: Path) -> None:
    """Installed by a `gsd` console script, the hook runs that script by its absolute path."""
    script = write_program(
        tmp_path / "venv bin" / "gsd",
        f"#!{sys.executable}\nimport sys\nfrom gsd.cli.entry import main\nsys.exit(main())\n",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(script), "hooks", "install"],
        cwd=git_project.root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    hook = (git_project.root / ".git" / "hooks" / "pre-commit").read_text()
    assert f"GSD={shlex.quote(str(script))}\n" in hook
    git_project.write(PLAN, BROKEN)
    git(git_project.root, "add", PLAN)
    blocked = commit(git_project.root, env=env)  # no gsd on PATH: the recorded one runs
    assert blocked.returncode == 1
    assert "GSD003" in blocked.stderr


def test_a_missing_gsd_blocks_with_a_clear_message(repo, program: Path) -> None:
    program.unlink()
    repo.write(PLAN, plan_text())
    git(repo.root, "add", PLAN)
    done = commit(repo.root, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1
    assert f"gsd pre-commit hook: cannot run gsd ({program} is not there and no gsd" in done.stderr


def test_without_any_gsd_install_warns_and_the_hook_uses_path(
    git_project, gsd, program: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["/somewhere/python", "-m", "gsd"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    result = gsd("hooks", "install")
    assert result.code == 0
    assert "gsd: warning: no gsd program found; the hook will look for `gsd` on PATH" in result.err
    git_project.write(PLAN, plan_text())
    git(git_project.root, "add", PLAN)
    path = f"{program.parent}:/usr/bin:/bin"
    assert commit(git_project.root, env={**os.environ, "PATH": path}).returncode == 0
    assert calls.read_text() == "started\n"


def test_outside_git_is_one_line_exit_2(project, gsd) -> None:
    result = gsd("hooks", "install")
    assert result.code == 2
    assert result.err.startswith("gsd: error: gsd hooks needs a git work tree: ")
    assert result.err.count("\n") == 1
    assert gsd("hooks", "uninstall").code == 2


def test_a_bad_gsd_option_is_one_line(git_project, gsd, tmp_path: Path) -> None:
    result = gsd("hooks", "install", "--gsd", str(tmp_path / "nope"))
    assert (result.code, result.err) == (
        2,
        f"gsd: error: --gsd {tmp_path / 'nope'}: not an executable file\n",
    )


def test_the_hook_is_plain_posix_sh_and_evaluates_nothing() -> None:
    script = render_hook("/opt/it's $(here)/gsd")
    assert script.startswith("#!/bin/sh\n" + MARKER + "\n")
    assert "GSD='/opt/it'\"'\"'s $(here)/gsd'\n" in script
    assert "eval" not in script
    checked = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr


def test_install_from_a_subfolder_project_warns(git_project, gsd, program, monkeypatch) -> None:
    sub = git_project.root / "services" / "api"
    (sub / ".planning").mkdir(parents=True)
    monkeypatch.chdir(sub)
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0
    assert result.err == (
        f"gsd: warning: the hook validates plans under {git_project.root / '.planning'} only, "
        f"not {sub / '.planning'}\n"
    )
