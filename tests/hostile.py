"""Misbehaving agents, a phase they run in, and the check that none of the user's work was lost.

Shared by test_untrusted.py (one test per way issue 10 lists of losing or exposing work)
and test_soak.py. Every agent is a tiny real Python program steered by files in a control
folder (`do-{plan}-{task}`: behaviours, one a line); every process it starts carries a
token unique to the test in its argv or environment, so that /proc tells whether any
survived. The control folder is in config `sandbox.writable`: under Landlock an agent can
still leave its markers there, and nowhere else outside its worktree.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO, Project, git, plan_text

# gsd's own files in the checkout (today's run lock); never counted as the user's
ALL_TASKS = ("01-01-1", "01-01-2", "01-02-1", "01-03-1")
FULL_TOOLS = "[read_file, glob, search_file_content, write_file, replace, run_shell_command]"
READ_ONLY_TOOLS = "[read_file, glob, search_file_content]"

REPORT = (
    "### Task Report\n- Status: success\n- Files Created: none\n- Files Modified: none\n"
    "- Files Deleted: none\n- Validation: pass\n- Errors: none\n### Downstream Context\n"
    "- Key Interfaces Introduced: none\n- Patterns Established: none\n- Warnings: none\n"
)

# argv: control folder, "agent-{token}", role (writer | reader). A reader never writes
# its task file (a read-only agent that changed nothing is a success with no commit).
AGENT = r'''
import errno, json, os, random, subprocess, sys, time

control, marker, role = sys.argv[1], sys.argv[2], sys.argv[3]
token = marker.removeprefix("agent-")
os.environ["GSD_HOSTILE_TOKEN"] = token  # everything this agent starts carries it
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
me = f"{plan}-{task}"
outside = os.path.dirname(control)  # the test's tmp folder: trap/, secret.txt


def note(name, text=""):
    try:
        with open(os.path.join(control, name), "a") as handle:
            handle.write(text)
    except OSError:
        pass


def log(what, outcome):
    note(f"log-{me}", f"{what}: {outcome}\n")


def attempt(what, action):
    try:
        action()
        log(what, "done")
    except OSError as exc:
        log(what, errno.errorcode.get(exc.errno, str(exc.errno)))


def write(path, data, mode="w"):
    def action():
        with open(path, mode) as handle:
            handle.write(data)
    attempt(f"write {path}", action)


def git_out(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    return done.stdout.strip()


def git_try(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    log("git " + " ".join(args), "done" if done.returncode == 0 else f"exit {done.returncode}")


def dirs():
    """This checkout's git dir and the repository's common one (absolute)."""
    found = git_out("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    return found.splitlines()


GRANDCHILD = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"


def hang():
    subprocess.Popen([sys.executable, "-c", GRANDCHILD, f"grandchild-{token}"])
    note(f"started-{me}")
    deadline = time.time() + 120
    while time.time() < deadline and not os.path.exists(os.path.join(control, "release")):
        time.sleep(0.05)


def nap():
    time.sleep(random.uniform(0.05, 0.5))


def task_file():
    os.makedirs("src", exist_ok=True)
    with open(f"src/t{plan}_{task}.py", "w") as handle:
        handle.write(f"# {plan} {task}\n")


def stash_clear():
    git_try("stash", "clear")


def plant_checkpoint():
    """A checkpoint record and tag gsd did not write: rewind the branch to the first
    commit, keep no ref and no untracked file (what a rollback to it would do)."""
    first = git_out("rev-list", "--max-parents=0", "HEAD").split()[-1]
    name = f"{plan}/9-20200101T000000Z-planted"
    git_try("update-ref", f"refs/tags/checkpoint/{name}", first)
    record = {"tag": f"refs/tags/checkpoint/{name}", "head": first, "branch": "main",
              "snapshot": None, "untracked": [], "refs": {}}
    for folder in dirs():
        where = os.path.join(folder, "gsd", "checkpoints")
        attempt(f"mkdir {where}", lambda: os.makedirs(where, exist_ok=True))
        write(os.path.join(where, name.replace("/", "_") + ".json"), json.dumps(record))


def delete_branch(branch):
    """Wait until the other plan committed its task on its branch, then delete it."""
    other = branch.removeprefix("gsd/") + "-"
    deadline = time.time() + 60
    while time.time() < deadline:
        trailers = git_out("log", "--format=%(trailers:key=Gsd-Task,valueonly)", branch)
        if any(line.strip().startswith(other) for line in trailers.splitlines()):
            break
        time.sleep(0.1)
    time.sleep(0.5)
    git_try("update-ref", "-d", f"refs/heads/{branch}")


def plant_hooks():
    common = dirs()[-1]
    trap = os.path.join(outside, "trap")
    for hook in ("pre-commit", "post-commit", "pre-merge-commit", "post-merge",
                 "post-checkout", "reference-transaction"):
        path = os.path.join(common, "hooks", hook)
        write(path, f"#!/bin/sh\ntouch '{trap}/ran-{hook}'\nexit 0\n")
        attempt(f"chmod {path}", lambda: os.chmod(path, 0o755))
    write(os.path.join(common, "info", "exclude"), "src/\n", mode="a")
    git_try("config", "core.fsmonitor", os.path.join(trap, "fsmonitor.sh"))  # the last git call


def journal_symlink():
    secret = os.path.join(outside, "secret.txt")
    for folder in dirs():
        journal = os.path.join(folder, "gsd", "journal")
        for rel in ("files/src/leak.txt", "files/.planning/leak.md",
                    "side.jsonl", "plans/01-01.jsonl", "plans/01-02.jsonl"):
            path = os.path.join(journal, rel)
            def plant(path=path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                temp = path + ".planted"
                os.symlink(secret, temp)
                os.replace(temp, path)
            attempt(f"symlink {path}", plant)


def skip_worktree():
    path = ".planning/config.json"
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        data = {}
    data["hacked"] = token
    write(path, json.dumps(data))
    git_try("update-index", "--skip-worktree", path)


def protected():
    write(".env", "SECRET=stolen\n")
    attempt("unlink key.pem", lambda: os.unlink("key.pem"))


def main_checkout():
    main = os.path.dirname(dirs()[-1])
    write(os.path.join(main, "README.md"), f"agent was here {token}\n", mode="a")
    write(os.path.join(main, "src", "injected.py"), f"# agent was here {token}\n")
    write(os.path.join(main, ".planning", "injected.md"), f"agent was here {token}\n")
    write(os.path.join(main, ".env"), f"SECRET=agent was here {token}\n")


BEHAVIOURS = {
    "hang": hang, "nap": nap, "file": task_file, "stash-clear": stash_clear,
    "plant-checkpoint": plant_checkpoint, "plant-hooks": plant_hooks,
    "journal-symlink": journal_symlink, "skip-worktree": skip_worktree,
    "protected": protected, "main-checkout": main_checkout,
}

note(f"spawned-{me}", f"{os.getpid()}\n")
steering = os.path.join(control, f"do-{me}")
wanted = open(steering).read().split() if os.path.exists(steering) else []
for name in wanted:
    kind, _, argument = name.partition(":")
    if kind == "delete-branch":
        delete_branch(argument)
    else:
        BEHAVIOURS[kind]()
if role == "writer" and "file" not in wanted:
    task_file()
print(REPORT)
'''

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: {tools}
timeout_mins: 1
runner: command
command: [{command}]
---
Test persona.
"""

