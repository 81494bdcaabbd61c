"""task: gsd's own cost per task, and its peak memory while an agent prints 1 GiB.

Run by `bench/run.py` (`--only task`). `--memory-child` and `--supervise-child` are the
child processes of two parts below, not meant to be run by hand.

Per-task cost. In a git repository of N generated files (50 per folder, folders nested,
committed and packed), this process imports gsd once and calls `gsd.run.taskrun.run_task`
once per task: checkpoint tag, spawn of the agent under `proc.supervise`, result
parsing, enforcement, task commit, tag deletion. The agent is a `/bin/sh -c` one-liner
of shell built-ins: it appends a line to the one file named in the task's `<files>` and
prints a complete success Task Report. Three subjects alternate in blocks of tasks, the
order rotated each round, after warm-up tasks:

- gsd:   `run_task(...)`, timed with time.perf_counter around the call;
- agent: the same agent argv alone, `subprocess.run` (argv list, stdin /dev/null,
         output to a file, same cwd); the file it changed is put back, untimed;
- floor: `bash floor.sh` started with `subprocess.run` and an argv list: the same edit
         (a built-in), `git tag`, `git add -A`, `git commit -q -m ...`, `git tag -d`.

gsd's own cost per task is run_task minus the agent alone (median minus median, and
minimum minus minimum); the ratio is that over the floor. While gsd runs, `GitExec.checked`
(where `Git.git` and `Git.out` start git) and `proc.supervise` are wrapped with perf_counter to
count and time git processes per task, by subcommand and by the Git method run_task
called (the wrappers cost about a microsecond a call). After the timed tasks, the
floor's commands are timed one by one, with gsd's `commit --only -- PATH` beside the
plain commit, and a child process that imported gsd times one spawn of `/bin/sh -c :`
started four ways (five with Landlock), down to `proc.supervise`.

Peak memory. A child process (`.venv/bin/python bench/task.py --memory-child ...`)
imports gsd and calls run_task once with an agent that prints 1 GiB to stdout (NUL
bytes; lines of `y`; lines of `ab`), then prints its own VmHWM (peak RSS) from
/proc/self/status. Not ru_maxrss (wait4, RUSAGE_CHILDREN): a child started with vfork
and exec, as subprocess starts it, is charged its parent's peak RSS at the exec, here
this benchmark's own. The parent then measures with tracemalloc what one
`taskreport.parse_task_report` of the output's tail allocates.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENV_PY = REPO / ".venv" / "bin" / "python"

RATIO_TARGET = 2.0  # per task, gsd own / the floor (issue 23: at 100 files) ...
LARGE_TARGET = 1.5  # ... and at LARGE files
LARGE = 20_000


def ratio_target(files: int) -> float:
    """Issue 23's per-task target at this size: 2x, and 1.5x at 20,000 files."""
    return LARGE_TARGET if files >= LARGE else RATIO_TARGET


MEMORY_TARGET_MB = 100.0
ONE_GIB = 1 << 30
FILES_PER_DIR = 50
DIRS_PER_PARENT = 10

PLAN_ID = "01-01"
FLOOR_SCRIPT = """\
set -e
echo x >> "$1"
git tag "$2"
git add -A
git commit -q -m "$3"
git tag -d "$2" >/dev/null
"""
# The agent: shell built-ins only, so its own start-up is one small exec of dash.
AGENT_SH = 'echo x >> "$1"; printf "%s\\n" "$2"'
REPORT = """
### Task Report
- Status: success
- Files Created: none
- Files Modified: {path}
- Files Deleted: none
- Validation: pass
- Errors: none
### Downstream Context
- Key Interfaces Introduced: none
- Patterns Established: none
- Warnings: none
## TASK COMPLETE
"""
PLAN = """\
---
phase: 01-alpha
plan: 01
type: execute
wave: 1
depends_on: []
files_modified: [{path}]
autonomous: true
---

<objective>Change one file.</objective>

<tasks>
<task type="auto">
  <name>Task 1: change one file</name>
  <files>{path}</files>
  <action>Append a line.</action>
  <done>The line is there.</done>
</task>
</tasks>
"""
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Bench Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Bench Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
}

Say = Callable[[str], None]
Table = Callable[[list[str], list[list[str]]], None]


