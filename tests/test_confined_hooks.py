"""The user's git hooks run inside the agents' sandbox on every commit, merge and checkout
gsd makes (issue 20): an agent that edits what a hook runs gains nothing outside.

Each agent is a small real Python program (`runner: command`); each hook a real shell
script git runs. What counts is what is on disk and in git afterwards.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import git
from tests.hostile import LANDLOCK

pytestmark = pytest.mark.skipif(not LANDLOCK, reason="needs Landlock (Linux 5.13+, enabled)")

FULL_TOOLS = "[read_file, write_file, replace, run_shell_command]"
AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: {tools}
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""
PRELUDE = """\
import os, sys


def write(path, text="hello\\n", mode=0o644):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)


REPORT = (
    "### Task Report\\n- Status: success\\n- Files Created: none\\n- Files Modified: none\\n"
    "- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n### Downstream Context\\n"
    "- Key Interfaces Introduced: none\\n- Patterns Established: none\\n- Warnings: none\\n"
)
"""
TASK = """\
<task type="auto" specialist="worker">
<name>Task 1: do it</name>
<files>{files}</files>
<action>Do it.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""


class Scene:
    """A repository with one plan (01-01, one task) whose agents run `body`; `control` is
    in `sandbox.writable` (hooks leave their marks there), `outside` is not."""

    def __init__(self, git_project, tmp_path: Path) -> None:
        self.project = git_project
        self.root: Path = git_project.root
        self.control = tmp_path / "control"
        self.outside = tmp_path / "outside"
        self.control.mkdir()
        self.outside.mkdir()

    def setup(self, body: str, *, files: str, config: dict | None = None) -> None:
        script = self.control.parent / "agent.py"
        script.write_text(PRELUDE + textwrap.dedent(body))
        for name in ("worker", "gsd-executor"):
            self.project.write(
                f"agents/{name}.md",
                AGENT_FILE.format(
                    name=name, tools=FULL_TOOLS, python=sys.executable, script=script
                ),
            )
        self.project.write(".planning/available_agents.md", "- **worker**: test\n")
        settings = {
            "specialists": {"kill_grace_seconds": 1, "max_retries": 1},
            "sandbox": {"writable": [str(self.control)]},
            **(config or {}),
        }
        self.project.write(".planning/config.json", json.dumps(settings))
        self.project.plan("01-01", tasks=TASK.format(files=files), files_modified=f"[{files}]")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "plans")

    def hook(self, name: str, body: str, folder: str = ".git/hooks") -> Path:
        path = self.root / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
        return path

    def escaped(self) -> list[str]:
        return sorted(p.name for p in self.outside.iterdir())

    def marks(self) -> list[str]:
        return sorted(p.name for p in self.control.iterdir() if p.name.startswith("ran-"))

    def task_commits(self) -> list[str]:
        out = git(self.root, "log", "--all", "--format=%(trailers:key=Gsd-Task,valueonly)")
        return [line.strip() for line in out.splitlines() if line.strip()]


@pytest.fixture
def scene(git_project, tmp_path: Path) -> Scene:
    return Scene(git_project, tmp_path)


def test_a_hook_running_a_script_the_agent_edited_cannot_write_outside(scene, gsd) -> None:
    """pre-commit runs `scripts/lint.sh` (pre-commit, husky and lefthook work so); the
    agent rewrites the script to write outside the repository."""
    scene.project.write("scripts/lint.sh", "#!/bin/sh\nexit 0\n")
    scene.setup(
        f"""\
        write("src/x.txt")
        write("scripts/lint.sh", "#!/bin/sh\\necho pwned > {scene.outside}/pwned\\n")
        print(REPORT)
        """,
        files="src/x.txt, scripts/lint.sh",
    )
    scene.hook("pre-commit", f"echo ran >> {scene.control}/ran-pre-commit\nsh scripts/lint.sh\n")
    result = gsd("execute-phase", "1")
    assert scene.marks() == ["ran-pre-commit"]  # the hook ran on gsd's commit
    assert scene.escaped() == []  # and the agent's script wrote nothing outside
    assert result.code == 1  # the script failed: so did the commit, as for the user
    assert scene.task_commits() == []
    assert "pre-commit" in result.err or "commit failed" in result.err


def test_a_hook_running_the_tests_cannot_run_an_agents_test_outside(scene, gsd) -> None:
    """With scope: fail the agent writes only its in-scope test; the user's pre-commit
    hook runs `python -m unittest`, which imports it."""
    scene.project.write("tests/__init__.py", "")
    scene.project.write("tests/test_ok.py", "def test_ok():\n    pass\n")
    scene.setup(
        f"""\
        write("tests/test_x.py", "open({str(scene.outside / "pwned")!r}, 'w').write('x')\\n")
        print(REPORT)
        """,
        files="tests/test_x.py",
        config={"specialists": {"scope": "fail", "kill_grace_seconds": 1, "max_retries": 1}},
    )
    scene.hook(
        "pre-commit",
        f"echo ran >> {scene.control}/ran-pre-commit\n"
        f"exec {sys.executable} -m unittest discover -s tests -t . -q\n",
    )
    result = gsd("execute-phase", "1")
    assert scene.marks() == ["ran-pre-commit"]
    assert scene.escaped() == []
    assert result.code == 1 and scene.task_commits() == []