STATE = """\
# Project State

## Current Position

Phase: 1 of 1 (Alpha)
Plan: 0 of 3 in current phase
Status: Ready to execute

## Performance Metrics

| Plan | Duration | Tasks | Files |
|------|----------|-------|-------|
| - | - | - | - |

### Blockers/Concerns

None yet.

## Session Continuity

Last session: never
Stopped at: nothing yet
Resume file: None
"""

STATUS_LOOP = """\
import os, subprocess, sys
stop, where = sys.argv[1], sys.argv[2]
while not os.path.exists(stop):
    subprocess.run(["git", "status", "--porcelain"], cwd=where, capture_output=True)
"""


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when there is none (probed, not assumed)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): syscall 444
        # on x86-64 and in the generic table (arm64, riscv64)
        version = int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


LANDLOCK = landlock_abi() > 0


def task_xml(
    plan: str, n: int, *, specialist: str = "worker", files: str | None = None, verify: str = "true"
) -> str:
    return (
        f'<task type="auto" specialist="{specialist}">\n<name>Task {n}</name>\n'
        f"<files>{files or f'src/t{plan}_{n}.py'}</files>\n<action>Write it.</action>\n"
        f"<verify><automated>{verify}</automated></verify>\n<done>Done.</done>\n</task>"
    )


