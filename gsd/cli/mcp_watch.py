"""What a run is doing and what the plans came to, from the run's own state: the run lock
(who runs, since when), the journal of log lines not committed yet (.git/gsd/journal),
the per-plan logs of the checkout and of the plans' worktrees (.planning/logs/), and
the commits. Never from what a run printed. `gsd mcp --allow-run`'s run_status and
progress tools answer with these records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from gsd.core import layout
from gsd.formats import execlog
from gsd.formats.execlog import LogEvent
from gsd.io import background
from gsd.io.git import command as gitexec
from gsd.io.lock import live_holder
from gsd.io.plans.project import Project

_JOURNAL_SIDE = "side.jsonl"
_JOURNAL_PLANS = "plans"


def run_events(project: Project) -> list[LogEvent]:
    """Every event a run logged, wherever it is now: the checkout's logs, the journal
    (lines not committed yet) and each linked worktree's logs (a plan's lines before its
    merge); each line once, in time order."""
    planning_rel = project.planning.relative_to(project.root)
    found, _ = execlog.read_all(project.planning)
    git_dir, worktrees = _git_places(project.root)
    if git_dir is not None:
        journal = layout.journal_dir(git_dir)
        paths = [journal / _JOURNAL_SIDE, *sorted((journal / _JOURNAL_PLANS).glob("*.jsonl"))]
        for path in paths:
            found += execlog.read_split(path)[0] if path.is_file() else []
    for tree in worktrees:
        if tree != project.root:
            for path in execlog.log_files(tree / planning_rel):
                found += execlog.read_split(path)[0]
    seen: set[str] = set()
    unique = []
    for event in found:
        key = json.dumps(event, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(event)
    return sorted(unique, key=lambda e: str(e.get("ts", "")))


def _git_places(root: Path) -> tuple[Path | None, list[Path]]:
    """The checkout's git dir and every worktree of the repository ([] without git)."""
    done = gitexec.call(["rev-parse", "--absolute-git-dir"], cwd=root, read_only=True)
    if done.status != 0:
        return None, []
    listed = gitexec.call(["worktree", "list", "--porcelain"], cwd=root, read_only=True)
    trees = [
        Path(line.removeprefix("worktree "))
        for line in listed.stdout.splitlines()
        if line.startswith("worktree ")
    ]
    return Path(done.stdout.strip()), trees


def _when(stamp: object) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _seconds(start: object, end: datetime) -> float | None:
    began = _when(start)
    return None if began is None else round((end - began).total_seconds(), 1)


@dataclass(frozen=True)
class RunningTask:
    """An attempt under way: spawned, not answered yet; `tokens` its agent's stream
    reported so far (None: nothing yet)."""

    plan: str
    task: int
    agent: str
    attempt: int
    step: str
    since: str
    elapsed_s: float | None
    tokens: int | None