class TaskFailed(Exception):
    pass


# --- the repository, the plan, the agent ---------------------------------------------------


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise TaskFailed(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def make_repo(root: Path, files: int) -> str:
    """A committed, packed repository of `files` small files in nested folders; returns
    the path (relative) of the file the agent changes, one in the middle of the tree."""
    root.mkdir(parents=True)
    paths = []
    for i in range(files):
        leaf, parent = i // FILES_PER_DIR, i // (FILES_PER_DIR * DIRS_PER_PARENT)
        rel = f"src/pkg{parent:03d}/mod{leaf:04d}/file{i:05d}.py"
        paths.append(rel)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\nVALUE = {i}\n\n\ndef f{i}(x):\n    return x + {i}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    # Packed now, in the foreground: the commit's automatic gc would otherwise pack the
    # loose objects in the background while tasks are being timed.
    git(root, "-c", "gc.auto=0", "commit", "-q", "-m", f"{files} files")
    git(root, "gc", "-q")
    return paths[len(paths) // 2]


def agent_argv(rel: str) -> list[str]:
    return ["/bin/sh", "-c", AGENT_SH, "agent", rel, REPORT.format(path=rel)]


def task_objects(argv: list[str], rel: str) -> tuple[Any, Any, Any, Any]:
    """The plan, its task, the agent and the dispatch, built as tests/test_taskrun.py does."""
    from gsd.formats.agents import Agent
    from gsd.formats.planning.plan import parse
    from gsd.formats.runners.invocation import build_argv
    from gsd.io.dispatch import TaskDispatch

    plan = parse(PLAN.format(path=rel), f".planning/phases/01-alpha/{PLAN_ID}-PLAN.md")
    tools = ["read_file", "write_file", "replace", "run_shell_command"]
    agent = Agent(name="python-pro", tools=tools, runner="command", command=argv)
    dispatch = TaskDispatch(
        wave=1,
        plan=PLAN_ID,
        task=1,
        name="Task 1: change one file",
        type="auto",
        specialist=agent.name,
        specialist_form="attribute",
        agent=agent.name,
        fallback_reason=None,
        tier=agent.tier,
        runner=agent.runner,
        model=None,
        argv=build_argv(agent, None),
        timeout_s=300.0,
        timeout_source="bench",
        grace_s=1.0,
    )
    return plan, plan.tasks[0], agent, dispatch


@contextmanager
def git_environment(home: Path) -> Iterator[None]:
    """A fixed identity and no user or system git config, for gsd and the floor alike."""
    home.mkdir(parents=True, exist_ok=True)
    saved = dict(os.environ)
    os.environ.update(GIT_ENV, HOME=str(home))
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "SKIP_VERIFICATION"):
        os.environ.pop(name, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# --- instrumentation of gsd (wrappers, not edits) -------------------------------------------


class Calls:
    """Git processes and supervised spawns of run_task, recorded while `active`."""

    def __init__(self) -> None:
        self.active = False
        self.git: list[tuple[str, str, float]] = []  # (Git method run_task called, subcommand, s)
        self.supervise: list[float] = []
        self.started = 0  # every git process, those run beside another (GitExec.start) too
        self._undo: list[Callable[[], None]] = []

    def install(self) -> None:
        from gsd.io.git.command import GitExec
        from gsd.io.process import proc

        run_original, supervise_original = GitExec.checked, proc.supervise
        start_original = GitExec.start

        def _start(git_self: Any, *args: Any, **kwargs: Any) -> Any:
            if self.active:
                self.started += 1
            return start_original(git_self, *args, **kwargs)

        def _run(git_self: Any, command: str, *args: str, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return run_original(git_self, command, *args, **kwargs)
            finally:
                if self.active:
                    elapsed = time.perf_counter() - start
                    self.git.append((_caller(sys._getframe(1)), command, elapsed))

        def supervise(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return supervise_original(*args, **kwargs)
            finally:
                if self.active:
                    self.supervise.append(time.perf_counter() - start)

        setattr(GitExec, "checked", _run)  # noqa: B010 (a wrapper, put back by uninstall)
        setattr(GitExec, "start", _start)  # noqa: B010
        setattr(proc, "supervise", supervise)  # noqa: B010
        self._undo = [
            lambda: setattr(GitExec, "checked", run_original),
            lambda: setattr(GitExec, "start", start_original),
            lambda: setattr(proc, "supervise", supervise_original),
        ]

    def uninstall(self) -> None:
        for undo in self._undo:
            undo()


RUN_TASK_MODULES = ("taskrun.py", "taskspawn.py", "taskassess.py")  # run_task's steps


def _caller(frame: Any) -> str:
    """The Git method (or property) that run_task called on the way to this git process."""
    while frame is not None:
        parent = frame.f_back
        if parent is not None and Path(parent.f_code.co_filename).name in RUN_TASK_MODULES:
            return str(frame.f_code.co_name)
        frame = parent
    return "?"


# --- per-task cost ---------------------------------------------------------------------------


class Subjects:
    """The three things timed, one task each per call."""

    def __init__(self, root: Path, rel: str, scratch: Path) -> None:
        from gsd.io.git.repo import Git
        from gsd.run.taskrun import run_task

        self.root, self.rel, self.scratch = root, rel, scratch
        self.argv = agent_argv(rel)
        self.plan, self.task, self.agent, self.dispatch = task_objects(self.argv, rel)
        self.git = Git(root)  # once per run, as one gsd process runs many tasks
        self.run_task = run_task
        scratch.mkdir(parents=True, exist_ok=True)
        self.floor_script = scratch / "floor.sh"
        self.floor_script.write_text(FLOOR_SCRIPT)
        self.agent_out = scratch / "agent-alone.out"
        self.count = 0

    def gsd(self) -> float:
        start = time.perf_counter()
        outcome = self.run_task(
            git=self.git,
            plan=self.plan,
            task=self.task,
            agent=self.agent,
            dispatch=self.dispatch,
            prompt="Append a line to the file.",
        )
        elapsed = time.perf_counter() - start
        if not outcome.success or outcome.commit is None or outcome.changed != [self.rel]:
            raise TaskFailed(
                f"run_task: success={outcome.success} error={outcome.error_type} "
                f"details={outcome.details!r} commit={outcome.commit} changed={outcome.changed}"
            )
        return elapsed

    def agent_alone(self) -> float:
        path = self.root / self.rel
        before = path.read_bytes()
        with open(self.agent_out, "wb") as out:
            start = time.perf_counter()
            done = subprocess.run(
                self.argv, cwd=self.root, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
            elapsed = time.perf_counter() - start
        path.write_bytes(before)  # untimed: the tree is clean again for the next task
        if done.returncode != 0:
            raise TaskFailed(f"agent alone: exit {done.returncode}")
        return elapsed

    def floor(self) -> float:
        self.count += 1
        argv = [
            "bash",
            str(self.floor_script),
            self.rel,
            f"checkpoint/floor/{self.count}",
            f"feat({PLAN_ID}): floor task {self.count}",
        ]
        start = time.perf_counter()
        done = subprocess.run(
            argv, cwd=self.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise TaskFailed(f"floor: exit {done.returncode}: {done.stderr.decode().strip()}")
        return elapsed


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def measure_size(
    tmp: Path, files: int, tasks: int, block: int, warmup: int, calls: Calls, say: Say
) -> dict[str, Any]:
    start = time.perf_counter()
    root = tmp / f"repo-{files}"
    rel = make_repo(root, files)
    made = time.perf_counter() - start
    subjects = Subjects(root, rel, tmp / f"scratch-{files}")
    run = {"gsd": subjects.gsd, "agent": subjects.agent_alone, "floor": subjects.floor}
    for _ in range(warmup):
        for fn in run.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in run}
    calls.git.clear()
    calls.supervise.clear()
    calls.started = 0
    names = list(run)
    rounds = -(-tasks // block)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            for _ in range(min(block, tasks - len(times[name]))):
                calls.active = name == "gsd"
                try:
                    times[name].append(run[name]())
                finally:
                    calls.active = False
    say(
        f"  {files:,} files: repository made in {made:.1f} s; {warmup} warm-up task(s) per "
        f"subject, then {tasks} tasks each in {rounds} rotating rounds of blocks of {block}"
    )
    stats = {name: (statistics.median(v), min(v)) for name, v in times.items()}
    return {
        "files": files,
        "rel": rel,
        "stats": stats,
        "git": list(calls.git),
        "started": calls.started,
        "supervise": list(calls.supervise),
        "tasks": tasks,
        "gsd_times": times["gsd"],
        "per_call": per_call_cost(subjects.git, root),
        "floor_commands": floor_by_command(root, rel),
    }


def per_call_cost(gsd_git: Any, root: Path, runs: int = 15) -> tuple[float, float]:
    """One cheap git command (`rev-parse --git-dir`) via gsd's Git.git and
    via a bare subprocess.run: the fixed cost of one git process, and gsd's share."""
    via_gsd, via_subprocess = [], []
    argv = ["git", "rev-parse", "--git-dir"]
    for _ in range(runs):
        start = time.perf_counter()
        gsd_git.git("rev-parse", "--git-dir")
        via_gsd.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(argv, cwd=root, capture_output=True, stdin=subprocess.DEVNULL)
        via_subprocess.append(time.perf_counter() - start)
    return statistics.median(via_gsd), statistics.median(via_subprocess)


def floor_by_command(root: Path, rel: str, runs: int = 6) -> dict[str, float]:
    """The floor's commands one by one (subprocess.run each), median ms; on alternate
    tasks the commit is gsd's partial form, `git commit --only -- PATH`, instead."""
    times: dict[str, list[float]] = defaultdict(list)

    def timed(label: str, *args: str) -> None:
        start = time.perf_counter()
        done = subprocess.run(args, cwd=root, capture_output=True, stdin=subprocess.DEVNULL)
        times[label].append(time.perf_counter() - start)
        if done.returncode != 0:
            raise TaskFailed(f"{' '.join(args)}: {done.stderr.decode().strip()}")

    for i in range(runs):
        timed("bash start-up (bash -c :)", "bash", "-c", ":")
        with open(root / rel, "a") as handle:
            handle.write("x\n")
        timed("git tag NAME", "git", "tag", f"checkpoint/probe/{i}")
        timed("git add -A", "git", "add", "-A")
        if i % 2 == 0:
            timed("git commit -q -m MSG", "git", "commit", "-q", "-m", f"probe {i}")
        else:
            timed(
                "git commit -q -m MSG --only -- PATH (gsd's form)",
                "git",
                "commit",
                "-q",
                "-m",
                f"probe {i}",
                "--only",
                "--",
                f":(literal){rel}",
            )
        timed("git tag -d NAME", "git", "tag", "-d", f"checkpoint/probe/{i}")
    return {label: statistics.median(v) for label, v in times.items()}


def report_size(result: dict[str, Any], say: Say, table: Table) -> None:
    files, tasks = result["files"], result["tasks"]
    git_calls: list[tuple[str, str, float]] = result["git"]
    gsd_total = sum(result["gsd_times"])
    git_total = sum(s for _, _, s in git_calls)
    supervise_total = sum(result["supervise"])
    agent_med = result["stats"]["agent"][0]
    say(f"-- where gsd's time goes at {files:,} files (mean per task over {tasks} tasks) --")
    rows = [
        [
            f"git processes ({result['started'] / tasks:.0f} per task; "
            f"{len(git_calls) / tasks:.0f} timed via GitExec.checked, the rest run beside them)",
            ms(git_total / tasks),
            f"{git_total / gsd_total:.0%}",
        ],
        [
            "proc.supervise (spawn, wait, registry; agent included)",
            ms(supervise_total / tasks),
            f"{supervise_total / gsd_total:.0%}",
        ],
        [
            "  of which the agent alone (its median above)",
            ms(agent_med),
            f"{agent_med * tasks / gsd_total:.0%}",
        ],
        [
            "everything else in run_task (Python)",
            ms((gsd_total - git_total - supervise_total) / tasks),
            f"{(gsd_total - git_total - supervise_total) / gsd_total:.0%}",
        ],
        ["run_task in all", ms(gsd_total / tasks), "100%"],
    ]
    table(["part", "ms/task", "share"], rows)
    by_method: dict[str, list[float]] = defaultdict(list)
    by_command: dict[str, list[float]] = defaultdict(list)
    for method, command, seconds in git_calls:
        by_method[method].append(seconds)
        by_command[command].append(seconds)
    say("git processes by the Git method or property run_task called:")
    table(
        ["Git method", "git processes/task", "ms/task"],
        [
            [name, f"{len(v) / tasks:g}", ms(sum(v) / tasks)]
            for name, v in sorted(by_method.items(), key=lambda kv: -sum(kv[1]))
        ],
    )
    say("git processes by subcommand:")
    table(
        ["git subcommand", "calls/task", "ms/task", "median ms/call", "max ms/call"],
        [
            [name, f"{len(v) / tasks:g}", ms(sum(v) / tasks), ms(statistics.median(v)), ms(max(v))]
            for name, v in sorted(by_command.items(), key=lambda kv: -sum(kv[1]))
        ],
    )
    say("the floor's commands one by one (subprocess.run each; median of 6, each commit form 3):")
    table(["command", "ms"], [[k, ms(v)] for k, v in result["floor_commands"].items()])
    via_gsd, via_subprocess = result["per_call"]
    say(
        f"one `git rev-parse --git-dir` (median of 15): {ms(via_gsd)} ms via gsd's Git.git "
        f", {ms(via_subprocess)} ms via a bare subprocess.run"
    )
    say("")


# --- the cost of one supervised spawn ---------------------------------------------------------


def supervise_child(argv: list[str]) -> int:
    """In a child that has imported gsd as run_task does: one spawn of a tiny program,
    started four ways (five with Landlock), median ms of `runs` each."""
    scratch, runs = Path(argv[0]), int(argv[1])
    import gsd.run.taskrun  # noqa: F401
    from gsd.io.confine import sandbox
    from gsd.io.process import proc

    program = ["/bin/sh", "-c", ":"]
    out = scratch / "out"

    def popen(argv: list[str] = program, **kwargs: Any) -> None:
        with open(out, "wb") as handle:
            child = subprocess.Popen(
                argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, **kwargs
            )
            child.wait()

    def supervise() -> None:
        proc.supervise(
            program,
            cwd=scratch,
            stdout_path=out,
            stderr_path=out,
            timeout_s=300,
            grace_s=1,
            env=dict(os.environ),
            registry=scratch / "running",
        )

    def supervise_confined() -> None:
        confinement = sandbox.confine(
            tier="read+write",
            runner="claude",
            worktree=scratch,
            tmpdir=scratch,
            home=Path.home(),
            extra=(),
            root=scratch,
            enabled=True,
            environ=os.environ,
        )
        proc.supervise(
            program,
            cwd=scratch,
            stdout_path=out,
            stderr_path=out,
            timeout_s=300,
            grace_s=1,
            env=dict(os.environ),
            registry=scratch / "running",
            confinement=confinement,
        )

    launcher = sandbox.launcher_argv(program, None, os.getpid())
    ways: list[tuple[str, Callable[[], None]]] = [
        ("subprocess.Popen + wait(): vfork", lambda: popen()),
        ("+ start_new_session", lambda: popen(start_new_session=True)),
        (
            "+ through gsd/io/process/launch.py (python -I -S: parent-death signal, exec)",
            lambda: popen(launcher, start_new_session=True),
        ),
        (
            "proc.supervise, as run_task calls it (launcher, registry record, group checks)",
            supervise,
        ),
    ]
    if sandbox.landlock_abi():
        ways.append(
            ("proc.supervise with a Landlock confinement (read+write, claude)", supervise_confined)
        )
    for label, fn in ways:
        print(f"{_median_of(fn, runs)}\t{label}")
    return 0


def _median_of(fn: Callable[[], None], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_supervise(tmp: Path, runs: int, say: Say, table: Table) -> None:
    scratch = tmp / "supervise"
    scratch.mkdir()
    done = subprocess.run(
        [str(VENV_PY), str(Path(__file__).resolve()), "--supervise-child", str(scratch), str(runs)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise TaskFailed(f"supervise child: exit {done.returncode}: {done.stderr}")
    say(f"-- one spawn of /bin/sh -c : (a child process that imported gsd; median of {runs}) --")
    rows = []
    for line in done.stdout.splitlines():
        seconds, label = line.split("\t", 1)
        rows.append([label, ms(float(seconds))])
    table(["how it is started", "ms"], rows)
    say("")


# --- peak memory ----------------------------------------------------------------------------


def memory_child(argv: list[str]) -> int:
    """In the child: run one task whose agent prints `size` bytes; print peak RSS."""
    root, variant, size = Path(argv[0]), argv[1], int(argv[2])
    import gsd.run.taskrun  # noqa: F401  (imports first: their memory is the baseline)
    from gsd.io.git.repo import Git

    after_import = _vm("VmHWM")
    command = memory_agents(size)[variant][0]
    plan, task, agent, dispatch = task_objects(command, "src/pkg000/mod0000/file00000.py")
    outcome = gsd.run.taskrun.run_task(
        git=Git(root), plan=plan, task=task, agent=agent, dispatch=dispatch, prompt="print"
    )
    stdout = root / ".git" / "gsd" / "runs" / f"{PLAN_ID}-1" / "stdout"
    print(
        f"after_import_kb={after_import} peak_kb={_vm('VmHWM')} rss_kb={_vm('VmRSS')} "
        f"stdout={stdout} exit={outcome.exit_code} error_type={outcome.error_type}"
    )
    return 0


def parse_report_peak(stdout: Path) -> int:
    """Bytes that one parse_task_report of the tail run_task reads allocates at its peak."""
    import tracemalloc

    from gsd.formats import taskreport
    from gsd.run import taskassess

    tail = taskassess.tail(stdout)
    tracemalloc.start()
    try:
        taskreport.parse_task_report(tail)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory_agents(size: int) -> dict[str, tuple[list[str], str]]:
    """The agents of the memory part: argv, and the argv as shown."""
    shell = {"y": f"yes | head -c {size}", "ab": f"yes ab | head -c {size}"}
    return {
        "zeros": (["head", "-c", str(size), "/dev/zero"], f"head -c {size} /dev/zero"),
        "y": (["/bin/sh", "-c", shell["y"]], f"/bin/sh -c '{shell['y']}'"),
        "ab": (["/bin/sh", "-c", shell["ab"]], f"/bin/sh -c '{shell['ab']}'"),
    }


MEMORY_LABELS = {
    "zeros": "NUL bytes, no newline",
    "y": "lines 'y' (1 character)",
    "ab": "lines 'ab' (2 characters)",
}


def _vm(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def measure_memory(tmp: Path, size: int, say: Say, table: Table) -> dict[str, float]:
    root = tmp / "repo-memory"
    make_repo(root, 100)
    say(f"== task memory: peak RSS of gsd while an agent prints {size:,} bytes ==")
    say("child: .venv/bin/python bench/task.py --memory-child (imports gsd, calls run_task once)")
    rows = []
    peaks: dict[str, float] = {}
    for variant, (_, shown) in memory_agents(size).items():
        start = time.perf_counter()
        child = subprocess.run(
            [
                str(VENV_PY),
                str(Path(__file__).resolve()),
                "--memory-child",
                str(root),
                variant,
                str(size),
            ],
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - start
        if child.returncode != 0:
            raise TaskFailed(f"memory child ({variant}): exit {child.returncode}: {child.stderr}")
        fields = dict(item.split("=", 1) for item in child.stdout.split())
        stdout = Path(fields["stdout"])
        written = stdout.stat().st_size
        parse_peak = parse_report_peak(stdout)
        stdout.unlink()
        peak = int(fields["peak_kb"]) / 1024
        peaks[variant] = peak
        rows.append(
            [
                shown,
                MEMORY_LABELS[variant],
                f"{written:,}",
                fields["error_type"],
                f"{int(fields['after_import_kb']) / 1024:.1f}",
                f"{peak:.1f}",
                f"{parse_peak / 2**20:.1f}",
                f"{took:.1f}",
            ]
        )
    table(
        [
            "agent",
            "output",
            "stdout bytes",
            "outcome",
            "MB after imports",
            "peak MB (VmHWM)",
            "parse_task_report MB",
            "s",
        ],
        rows,
    )
    say(
        "VmHWM: the peak RSS of the gsd process's own address space since its exec "
        "(/proc/self/status, read at the end). Not ru_maxrss from wait4 or RUSAGE_CHILDREN: "
        "Linux charges a child started by subprocess (vfork, then exec) with its parent's "
        "peak RSS at the exec, so from here it would report this benchmark's own peak."
    )
    say(
        "parse_task_report MB: tracemalloc peak of one taskreport.parse_task_report() of the "
        f"output's last {4 << 20:,} bytes (taskassess.tail), run in this process afterwards."
    )
    say(
        "outcome: the agent prints no Task Report and changes nothing, so the task fails "
        "(result-unparsable) and gsd rolls back: the whole run_task path, parsing included."
    )
    for variant, peak in peaks.items():
        say(
            f"peak memory of gsd, {MEMORY_LABELS[variant]}: {peak:.1f} MB, target < "
            f"{MEMORY_TARGET_MB:.0f} MB: {'MET' if peak < MEMORY_TARGET_MB else 'MISSED'}"
        )
    say("")
    return peaks


# --- the benchmark --------------------------------------------------------------------------


def bench_task(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, float]:
    sizes = [100, 2_000] if quick else [100, 20_000]
    tasks, block, warmup = (4, 2, 1) if quick else (30, 5, 2)
    say("== task: gsd's own cost per task (run_task in this process) against a git floor ==")
    say(f"agent: /bin/sh -c '{AGENT_SH}' agent FILE REPORT (shell built-ins only)")
    say("gsd:   gsd.run.taskrun.run_task(...) in this process (imports excluded), one Git object")
    say("agent: the agent argv alone, subprocess.run, stdin /dev/null, output to a file")
    say("floor: bash floor.sh: echo x >> FILE; git tag; git add -A; git commit -q -m; git tag -d")
    say("gsd own = run_task - agent alone; ratio = gsd own / floor; times in ms")
    say(f"sizes: {', '.join(f'{n:,}' for n in sizes)} files, {FILES_PER_DIR} per folder")
    out: dict[str, float] = {}
    results = []
    calls = Calls()
    with git_environment(tmp / "home"):
        calls.install()
        try:
            for files in sizes:
                results.append(measure_size(tmp, files, tasks, block, warmup, calls, say))
        finally:
            calls.uninstall()
        say("")
        rows = []
        for result in results:
            files, stats = result["files"], result["stats"]
            (g_med, g_min), (a_med, a_min) = stats["gsd"], stats["agent"]
            f_med, f_min = stats["floor"]
            own_med, own_min = g_med - a_med, g_min - a_min
            ratio, ratio_min = own_med / f_med, own_min / f_min
            out[f"task_ratio_{files}"] = ratio
            out[f"task_git_{files}"] = result["started"] / result["tasks"]
            rows.append(
                [
                    f"{files:,}",
                    str(result["tasks"]),
                    ms(g_med),
                    ms(g_min),
                    ms(a_med),
                    ms(a_min),
                    ms(own_med),
                    ms(own_min),
                    ms(f_med),
                    ms(f_min),
                    f"{ratio:.2f}x",
                    f"{ratio_min:.2f}x",
                ]
            )
        table(
            [
                "files",
                "tasks",
                "run_task med",
                "run_task min",
                "agent med",
                "agent min",
                "gsd own med",
                "gsd own min",
                "floor med",
                "floor min",
                "ratio",
                "ratio (mins)",
            ],
            rows,
        )
        for result in results:
            files = result["files"]
            ratio = out[f"task_ratio_{files}"]
            say(
                f"per-task ratio at {files:,} files (median gsd own / median floor): "
                f"{ratio:.2f}x, target <= {ratio_target(files):g}x: "
                f"{'MET' if ratio <= ratio_target(files) else 'MISSED'}"
            )
        say("")
        for result in results:
            report_size(result, say, table)
        measure_supervise(tmp, 10 if quick else 40, say, table)
        peaks = measure_memory(tmp, (64 << 20) if quick else ONE_GIB, say, table)
        out.update({f"task_memory_{variant}": peak for variant, peak in peaks.items()})
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory-child"]:
        raise SystemExit(memory_child(sys.argv[2:]))
    if sys.argv[1:2] == ["--supervise-child"]:
        raise SystemExit(supervise_child(sys.argv[2:]))
    sys.exit("bench/task.py is run by bench/run.py: .venv/bin/python bench/run.py --only task")
