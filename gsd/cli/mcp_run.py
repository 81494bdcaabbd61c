"""`gsd mcp --allow-run`: the tools that run plans, beside the read-only ones.

execute_phase and execute_plan start `gsd execute-phase` (`--plan`) or `gsd
execute-plan` as a separate process in a session of its own (gsd.io.background): the
same code, run lock, sandbox and logs as the command, and it goes on when this server
ends. run_status and progress read the run's own state (gsd.cli.mcp_watch);
run_stop is Ctrl-C (SIGINT to the lock's holder: every agent ended, every attempt rolled
back); approve is `gsd approve`, with its refusals. Nothing here takes `--auto` or
`--allow-dirty`: a human checkpoint still waits for a person's approve.

Not served without `--allow-run`, nor to an agent a gsd run started (GSD_TASK is in its
environment, or the run is among the server's ancestors): calling them then is an
error result of one line.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcp.types import CallToolResult, ToolAnnotations

from gsd.core.errors import GsdError, UsageError

STARTUP_S = 30.0  # how long execute_* waits for the run to log its start (or end)
STOP_S = 60.0  # run_stop's default wait; at most MAX_STOP_S
MAX_STOP_S = 600.0
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Register = Callable[..., Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]]


def start_data(args: list[str]) -> tuple[dict[str, object], str]:
    """Start `gsd ARGS` in the background unless a run is live; wait until it has logged
    its start or ended (a refusal before anything ran is an error, with its output)."""
    from gsd.cli import mcp_watch
    from gsd.commands.show import here
    from gsd.io import background

    project = here()
    live = background.running_pid(project.root)
    if live is not None:
        raise GsdError(
            f"a gsd run is live in {project.root} already (pid {live})",
            hint="watch it with run_status, or stop it with run_stop",
        )
    launch, process = background.start(project.root, args)
    deadline = time.monotonic() + STARTUP_S
    status = mcp_watch.run_status(project)
    while time.monotonic() < deadline and process.poll() is None:
        status = mcp_watch.run_status(project)
        if status.state == "running" and status.pid == launch.pid and status.phase:
            break
        time.sleep(0.2)
    code = process.poll()
    if code is not None:
        status = mcp_watch.run_status(project)
    said = background.output_tail(launch)
    if code not in (None, 0, 1, 4):  # 2: refused before anything ran; 128+: a signal
        last = said.splitlines()[-1].removeprefix("gsd: error: ") if said else "no output"
        raise GsdError(
            f"gsd {' '.join(args)} exited {code}: {last}", hint=f"its output: {launch.output}"
        )
    data: dict[str, object] = {
        "running": code is None,
        "pid": launch.pid,
        "output": str(launch.output),
        "exit_code": code,
        "status": status.to_json(),
    }
    head = (
        f"started gsd {' '.join(args)} in the background (pid {launch.pid}); "
        "watch it with run_status and progress"
        if code is None
        else f"gsd {' '.join(args)} ended at once with exit {code}:\n{said}"
    )
    return data, f"{head}\n{mcp_watch.status_text(status)}"


def phase_args(phase: str, wave: int | None, plan: str | None, timeout: float | None) -> list[str]:
    """`execute-phase PHASE` and its options, the phase and plan checked here first (the
    one-line error, its "did you mean", before any process starts)."""
    from gsd.commands.show import here

    project = here()
    found = project.phase(phase)
    args = ["execute-phase", found.number]
    if plan is not None:
        project.find_plan(plan)
        args += ["--plan", plan]
    if wave is not None:
        args += ["--wave", str(wave)]
    return args + (["--timeout", f"{timeout:g}"] if timeout is not None else [])


def plan_args(plan: str, timeout: float | None) -> list[str]:
    from gsd.commands.show import here
    from gsd.core.ids import is_plan_id

    if not is_plan_id(plan):
        raise UsageError(f"{plan!r} is not a plan id", hint="plan ids look like 01-02")
    here().find_plan(plan)
    return ["execute-plan", plan] + (["--timeout", f"{timeout:g}"] if timeout is not None else [])


def status_data() -> tuple[dict[str, object], str]:
    from gsd.cli import mcp_watch
    from gsd.commands.show import here

    status = mcp_watch.run_status(here())
    return status.to_json(), mcp_watch.status_text(status)


def stop_data(wait_s: float) -> tuple[dict[str, object], str]:
    from gsd.cli import mcp_watch
    from gsd.commands.show import here
    from gsd.io import background

    if not 0 < wait_s <= MAX_STOP_S:
        raise UsageError(f"wait_s {wait_s:g}: give 0 < wait_s <= {MAX_STOP_S:g} seconds")
    project = here()
    pid, ended = background.stop(project.root, wait_s)
    status = mcp_watch.run_status(project)
    head = (
        f"the run (pid {pid}) stopped: every agent ended, its attempts rolled back"
        if ended
        else f"the run (pid {pid}) was sent SIGINT and is still stopping after "
        f"{wait_s:g} s (run_status says when it has)"
    )
    return {"pid": pid, "stopped": ended, "status": status.to_json()}, (
        f"{head}\n{mcp_watch.status_text(status)}"
    )


def approve_data(plan: str, task: int | None, option: str | None) -> tuple[dict[str, object], str]:
    from gsd.commands.show import here
    from gsd.io.plans import approvals

    if task is not None and task < 1:
        raise UsageError(f"task {task}: task numbers start at 1")
    line = approvals.approve(here(), plan, task, option)
    return {"approved": line, "plan": plan}, line


def progress_data(phase: str | None) -> tuple[dict[str, object], str]:
    from dataclasses import asdict

    from gsd.cli import mcp_watch
    from gsd.commands.show import here

    plans = mcp_watch.progress(here(), phase)
    return {"plans": [asdict(p) for p in plans]}, mcp_watch.progress_text(plans)


def add_tools(tool: Register, answer: Callable[..., CallToolResult]) -> None:
    """The run tools, registered with `tool(annotations=...)`; `answer` makes a result."""

    @tool(annotations=WRITES)
    def execute_phase(
        phase: str, wave: int | None = None, plan: str | None = None, timeout: float | None = None
    ) -> CallToolResult:
        """Start `gsd execute-phase PHASE` in the background (supervised, sandboxed,
        under the run lock, logged as from the shell; a commit per task, plans merged).
        Returns once the run has started; watch it with run_status and progress, stop it
        with run_stop. Only one run at a time; a human checkpoint pauses it (approve)."""
        return answer(lambda: start_data(phase_args(phase, wave, plan, timeout)))

    @tool(annotations=WRITES)
    def execute_plan(plan: str, timeout: float | None = None) -> CallToolResult:
        """Start `gsd execute-plan PLAN` (one plan whose dependencies are done) in the
        background, as execute_phase does."""
        return answer(lambda: start_data(plan_args(plan, timeout)))

    @tool(annotations=READS)
    def run_status() -> CallToolResult:
        """The live run (or the last one): state, phase, wave, the tasks running (plan,
        task, agent, attempt, elapsed), attempts, commits, tokens and cost so far."""
        return answer(status_data)

    @tool(annotations=WRITES)
    def run_stop(wait_s: float = STOP_S) -> CallToolResult:
        """Stop the live run as Ctrl-C does: every agent ended, each attempt rolled back,
        the lock released; waits up to wait_s seconds (at most 600) and says if it ended."""
        return answer(lambda: stop_data(wait_s))

    @tool(annotations=WRITES)
    def approve(plan: str, task: int | None = None, option: str | None = None) -> CallToolResult:
        """Answer a human checkpoint of a plan, or approve a plan-first task's proposal,
        as `gsd approve PLAN [--task N] [--option ID]` (refused while a run is live); the
        next execute_phase continues past it."""
        return answer(lambda: approve_data(plan, task, option))

    @tool(annotations=READS)
    def progress(phase: str | None = None) -> CallToolResult:
        """Each plan (of one phase, if given): status (done, running, paused, failed, in
        progress, pending), tasks committed of all, and its last logged event."""
        return answer(lambda: progress_data(phase))
