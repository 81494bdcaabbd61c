"""Issue 20, processes: what an agent starts ends with it, and its limits hold.

Real hostile programs under the real supervisor (and, at the end, a real `gsd
execute-phase`): a `setsid` double-forked daemon, a `setpgid(0, 0)` escapee, a bounded
fork bomb, a memory hog, and gsd SIGKILLed mid-task. Judged by /proc and the files the
programs write, never by what gsd says.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gsd.io.confine import limits
from gsd.io.confine.limits import Limits
from gsd.io.process import proc
from tests.hostile import gone_within, kill_all, processes_with

# Writes a timestamp into `daemon.log` (in its working folder) every 0.05 s, forever,
# detached from the agent: a new session (setsid) or a new group (setpgid), double forked.
DAEMON = """
import os, sys, time
how, log = sys.argv[1], os.path.abspath("daemon.log")
if os.fork() == 0:
    os.setsid() if how == "setsid" else os.setpgid(0, 0)
    if os.fork() == 0:
        while True:
            with open(log, "a") as handle:
                handle.write(f"{time.time()}\\n")
            time.sleep(0.05)
    os._exit(0)
time.sleep(0.5)
print("agent done")
"""

FORK_BOMB = """
import os, sys, time
for n in range(600):
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    except OSError as exc:
        print(f"fork {n} failed: {exc}", flush=True)
        time.sleep(120)
time.sleep(120)
"""

MEMORY_HOG = """
import time
chunks = []
for _ in range(3 * 1024):  # 3 GiB, every page touched
    chunks.append(bytearray(b"x" * (1024 * 1024)))
time.sleep(120)
"""


@pytest.fixture
def token():
    mark = f"gsd-warden-test-{uuid.uuid4().hex}"
    yield mark
    left = kill_all(mark)
    assert not left, f"processes left alive: {left}"


def supervise(script: str, tmp_path: Path, token: str, *args: str, **options) -> proc.Spawned:
    path = tmp_path / "agent.py"
    path.write_text(script)
    settings = {"timeout_s": 60.0, "grace_s": 1.0}
    settings.update(options)
    return proc.supervise(
        [sys.executable, str(path), *args, token],
        cwd=tmp_path,
        stdout_path=tmp_path / "out" / "stdout",
        stderr_path=tmp_path / "out" / "stderr",
        **settings,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("how", ["setsid", "setpgid"])
def test_a_detached_daemon_ends_with_its_agent(how: str, tmp_path: Path, token: str) -> None:
    """Issue 20 cases 1 and 2: the daemon is dead when the spawn returns, and writes
    nothing after it."""
    done = supervise(DAEMON, tmp_path, token, how)
    assert done.exit_code == 0 and done.leftovers >= 1
    assert processes_with(token) == []
    log = tmp_path / "daemon.log"
    written = log.read_text()
    assert written  # it did run, detached, while the agent lived
    time.sleep(0.5)  # ten of its writes, were it alive
    assert log.read_text() == written


def test_a_bounded_fork_bomb_ends_at_the_process_limit(tmp_path: Path, token: str) -> None:
    """Issue 20 case 3: 600 sleeping processes against a limit of 200: the spawn ends
    at once as over its process limit, with none of them left."""
    started = time.monotonic()
    done = supervise(FORK_BOMB, tmp_path, token, limits=Limits(None, 200))
    assert done.limit == "processes", done
    assert time.monotonic() - started < 30  # not its 120 s of sleep
    assert gone_within(token, 5) == []


def test_a_memory_hog_ends_at_the_memory_limit(tmp_path: Path, token: str) -> None:
    """Issue 20 case 4: 3 GiB touched against a limit of 1G."""
    if "memory" not in limits.mechanisms():
        pytest.skip("no memory cgroup here: the warden's own count keeps the limit, coarsely")
    started = time.monotonic()
    done = supervise(MEMORY_HOG, tmp_path, token, limits=Limits(1024**3, None))
    assert done.limit == "memory", done
    assert time.monotonic() - started < 60
    assert gone_within(token, 5) == []


RUNNER = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from gsd.io.process import proc
proc.supervise({argv!r}, cwd=Path({cwd!r}), stdout_path=Path({cwd!r}) / "o",
               stderr_path=Path({cwd!r}) / "e", timeout_s=120, grace_s=1)
"""


def test_gsd_killed_mid_task_leaves_no_daemon(tmp_path: Path, token: str) -> None:
    """Issue 20 case 5: gsd SIGKILLed while its agent and the agent's setsid daemon run:
    the warden (told by its parent-death signal) ends them both."""
    agent = tmp_path / "agent.py"
    agent.write_text(DAEMON.replace('print("agent done")', "time.sleep(120)"))
    argv = [sys.executable, str(agent), "setsid", token]
    repo = str(Path(__file__).resolve().parent.parent)
    code = textwrap.dedent(RUNNER).format(repo=repo, argv=argv, cwd=str(tmp_path))
    gsd = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 120
    while not (tmp_path / "daemon.log").exists():
        assert time.monotonic() < deadline and gsd.poll() is None, "the agent never started"
        time.sleep(0.05)
    assert len(processes_with(token)) >= 2  # the agent and its daemon
    gsd.kill()
    gsd.wait()
    assert gone_within(token, 10) == []
    written = (tmp_path / "daemon.log").read_text()
    time.sleep(0.5)
    assert (tmp_path / "daemon.log").read_text() == written


