"""Salvage (issue 24): a rolled-back attempt's changes kept under refs/gsd/salvage/, then
listed, shown, applied to the user's checkout and pruned; with real git and command agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gsd.formats import errorlog
from tests.conftest import git, plan_text, slack
from tests.test_execute import AGENT_FILE

AGENT = """\
import os, sys, time
attempt = os.environ.get("GSD_SPECIALIST", "")
os.makedirs("src", exist_ok=True)
open("src/a.py", "w").write("work worth keeping \\x1b[31m\\n")
with open("README.md", "a") as f:
    f.write("agent line\\n")
open("deploy.key", "w").write("secret\\n")
if {mode!r} == "hang":
    open({started!r}, "w").close()
    time.sleep(60)
sys.exit(3)
"""

TASK = (
    '<task type="auto" specialist="worker">\n<name>Task 1</name>\n'
    "<files>src/a.py, README.md</files>\n<action>Write it.</action>\n"
    "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
)


def salvage_refs(root: Path) -> dict[str, str]:
    out = git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/gsd/salvage/")
    return dict(line.split() for line in out.splitlines())


def files_of(root: Path, ref: str) -> list[str]:
    return git(root, "diff-tree", "-r", "--name-only", f"{ref}^", ref).split()


def failing_phase(project, tmp_path: Path, mode: str) -> None:
    script = tmp_path / "agent.py"
    (tmp_path / "control").mkdir()
    script.write_text(AGENT.format(mode=mode, started=str(tmp_path / "control" / "started")))
    for name in ("worker", "gsd-executor"):
        project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=script)
        )
    project.write(".planning/available_agents.md", "- **worker**: test\n")
    config = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "sandbox": {"writable": [str(tmp_path / "control")]},
    }
    project.write(".planning/config.json", json.dumps(config))
    project.plan("01-01", text=plan_text(tasks=TASK, files_modified="[src/a.py, README.md]"))
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "plans")


@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_a_failed_attempt_is_salvaged_and_the_checkout_is_as_before(
    git_project, gsd, tmp_path, mode
) -> None:
    root = git_project.root
    failing_phase(git_project, tmp_path, mode)
    head = git(root, "rev-parse", "HEAD")
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 1, result.err
    refs = salvage_refs(root)
    assert sorted(refs) == ["refs/gsd/salvage/01-01/1/1", "refs/gsd/salvage/01-01/1/2"]
    for ref in refs:
        # exactly the attempt's files, the key left out; its parent the checkpoint
        assert files_of(root, ref) == ["README.md", "src/a.py"]
        assert git(root, "rev-parse", f"{ref}^") == head
        assert git(root, "show", f"{ref}:README.md") == "demo\nagent line\n"
        assert git(root, "branch", "--contains", ref) == ""
    # the user's checkout, index and branch hold none of it (gsd's own docs commits aside)
    assert git(root, "diff", "--name-only", head.strip(), "HEAD", "--", "README.md", "src") == ""
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert (root / "README.md").read_text() == "demo\n"
    records, _ = errorlog.read_all(root / ".planning")
    assert [getattr(r, "salvage", None) for r in records] == sorted(refs)
    expected = "timeout" if mode == "hang" else "nonzero-exit"
    assert "its changes are kept under refs/gsd/salvage/01-01/1/1" in result.err
    timeline = json.loads(gsd("report", "--format", "json").out)["timeline"]
    kept = [r["outcome"] for r in timeline if r["event"] == "rollback"]
    assert kept == [f"kept under {ref}" for ref in sorted(refs)]
    assert "kept under refs/gsd/salvage/01-01/1/2" in gsd("report", "--format", "markdown").out
    listed = json.loads(gsd("salvage", "list", "--format", "json").out)["salvage"]
    assert [(s["plan"], s["task"], s["attempt"]) for s in listed] == [
        ("01-01", "1", "1"),
        ("01-01", "1", "2"),
    ]
    assert listed[0]["error_type"].startswith(expected[:7])
    assert listed[0]["files"] == "README.md, src/a.py"


def test_show_apply_refuse_and_prune(git_project, gsd, tmp_path) -> None:
    root = git_project.root
    failing_phase(git_project, tmp_path, "exit")
    assert gsd("execute-phase", "1").code == 1
    shown = gsd("salvage", "show", "01-01", "1", "1")
    assert shown.code == 0
    assert "+agent line" in shown.out and "\x1b" not in shown.out
    unknown = gsd("salvage", "show", "01-01/1/9")
    assert unknown.code != 0 and "did you mean '01-01/1/" in unknown.err
    assert len(unknown.err.strip().splitlines()) == 1

    (root / "README.md").write_text("demo\nmine\n")  # the user's uncommitted change
    refused = gsd("salvage", "apply", "refs/gsd/salvage/01-01/1/1")
    assert refused.code != 0 and "README.md" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert not (root / "src" / "a.py").exists()
    assert (root / "README.md").read_text() == "demo\nmine\n"

    git(root, "checkout", "--", "README.md")
    applied = gsd("salvage", "apply", "01-01", "1", "1")
    assert applied.code == 0, applied.err
    assert (root / "README.md").read_text() == "demo\nagent line\n"
    assert (root / "src" / "a.py").read_text() == "work worth keeping \x1b[31m\n"
    assert not (root / "deploy.key").exists()
    assert git(root, "diff", "--cached", "--name-only") == ""  # applied, not staged

    pruned = gsd("checkpoints", "prune")
    assert pruned.code == 0
    assert salvage_refs(root) == {}
    assert "2 salvage refs deleted" in pruned.err


def test_gsd_errors_names_the_salvage_beside_the_failure(git_project, gsd, tmp_path) -> None:
    failing_phase(git_project, tmp_path, "exit")
    assert gsd("execute-phase", "1").code == 1
    shown = gsd("errors").out
    assert "salvage" in shown and "01-01/1/1" in shown
    body = json.loads(gsd("errors", "--format", "json").out)["errors"]
    assert [e["salvage"] for e in body] == [
        "refs/gsd/salvage/01-01/1/1",
        "refs/gsd/salvage/01-01/1/2",
    ]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0", "0"),
        ('"7"', '"7"'),
        ("true", "true"),
    ],
)
def test_keep_days_is_validated_in_one_line(value: str, said: str) -> None:
    from gsd.formats.settings import InvalidSettings, parse

    with pytest.raises(InvalidSettings) as caught:
        parse('{\n  "salvage": {"keep_days": ' + value + "}\n}", "c.json")
    assert str(caught.value).splitlines() == [
        f"c.json:2: `salvage.keep_days` must be a number of days > 0, or null (kept until "
        f"pruned), not {said}"
    ]
    assert parse('{"salvage": {"keep_days": 1.5}}').salvage.keep_days == 1.5


def test_keep_days_prunes_older_salvage_at_the_start_of_a_run(
    git_project, gsd, tmp_path, monkeypatch
) -> None:
    root = git_project.root
    failing_phase(git_project, tmp_path, "exit")
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    head = git(root, "rev-parse", "HEAD").strip()
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z")
    old = git(root, "commit-tree", tree, "-p", head, "-m", "old\n\nGsd-Error-Type: timeout")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    git(root, "update-ref", "refs/gsd/salvage/01-09/1/1", old.strip())
    config = json.loads((root / ".planning" / "config.json").read_text())
    config["salvage"] = {"keep_days": 30}
    git_project.write(".planning/config.json", json.dumps(config))
    git(root, "commit", "-qam", "keep 30 days")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert "deleted 1 salvage ref older than 30 days" in result.err
    assert sorted(salvage_refs(root)) == [
        "refs/gsd/salvage/01-01/1/1",
        "refs/gsd/salvage/01-01/1/2",
    ]


def test_an_interrupted_attempt_is_salvaged_too(git_project, tmp_path) -> None:
    """Decided: a Ctrl-C's attempt is worth keeping (it is rolled back, not recorded
    against the specialist, and its work is under its salvage ref)."""
    root = git_project.root
    failing_phase(git_project, tmp_path, "hang")
    process = subprocess.Popen(
        [sys.executable, "-m", "gsd", "execute-phase", "1"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "control" / "started").exists():
        assert time.monotonic() < deadline and process.poll() is None, "the agent never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert sorted(salvage_refs(root)) == ["refs/gsd/salvage/01-01/1/1"]
    assert files_of(root, "refs/gsd/salvage/01-01/1/1") == ["README.md", "src/a.py"]
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_keep_uses_its_own_index_and_leaves_out_protected_and_ignored_files(git_project) -> None:
    from gsd.io.git import salvage
    from gsd.io.git.repo import Git

    root = git_project.root
    git_project.write(".gitignore", "*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "ignore logs")
    head = git(root, "rev-parse", "HEAD").strip()
    git_project.write("README.md", "demo\nchanged\n")
    git_project.write("new.py", "print(1)\n")
    git_project.write(".env", "TOKEN=1\n")
    git_project.write("run.log", "noise\n")
    git_project.write("staged.txt", "the user's staged file\n")
    git(root, "add", "staged.txt")
    index_before = (root / ".git" / "index").read_bytes()
    changed = ["README.md", "new.py", ".env", "run.log"]
    ref = salvage.keep(Git(root), head, ("01-03", 2, 1), "timeout", changed)
    assert ref == "refs/gsd/salvage/01-03/2/1"
    assert files_of(root, ref) == ["README.md", "new.py"]
    assert (root / ".git" / "index").read_bytes() == index_before
    assert git(root, "diff", "--cached", "--name-only") == "staged.txt\n"
    assert not list((root / ".git").glob("gsd-salvage-*"))  # its index is gone
    # a second attempt of that number (a later run) never overwrites the first
    again = salvage.keep(Git(root), head, ("01-03", 2, 1), "timeout", ["new.py"])
    assert again == "refs/gsd/salvage/01-03/2/1-2"
    assert salvage.keep(Git(root), head, ("01-03", 2, 2), "timeout", [".env"]) is None


def test_a_path_neither_on_disk_nor_at_the_start_does_not_lose_the_others(git_project) -> None:
    """A file the agent made and removed again is named among the changes but is in
    neither tree: the rest is still kept (git's `add` would refuse the whole list)."""
    from gsd.io.git import salvage
    from gsd.io.git.repo import Git

    root = git_project.root
    head = git(root, "rev-parse", "HEAD").strip()
    git_project.write("new.py", "print(1)\n")
    (root / "README.md").unlink()
    ref = salvage.keep(
        Git(root), head, ("01-03", 1, 1), "timeout", ["new.py", "README.md", "ghost"]
    )
    assert ref is not None and files_of(root, ref) == ["README.md", "new.py"]
    shown = git(root, "diff", "--name-status", head, ref)
    assert shown == "D\tREADME.md\nA\tnew.py\n"