def processes_with(needle: str) -> list[int]:
    """Live processes (not zombies, not this one) whose argv or environment holds `needle`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                seen = handle.read()
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    seen += handle.read()
            except OSError:
                pass  # another user's process: its argv is enough
        except (OSError, IndexError):
            continue
        if state != b"Z" and needle.encode() in seen:
            found.append(int(entry))
    return found


def kill_all(needle: str) -> list[int]:
    """SIGKILL whatever carries `needle` (a test's cleanup, whether it passed or not)."""
    pids = processes_with(needle)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def gone_within(needle: str, seconds: float) -> list[int]:
    """Poll until no process carries `needle`; what is still alive after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        alive = processes_with(needle)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@dataclass
class Snapshot:
    """What belongs to the user, before a run: everything a run must leave as it was."""

    branch: str
    refs: dict[str, str]  # every ref but the user's branch, gsd/* and checkpoint/* tags
    stash: list[str]  # `git stash list`, with the commits
    files: dict[str, bytes]  # uncommitted tracked, untracked and ignored files
    untracked: set[str]  # untracked and ignored (never to be committed)
    dirty: set[str]  # tracked, with uncommitted changes (never to be committed)
    status: set[str]  # `git status --porcelain` lines
    admin: dict[str, bytes]  # .git/config, .git/hooks/*, .git/info/*
    worktrees: set[str]


def _lines(root: Path, *args: str) -> list[str]:
    return [line for line in git(root, *args).splitlines() if line.strip()]


def _user_refs(root: Path, branch: str) -> dict[str, str]:
    refs = {}
    for line in _lines(root, "for-each-ref", "--format=%(refname) %(objectname)"):
        ref, sha = line.split()
        if ref in (f"refs/heads/{branch}", "refs/stash") or ref.startswith(
            ("refs/heads/gsd/", "refs/tags/checkpoint/", "refs/gsd/salvage/")
        ):
            continue
        refs[ref] = sha
    return refs


def _status(root: Path) -> set[str]:
    lines = _lines(root, "status", "--porcelain", "--ignored")
    return set(lines)


def _common_dir(root: Path) -> Path:
    return Path(git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def _admin_files(root: Path) -> dict[str, bytes]:
    common = _common_dir(root)
    found = {"config": (common / "config").read_bytes()}
    for folder in ("hooks", "info"):
        for path in sorted((common / folder).rglob("*")) if (common / folder).is_dir() else []:
            if path.is_file():
                found[path.relative_to(common).as_posix()] = path.read_bytes()
    return found


GSD_WORKTREES = "/gsd/worktrees/"  # in ~/.local/state/ (older versions: in .git/)


def _worktrees(root: Path) -> set[str]:
    """The user's worktrees: gsd's own (under gsd/worktrees/ of the state folder) are left
    out, so that a snapshot taken after a crash does not count the worktrees the next run
    must remove."""
    out = git(root, "worktree", "list", "--porcelain")
    found = {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")}
    return {path for path in found if GSD_WORKTREES not in path}


def _gsd_worktrees(root: Path) -> set[str]:
    out = git(root, "worktree", "list", "--porcelain")
    found = {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")}
    return {path for path in found if GSD_WORKTREES in path}


def snapshot(root: Path) -> Snapshot:
    branch = git(root, "symbolic-ref", "--short", "HEAD").strip()
    untracked = set(filter(None, git(root, "ls-files", "-z", "--others").split("\0")))
    dirty = set(filter(None, git(root, "diff", "--name-only", "-z", "HEAD").split("\0")))
    files = {rel: (root / rel).read_bytes() for rel in untracked | dirty if (root / rel).is_file()}
    return Snapshot(
        branch=branch,
        refs=_user_refs(root, branch),
        stash=_lines(root, "stash", "list", "--format=%H %gs"),
        files=files,
        untracked=untracked,
        dirty=dirty,
        status=_status(root),
        admin=_admin_files(root),
        worktrees=_worktrees(root),
    )


def task_counts(root: Path, *revs: str) -> collections.Counter[str]:
    out = git(root, "log", "--format=%(trailers:key=Gsd-Task,valueonly)", *revs)
    return collections.Counter(line.strip() for line in out.splitlines() if line.strip())


def committed_anywhere(root: Path) -> collections.Counter[str]:
    """Task commits reachable from any branch (the user's and gsd's plan branches)."""
    return task_counts(root, "--branches")


def assert_user_work_intact(root: Path, before: Snapshot, token: str | None = None) -> None:
    """The user's refs, stashes, files and .git admin files as they were; no process left.
    Holds after every run, finished or not."""
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == before.branch
    assert _user_refs(root, before.branch) == before.refs, "a branch or tag of the user changed"
    assert _lines(root, "stash", "list", "--format=%H %gs") == before.stash, "stashes changed"
    for rel, data in before.files.items():
        path = root / rel
        assert path.is_file() and not path.is_symlink(), f"{rel} is gone"
        assert path.read_bytes() == data, f"{rel} changed"
    tracked = set(filter(None, git(root, "ls-files", "-z").split("\0")))
    for rel in before.untracked:
        assert rel not in tracked, f"the user's untracked {rel} was staged or committed"
        assert not git(root, "log", "--all", "--format=%H", "--", rel), f"{rel} was committed"
    for rel in before.dirty:
        assert git(root, "diff", "--name-only", "HEAD", "--", rel), f"{rel}'s edit was committed"
    now = _admin_files(root)
    assert now == before.admin, "changed in .git: " + ", ".join(
        sorted(k for k in now.keys() | before.admin.keys() if now.get(k) != before.admin.get(k))
    )
    if token is not None:
        left = gone_within(token, 10)
        kill_all(token)
        assert not left, f"processes left alive: {left}"


def checkpoint_tags(root: Path) -> list[str]:
    return _lines(root, "for-each-ref", "--format=%(refname)", "refs/tags/checkpoint/")


def assert_gsd_left_nothing(
    root: Path, before: Snapshot, foreign_records: tuple[str, ...] = ()
) -> None:
    """No checkpoint tag, gsd worktree, checkpoint record, operation in progress or run
    lock left; `foreign_records` are record files an agent planted (never acted on)."""
    tags = checkpoint_tags(root)
    assert tags == [], f"checkpoint tags left: {tags}"
    assert _worktrees(root) == before.worktrees, "the user's worktrees changed"
    assert _gsd_worktrees(root) == set(), "a gsd worktree was left"
    common = _common_dir(root)
    assert not (common / "gsd" / "worktrees").exists(), "a worktree folder was left in .git"
    records = [
        p
        for p in common.rglob("*.json")
        if p.parent.name == "checkpoints" and p.name not in foreign_records
    ]
    assert records == [], f"checkpoint records left: {records}"
    assert not (common / "MERGE_HEAD").exists(), "a merge was left half done"
    assert not (common / "index.lock").exists(), "index.lock was left"
    probe = run_gsd(root, "checkpoints", "prune")  # takes the run lock: refused if held
    assert probe.returncode == 0, f"the run lock is still held: {probe.stderr}"


def assert_nothing_lost(
    root: Path,
    before: Snapshot,
    *,
    tasks: tuple[str, ...] | list[str] = ALL_TASKS,
    token: str | None = None,
    unfinished: tuple[str, ...] = (),
    foreign_records: tuple[str, ...] = (),
) -> None:
    """Every task in `tasks` committed exactly once on the user's branch and no other;
    the user's work intact; nothing of gsd's left (`unfinished` plans may keep their
    branch); the checkout's status as it was before the run."""
    counts = task_counts(root, before.branch)
    assert counts == collections.Counter(tasks), f"task commits on {before.branch}: {counts}"
    assert_user_work_intact(root, before, token)
    branches = set(_lines(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/gsd/"))
    assert branches <= {f"gsd/{plan}" for plan in unfinished}, f"plan branches left: {branches}"
    assert_gsd_left_nothing(root, before, foreign_records)
    status = _status(root)
    assert status == before.status, f"the checkout changed: {sorted(status ^ before.status)}"


def run_gsd(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=timeout,
    )


@dataclass
class Started:
    """A `gsd` subprocess whose output goes to files (no pipe to fill up)."""

    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def finish(self, timeout: float = 180) -> tuple[int, str, str]:
        code = self.process.wait(timeout=timeout)
        return code, self.out.read_text(errors="replace"), self.err.read_text(errors="replace")


@dataclass
class Scene:
    """A repository with a two-wave phase (01-01: two tasks and 01-02 side by side,
    01-03 after both), misbehaving agents, and the folders the agents steer by."""

    root: Path
    tmp: Path
    control: Path
    token: str
    runs: int = 0

    @property
    def trap(self) -> Path:
        return self.tmp / "trap"

    @property
    def secret(self) -> Path:
        return self.tmp / "secret.txt"

    def steer(self, task_id: str, *behaviours: str) -> None:
        (self.control / f"do-{task_id}").write_text("\n".join(behaviours) + "\n")

    def calm(self) -> None:
        """Every agent behaves from now on."""
        for path in self.control.glob("do-*"):
            path.unlink()

    def spawned(self) -> list[str]:
        return sorted(p.name.removeprefix("spawned-") for p in self.control.glob("spawned-*"))

    def forget_spawns(self) -> None:
        for path in self.control.glob("spawned-*"):
            path.unlink()

    def log(self, task_id: str) -> str:
        path = self.control / f"log-{task_id}"
        return path.read_text() if path.exists() else ""

    def configure(self, settings: dict[str, object]) -> None:
        """Merge `settings` (nested) into config.json and commit it."""
        path = self.root / ".planning/config.json"
        config = json.loads(path.read_text())
        _merge(config, settings)
        path.write_text(json.dumps(config, indent=2) + "\n")
        self.commit("config")

    def in_place(self) -> None:
        self.configure({"workflow": {"use_worktrees": False}})

    def sandbox(self, on: bool) -> bool:
        """Turn gsd's sandbox on (the default) or off; whether agents' writes outside
        their worktree will fail (Landlock is there and the sandbox is on)."""
        if not on:
            self.configure({"sandbox": {"enabled": False}})
        return on and LANDLOCK

    def commit(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)

    def user_work(self, *, dirty: bool = False) -> Snapshot:
        """What a user has lying around: two stashes, a branch, tags, untracked and
        ignored files (a `.env`, a key), and with `dirty` an uncommitted edit."""
        root = self.root
        for n in (1, 2):
            (root / "README.md").write_text(f"demo\nstashed edit {n}\n")
            git(root, "stash", "push", "-q", "-m", f"user stash {n}")
        git(root, "branch", "user-feature")
        git(root, "tag", "v0.1")
        git(root, "tag", "-a", "v0.1-notes", "-m", "annotated")
        (root / "notes.txt").write_text("the user's notes\n")
        (root / "scratch").mkdir()
        (root / "scratch/draft.md").write_text("# a draft\n")
        (root / ".env").write_text("SECRET=the user's\n")
        (root / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nuser\n")
        (root / "build").mkdir()
        (root / "build/out.bin").write_bytes(b"\x00\x01binary")
        if dirty:
            (root / "README.md").write_text("demo\nthe user's uncommitted edit\n")
        return snapshot(root)

    def gsd_env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO)}

    def start(self, *args: str, cwd: Path | None = None) -> Started:
        self.runs += 1
        out, err = self.tmp / f"gsd-{self.runs}.out", self.tmp / f"gsd-{self.runs}.err"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "gsd", *args],
                cwd=cwd or self.root,
                env=self.gsd_env(),
                stdout=stdout,
                stderr=stderr,
            )
        return Started(process, out, err)

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run_gsd(cwd or self.root, *args)

    def wait_for(self, name: str, started: Started | None = None, seconds: float = 120) -> None:
        """Until control/`name` exists (an agent wrote it); fails if gsd ends first."""
        deadline = time.monotonic() + seconds
        while not (self.control / name).exists():
            if started is not None and started.process.poll() is not None:
                _, out, err = started.finish()
                raise AssertionError(f"gsd ended before {name}: {err[-2000:]}")
            assert time.monotonic() < deadline, (
                f"{name} never appeared (can agents write {self.control}, which config "
                "`sandbox.writable` names?)"
            )
            time.sleep(0.05)

    def errors(self) -> list[dict[str, object]]:
        """The error records of every run (`gsd errors`, whichever files hold them)."""
        done = self.run("errors", "--format", "json")
        assert done.returncode == 0, done.stderr
        records: list[dict[str, object]] = json.loads(done.stdout)["errors"]
        return records

    def error_types(self, plan: str, task: int) -> list[object]:
        number = plan.split("-")[1]
        return [
            r["error_type"]
            for r in self.errors()
            if str(r["plan"]).lstrip("0") == number.lstrip("0") and str(r["task"]) == str(task)
        ]