# A `runner: command` agent: writes its task's file and reports success; as 01-01's
# first task it also leaves a setsid double-forked daemon editing the worktree, and as
# 01-02's it is a fork bomb (600 sleeping processes).
WORKER = r"""
import os, sys, time
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
os.makedirs("src", exist_ok=True)
with open(f"src/t{plan}_{task}.py", "w") as handle:
    handle.write(f"# task {plan} {task}\n")
if (plan, task) == ("01-01", "1") and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("daemon.txt", "a") as handle:
                handle.write(f"{time.time()}\n")
            time.sleep(0.05)
    os._exit(0)
if plan == "01-02":
    exec(BOMB)
time.sleep(0.3)
print(REPORT)
"""


def _scene(project, tmp_path: Path):
    from tests.hostile import REPORT, make_scene, rewrite_plan, task_xml

    scene = make_scene(project, tmp_path)
    script = tmp_path / "worker.py"
    text = WORKER.replace("REPORT)", f"{REPORT!r})").replace("BOMB", repr(FORK_BOMB))
    script.write_text(text)
    agent = project.root / "agents" / "worker.md"
    command = f'"{sys.executable}", "{script}", "agent-{scene.token}"'
    old = agent.read_text().split("command: [")[1].split("]\n")[0]
    agent.write_text(agent.read_text().replace(old, command))
    tasks = task_xml("01-01", 1) + "\n" + task_xml("01-01", 2, specialist="reader")
    rewrite_plan(scene, "01-01", tasks=tasks, files_modified="[src/t01-01_1.py]")
    return scene


def test_a_daemon_left_by_task_1_is_task_1s_and_ends_with_it(git_project, tmp_path: Path) -> None:
    """Issue 20, measured: task 1's setsid daemon kept editing the worktree; task 2 (a
    read-only reviewer) and the fallback failed on the dirty tree and were blamed. Now
    the daemon ends with task 1, nothing it could write comes after, nobody else is
    blamed, and it does not outlive gsd."""
    from tests.hostile import committed_anywhere, git

    scene = _scene(git_project, tmp_path)
    scene.configure({"sandbox": {"processes": 200}})
    done = scene.run("execute-phase", "1")
    assert processes_with(scene.token) == []
    blamed = [(r["plan"], r["task"], r["error_type"]) for r in scene.errors()]
    assert all(str(plan).lstrip("0") != "1" for plan, _task, _type in blamed), blamed
    assert "01-01-1" in committed_anywhere(scene.root), done.stderr
    trailers = "--format=%(trailers:key=Gsd-Task,valueonly)"
    log = git(scene.root, "log", "--all", trailers, "--", "daemon.txt").split()
    assert set(log) <= {"01-01-1"}, log  # whatever it wrote is task 1's
    merged = scene.root / "daemon.txt"
    before = merged.read_bytes() if merged.exists() else None
    time.sleep(0.5)  # ten of its writes, were it alive
    assert (merged.read_bytes() if merged.exists() else None) == before
    # 01-02's fork bomb: its own failure, at the process limit; the run went on
    assert scene.error_types("01-02", 1) == ["resource-limit"], done.stderr
    assert "resource-limit" in scene.run("errors").stdout
    kill_all(scene.token)


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ('"memory": "lots"', '`sandbox.memory` must be a size of 64M or more, e.g. "8G"'),
        ('"memory": "1M"', '`sandbox.memory` must be a size of 64M or more, e.g. "8G"'),
        ('"processes": 4', "`sandbox.processes` must be a whole number of 16 or more"),
    ],
)
def test_a_bad_limit_is_one_line_naming_config_json(setting: str, words: str) -> None:
    from gsd.formats.settings import InvalidSettings, parse

    with pytest.raises(InvalidSettings) as caught:
        parse('{"sandbox": {' + setting + "}}", ".planning/config.json")
    assert str(caught.value).startswith(f".planning/config.json:1: {words}")
    assert "\n" not in str(caught.value)


def test_limits_from_config_and_their_defaults() -> None:
    from gsd.formats.settings import parse, size_bytes

    assert size_bytes(parse("{}").sandbox.memory) == limits.DEFAULT_MEMORY
    assert parse("{}").sandbox.processes == limits.DEFAULT_PROCESSES
    chosen = parse('{"sandbox": {"memory": "1.5G", "processes": 200}}').sandbox
    assert (size_bytes(chosen.memory), chosen.processes) == (1536 * 1024**2, 200)
    off = parse('{"sandbox": {"memory": "none", "processes": "none"}}').sandbox
    assert (size_bytes(off.memory), off.processes) == (None, None)