def test_a_hook_that_fails_on_its_own_still_stops_the_commit(scene, gsd) -> None:
    scene.setup('write("src/x.txt", "TODO\\n")\nprint(REPORT)\n', files="src/x.txt")
    scene.hook(
        "pre-commit",
        "grep -qs TODO src/x.txt || exit 0\necho 'lint: TODO left in src/x.txt' >&2\nexit 1\n",
    )
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    assert scene.task_commits() == []
    assert not (scene.root / "src/x.txt").exists()
    assert "task commit failed: git commit failed in" in result.err
    assert "lint: TODO left in src/x.txt" in result.err


HUSKY_HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-merge-commit",
    "post-merge",
    "post-checkout",
    "reference-transaction",
)


def test_husky_hooks_the_agent_planted_run_confined_on_every_commit_and_merge(scene, gsd) -> None:
    """core.hooksPath=.husky (husky's layout, relative to each checkout): the agent writes
    every hook there, each leaving a mark and then writing outside; gsd's task commit,
    the merge into the user's branch and the docs commits all run them, confined."""
    hooks = "".join(
        f"write('.husky/{name}', '#!/bin/sh\\necho $PWD >> {scene.control}/ran-{name}\\n"
        f"echo pwned > {scene.outside}/{name}\\nexit 0\\n', 0o755)\n"
        for name in HUSKY_HOOKS
    )
    scene.setup(
        hooks + 'write("src/x.txt")\nprint(REPORT)\n',
        files="src/x.txt, " + ", ".join(f".husky/{n}" for n in HUSKY_HOOKS),
    )
    git(scene.root, "config", "core.hooksPath", ".husky")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert scene.task_commits() == ["01-01-1"]
    ran = scene.marks()
    for name in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"):
        assert f"ran-{name}" in ran, ran
    # in the plan's worktree (the task commit), then in the user's checkout (the merge
    # commit, the docs commit), whose tree now holds the agent's hooks
    places = (scene.control / "ran-pre-commit").read_text().splitlines()
    assert str(scene.root) in places and len(set(places)) == 2, places
    assert scene.escaped() == []
    # the merge landed: the hooks are in the user's checkout now, and still nothing escaped
    assert (scene.root / ".husky/post-merge").is_file()
    assert "Merge branch 'gsd/01-01'" in git(scene.root, "log", "--format=%s", "-3")


CHANGE_ID = (
    'git interpret-trailers --trailer "Change-Id: I0123" "$1" > "$TMPDIR/msg" &&\n'
    'cat "$TMPDIR/msg" > "$1"\n'
)
FORGED = 'printf "Gsd-Task: 01-02-1\\n" >> "$1"\n'


@pytest.mark.parametrize("agent_script", [None, FORGED], ids=["own-hook", "agent-forges"])
def test_a_message_hook_may_add_a_trailer_but_not_forge_gsds(
    scene, gsd, agent_script: str | None
) -> None:
    """commit-msg runs `scripts/msg.sh` (a Gerrit-style Change-Id): it may rewrite the
    message file git gives it; rewritten by the agent to claim another plan's task done,
    the commit is refused."""
    scene.project.write("scripts/msg.sh", CHANGE_ID)
    edit = f"write('scripts/msg.sh', {agent_script!r})\n" if agent_script else ""
    scene.setup(edit + 'write("src/x.txt")\nprint(REPORT)\n', files="src/x.txt, scripts/msg.sh")
    scene.hook("commit-msg", 'sh scripts/msg.sh "$1"\n')
    result = gsd("execute-phase", "1")
    if agent_script is None:
        assert result.code == 0, result.err
        assert scene.task_commits() == ["01-01-1"]
        message = git(scene.root, "log", "--all", "--format=%B", "--grep=Gsd-Task: 01-01-1")
        assert "Change-Id: I0123" in message
    else:
        assert result.code == 1
        assert "01-02-1" not in scene.task_commits() and scene.task_commits() == []
        assert "changed the Gsd- trailers" in result.err


def test_a_hook_gets_an_agents_environment_not_your_credentials(
    scene, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook runs code an agent may have written: it gets no more of your push
    credentials than the agent did (gsd.core.safety.credentials), unless config hands one over."""
    monkeypatch.setenv("GH_TOKEN", "CREDENTIAL-GH")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/CREDENTIAL-SOCK")
    monkeypatch.setenv("GITLAB_PRIVATE_TOKEN", "CREDENTIAL-GL")
    scene.setup(
        """\
        write("src/x.txt")
        print(REPORT)
        """,
        files="src/x.txt",
        config={
            "sandbox": {"writable": [str(scene.control)], "pass_env": ["GITLAB_PRIVATE_TOKEN"]}
        },
    )
    scene.hook(
        "pre-commit",
        f"env > {scene.control}/ran-pre-commit\n"
        f"git config credential.helper > {scene.control}/helper || true\n",
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    seen = (scene.control / "ran-pre-commit").read_text()
    assert "CREDENTIAL-GH" not in seen and "CREDENTIAL-SOCK" not in seen
    assert "GITLAB_PRIVATE_TOKEN=CREDENTIAL-GL" in seen  # handed over by config
    assert "GIT_TERMINAL_PROMPT=0" in seen
    assert (scene.control / "helper").read_text().strip() == ""  # no credential helper
    assert scene.task_commits() == ["01-01-1"]