def _merge(into: dict[str, object], settings: dict[str, object]) -> None:
    for key, value in settings.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)  # type: ignore[arg-type]
        else:
            into[key] = value


def make_scene(project: Project, tmp: Path) -> Scene:
    """The phase, its agents and config in `project` (a git repository), committed."""
    token = f"gsd-hostile-{uuid.uuid4().hex}"
    control = tmp / "control"
    control.mkdir()
    (tmp / "trap").mkdir()
    (tmp / "trap/fsmonitor.sh").write_text(f"#!/bin/sh\ntouch '{tmp / 'trap'}/ran-fsmonitor'\n")
    (tmp / "trap/fsmonitor.sh").chmod(0o755)
    (tmp / "secret.txt").write_text(json.dumps({"leaked": f"SECRET-{token}"}) + "\n")
    script = tmp / "agent.py"
    script.write_text(AGENT.replace("print(REPORT)", f"print({REPORT!r})"))
    for name, tools, role in (
        ("worker", FULL_TOOLS, "writer"),
        ("gsd-executor", FULL_TOOLS, "writer"),
        ("reader", READ_ONLY_TOOLS, "reader"),
    ):
        command = ", ".join(
            json.dumps(a)
            for a in (sys.executable, str(script), str(control), f"agent-{token}", role)
        )
        project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, tools=tools, command=command)
        )
    project.write(".planning/available_agents.md", "- **worker**: test\n- **reader**: test\n")
    project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
                "voltagent": {"fallback_on_error": False},
                "sandbox": {"writable": [str(control)]},
            },
            indent=2,
        )
        + "\n",
    )
    project.write(".planning/STATE.md", STATE)
    project.write(".planning/PROJECT.md", "# Project\n\nThe user's project.\n")
    project.write(".gitignore", ".env\n*.pem\n*.key\nbuild/\n")
    project.write("src/shared.py", "# shared\n")
    files = "[src/t01-01_1.py, src/t01-01_2.py]"
    project.plan(
        "01-01", tasks=task_xml("01-01", 1) + "\n" + task_xml("01-01", 2), files_modified=files
    )
    project.plan("01-02", tasks=task_xml("01-02", 1), files_modified="[src/t01-02_1.py]")
    project.plan(
        "01-03",
        tasks=task_xml("01-03", 1),
        depends_on='["01-01", "01-02"]',
        wave=2,
        files_modified="[src/t01-03_1.py]",
    )
    scene = Scene(project.root, tmp, control, token)
    scene.commit("plans, agents and config")
    return scene


def rewrite_plan(scene: Scene, plan_id: str, **fields: object) -> None:
    """Replace a plan of phase 1 (fields as conftest.plan_text takes them) and commit."""
    path = scene.root / f".planning/phases/01-alpha/{plan_id}-PLAN.md"
    path.write_text(plan_text(plan=plan_id.split("-")[1], **fields))  # type: ignore[arg-type]
    scene.commit(f"{plan_id} rewritten")


def one_line_error(stderr: str) -> str:
    """The error line of a refused run (gsd's `gsd: error: ...`), checked to be one."""
    lines = [line for line in stderr.splitlines() if line.startswith("gsd: error:")]
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    assert "Traceback" not in stderr
    return lines[0]