def test_the_dry_run_says_what_keeps_the_limits(git_project) -> None:
    from tests.hostile import run_gsd

    git_project.plan("01-01")
    git_project.write(".planning/config.json", '{"sandbox": {"memory": "2G", "processes": 300}}')
    done = run_gsd(git_project.root, "execute-phase", "1", "--dry-run")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("limits:"))
    assert "memory 2G (" in line and "processes 300 (" in line
    assert "ended by its warden" in line


def test_what_a_killed_warden_leaves_in_its_cgroup_is_ended_by_gsd(
    tmp_path: Path, token: str
) -> None:
    """The warden itself SIGKILLed (by an agent not confined from signalling it): its
    program dies with it (parent-death signal), and the daemon that left the group is
    ended by gsd from the warden's cgroup when the spawn returns."""
    from gsd.io.process import cgroups

    if not cgroups.locations():
        pytest.skip("no cgroup hierarchy here: nothing but the warden holds a daemon")
    script = DAEMON.replace('print("agent done")', "os.kill(os.getppid(), 9); time.sleep(60)")
    done = supervise(script, tmp_path, token, "setsid")
    assert done.exit_code == 137
    assert gone_within(token, 5) == []
    written = (tmp_path / "daemon.log").read_text()
    time.sleep(0.5)
    assert (tmp_path / "daemon.log").read_text() == written


NO_CGROUPS = (
    "for m in $(awk '$0 ~ / - cgroup2? / {print $5}' /proc/self/mountinfo); do "
    'mount -o remount,bind,ro "$m" || exit 97; done; exec "$@"'
)
COUNTED = """
import json, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from gsd.io.confine import limits
from gsd.io.process import proc
from gsd.io.confine.limits import Limits
cwd = Path({cwd!r})
done = [limits.mechanisms()]
for script, bounds in (({bomb!r}, Limits(None, 40)), ({hog!r}, Limits(512 * 1024**2, None))):
    (cwd / "agent.py").write_text(script)
    spawned = proc.supervise([sys.executable, str(cwd / "agent.py"), {token!r}], cwd=cwd,
        stdout_path=cwd / "o", stderr_path=cwd / "e", timeout_s=60, grace_s=1, limits=bounds)
    done.append(spawned.limit)
print(json.dumps(done))
"""


def test_without_a_writable_cgroup_the_warden_counts(tmp_path: Path, token: str) -> None:
    """Every cgroup hierarchy read-only (a mount namespace of the test's own): the
    warden's own count still ends a fork bomb and a memory hog, as their limits'
    failures, and the dry run's words say it is a count."""
    import json
    import shutil

    if os.getuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to make the cgroup hierarchies read-only")
    repo = str(Path(__file__).resolve().parent.parent)
    bomb = FORK_BOMB.replace("range(600)", "range(100)")
    hog = MEMORY_HOG.replace("3 * 1024", "2 * 1024")
    code = COUNTED.format(repo=repo, cwd=str(tmp_path), bomb=bomb, hog=hog, token=token)
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", NO_CGROUPS, "sh", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if done.returncode == 97:
        pytest.skip(f"cannot remount the cgroup hierarchies read-only: {done.stderr}")
    assert done.returncode == 0, done.stderr
    words, bomb_limit, hog_limit = json.loads(done.stdout.splitlines()[-1])
    assert "memory" not in words and "tracking" not in words
    assert (bomb_limit, hog_limit) == ("processes", "memory")
    assert gone_within(token, 5) == []


HOOK_DAEMON = """\
echo ran >> {control}/ran-post-commit
setsid {python} -c 'import sys, time
while True:
    open(sys.argv[1], "a").write(str(time.time()) + "\\\\n")
    time.sleep(0.05)' {control}/hook-daemon.log {token} </dev/null >/dev/null 2>&1 &
exit 0
"""


def test_a_daemon_a_git_hook_leaves_ends_with_the_hook(git_project, tmp_path: Path, gsd) -> None:
    """The user's post-commit hook runs (confined) on gsd's task commit and leaves a
    setsid daemon: the hook's warden ends it when the hook exits."""
    from tests.hostile import LANDLOCK
    from tests.test_confined_hooks import Scene

    if not LANDLOCK:
        pytest.skip("hooks run in the agents' confinement only with Landlock")
    token = f"gsd-hook-daemon-{uuid.uuid4().hex}"
    scene = Scene(git_project, tmp_path)
    scene.setup('write("src/x.txt")\nprint(REPORT)\n', files="src/x.txt")
    body = HOOK_DAEMON.format(control=scene.control, python=sys.executable, token=token)
    scene.hook("post-commit", body)
    try:
        result = gsd("execute-phase", "1")
        assert result.code == 0, result.err
        assert scene.marks() == ["ran-post-commit"]
        log = scene.control / "hook-daemon.log"
        assert gone_within(token, 10) == []
        written = log.read_text() if log.exists() else ""
        time.sleep(0.5)
        assert (log.read_text() if log.exists() else "") == written
    finally:
        kill_all(token)