@dataclass(frozen=True)
class RunStatus:
    """The live or last run: `state` is running, complete, paused (at a human
    checkpoint), stopped (a task failed or a merge could not be made), interrupted (a
    signal), ended (no run-end logged: killed, crashed or nothing to do) or none."""

    state: str
    pid: int | None = None
    command: list[str] = field(default_factory=list)
    phase: str | None = None
    started: str | None = None
    elapsed_s: float | None = None
    wave: int | None = None
    wave_plans: list[str] = field(default_factory=list)
    running: list[RunningTask] = field(default_factory=list)
    attempts: int = 0
    commits: int = 0
    failed_attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    last_event: dict[str, object] | None = None
    background: dict[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def this_run(events: list[LogEvent]) -> list[LogEvent]:
    """The events from the last run-start on (the last run's, or the live one's)."""
    starts = [i for i, e in enumerate(events) if e.get("event") == "run-start"]
    return events[starts[-1] :] if starts else []


def run_status(project: Project, logged: list[LogEvent] | None = None) -> RunStatus:
    """The live run's wave, running tasks (plan, task, agent, attempt, elapsed), tokens
    and cost so far, or how the last run ended (`logged`: `run_events`, when the caller
    has read them already)."""
    from gsd.io.lock import common_git_dir

    now = datetime.now(timezone.utc)
    holder = live_holder(common_git_dir(project.root))
    launch = background.latest(project.root)
    events = this_run(run_events(project) if logged is None else logged)
    started = events[0].get("ts") if events else None
    launched = launch is not None and background.still_running(launch)
    if launch is not None and not launched and launch.exit_code is None:
        launch = background.latest(project.root)  # ended just now: its exit status
    since = holder.get("started") if holder else launch.started if launch and launched else None
    if since is not None and _newer(since, started):
        events, started = [], since  # the live run has logged nothing yet
    ended = next((e for e in reversed(events) if e.get("event") == "run-end"), None)
    if holder is not None or launched:
        state = "running"  # or starting, or ending: the lock is not all of it
    elif ended is not None:
        state = str(ended.get("status", "ended"))
        if state == "stopped" and any(e.get("event") == "checkpoint-paused" for e in events):
            state = "paused"  # at a human checkpoint: approve it, then run again
    else:
        state = "ended" if events else "none"
    end = now if state == "running" or ended is None else (_when(ended.get("ts")) or now)
    results = [e for e in events if e.get("event") == "result"]
    waves = [e for e in events if e.get("event") == "wave-start"]
    argv = holder.get("argv") if holder else None
    return RunStatus(
        state=state,
        pid=holder.get("pid") if holder else None,  # type: ignore[arg-type]
        command=[str(a) for a in argv] if isinstance(argv, list) else [],
        phase=str(events[0].get("phase")) if events else None,
        started=str(started) if started else None,
        elapsed_s=_seconds(started, end) if started else None,
        wave=waves[-1].get("wave") if waves else None,
        wave_plans=list(waves[-1].get("plans") or []) if waves else [],
        running=_running(events, now, project.root) if holder is not None else [],
        attempts=len(results),
        commits=sum(e.get("event") == "commit" for e in events),
        failed_attempts=sum(not e.get("success") for e in results),
        input_tokens=int(sum(_number(e.get("input_tokens")) for e in results)),
        output_tokens=int(sum(_number(e.get("output_tokens")) for e in results)),
        cost_usd=round(sum(float(_number(e.get("cost_usd"))) for e in results), 6),
        last_event=_brief(events[-1]) if events else None,
        background=launch.to_json() if launch is not None else None,
    )


def _newer(stamp: object, than: object) -> bool:
    """Did the lock's holder start after the last run-start (a run not logging yet)?"""
    mine, theirs = _when(stamp), _when(than)
    if mine is None:
        return False
    return theirs is None or mine > theirs.replace(microsecond=0)


def _number(value: object) -> int | float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _running(events: list[LogEvent], now: datetime, root: Path) -> list[RunningTask]:
    """The attempts spawned and not answered yet: each plan's last spawn without a result,
    with the tokens its agent's stream has reported so far."""
    from gsd.io.lock import common_git_dir

    open_: dict[tuple[object, object], LogEvent] = {}
    for e in events:
        key = (e.get("plan"), e.get("task"))
        if e.get("event") == "spawn":
            open_[key] = e
        elif e.get("event") == "result":
            open_.pop(key, None)
    common = common_git_dir(root) if open_ else root
    return [
        RunningTask(
            plan=str(e.get("plan")),
            task=int(_number(e.get("task"))),
            agent=str(e.get("agent")),
            attempt=int(_number(e.get("attempt"))),
            step=str(e.get("step") or "first"),
            since=str(e.get("ts")),
            elapsed_s=_seconds(e.get("ts"), now),
            tokens=live_tokens(common, e),
        )
        for e in open_.values()
    ]


def live_tokens(common: Path, spawn: LogEvent) -> int | None:
    """The tokens a running attempt's agent has reported so far in its stream (the
    stdout gsd keeps in `.git/gsd/runs/<task>/` of the checkout it runs in, written
    since its spawn), as the token budget reads them; None when there is none yet."""
    from gsd.io.process.budgetwatch import BudgetWatch

    plan, task, began = spawn.get("plan"), spawn.get("task"), _when(spawn.get("ts"))
    if not isinstance(plan, str) or not isinstance(task, int) or began is None:
        return None
    places = [common, *sorted((common / layout.WORKTREES).glob("*"))]
    found = [layout.run_dir(p, plan, task) / "stdout" for p in places]
    fresh = [f for f in found if f.is_file() and f.stat().st_mtime >= began.timestamp() - 1]
    if not fresh:
        return None
    newest = max(fresh, key=lambda f: f.stat().st_mtime)
    # the spawn event does not name the runner: each runner's reading; the others find 0
    counts = []
    for runner in ("claude", "codex", "gemini"):
        watch = BudgetWatch(newest, runner, abort=1 << 62)
        watch()
        counts.append(watch.tokens)
    return max(counts)


def _brief(e: LogEvent) -> dict[str, object]:
    keys = ("ts", "event", "plan", "task", "attempt", "wave", "status", "success")
    return {k: e[k] for k in keys if k in e}


@dataclass(frozen=True)
class PlanProgress:
    """One plan: its status (as `gsd status` says), tasks committed of all, last event."""

    phase: str
    plan: str
    wave: int | None
    status: str
    tasks_done: int
    tasks_total: int
    last_event: dict[str, object] | None


def progress(project: Project, phase: str | None = None) -> list[PlanProgress]:
    """Each plan of the project (of `phase` only, when given) with its last logged event;
    a plan with a task under way in the live run is `running`."""
    from gsd.commands.progress import project_status

    wanted = project.phase(phase).name if phase is not None else None
    events = run_events(project)
    last: dict[str, LogEvent] = {}
    for e in events:
        if isinstance(e.get("plan"), str):
            last[e["plan"]] = e
    live = {t.plan for t in run_status(project, events).running}
    found = []
    for each in project_status(project).phases:
        if wanted is not None and each.phase != wanted:
            continue
        for plan in each.plans:
            found.append(
                PlanProgress(
                    phase=each.phase,
                    plan=plan.plan,
                    wave=plan.wave,
                    status="running" if plan.plan in live else plan.status,
                    tasks_done=len(plan.committed_tasks),
                    tasks_total=plan.tasks,
                    last_event=_brief(last[plan.plan]) if plan.plan in last else None,
                )
            )
    return found


def progress_text(plans: list[PlanProgress]) -> str:
    """One line a plan: `01-02 running 1/3 tasks, last: spawn task 2 (12:00:01Z)`."""
    lines = []
    for p in plans:
        seen = p.last_event
        said = (
            f", last: {seen.get('event')}"
            + (f" task {seen['task']}" if "task" in seen else "")
            + f" ({seen.get('ts')})"
            if seen
            else ""
        )
        lines.append(f"{p.plan} {p.status} {p.tasks_done}/{p.tasks_total} tasks{said}")
    return "\n".join(lines) or "no plans"


def status_text(status: RunStatus) -> str:
    """The run's status in a few lines for the model to read."""
    head = f"run {status.state}"
    if status.phase:
        head += f": phase {status.phase}"
    if status.elapsed_s is not None:
        head += f", {status.elapsed_s:g} s"
    lines = [head]
    if status.wave is not None:
        lines.append(f"wave {status.wave}: {', '.join(status.wave_plans)}")
    for t in status.running:
        lines.append(
            f"running: plan {t.plan} task {t.task} {t.agent} attempt {t.attempt} "
            f"({t.step}), {t.elapsed_s} s"
            + (f", {t.tokens} tokens so far" if t.tokens is not None else "")
        )
    lines.append(
        f"{status.attempts} attempts, {status.commits} commits, {status.failed_attempts} "
        f"failed; tokens {status.input_tokens} in, {status.output_tokens} out; "
        f"${status.cost_usd:g}"
    )
    if status.background and status.background.get("exit_code") is not None:
        lines.append(f"background run exited {status.background['exit_code']}")
    return "\n".join(lines)
