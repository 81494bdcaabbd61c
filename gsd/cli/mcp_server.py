"""`gsd mcp`: gsd's read-only commands as MCP tools over stdio, on the official MCP SDK.

Each tool answers with the JSON the matching command prints with `--format json`
(structured content) and a short text for the model to read; a problem the caller can
fix (an unknown phase, a bad path) is an error result (`isError`) with gsd's one line,
never the end of the server. Nothing here writes to the repository; `--allow-run`
adds the tools that run plans (gsd.cli.mcp_run).
The SDK (mcp 2.x) is imported only here: `pip install 'gsd-plans[mcp]'`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from gsd import __version__
from gsd.core.errors import GsdError
from gsd.core.visible import visible

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
SHOWN_LINES = 40  # of a long text answer; the structured content always has everything

INSTRUCTIONS = (
    "gsd reads the GSD plans of the project in the server's working directory "
    "(.planning/): validate them, show plans and waves, status, failed attempts, the "
    "last run's report, what execute-phase would run, and the context a task's agent "
    "gets. Every tool is read-only."
)


def answer(produce: Callable[[], tuple[dict[str, object], str]]) -> CallToolResult:
    """A tool's result: `produce`'s data as structured content and its text; a GsdError
    (bad input) as an error result carrying gsd's one line."""
    try:
        data, text = produce()
    except GsdError as exc:
        raise ToolError(visible(f"gsd: error: {exc}")) from None
    shown = visible(text, lines=True)  # an agent's text, as the terminal shows it
    return CallToolResult(content=[TextContent(type="text", text=shown)], structured_content=data)


def capped(text: str, warnings: Sequence[str] = ()) -> str:
    """`text` after the warnings, cut to SHOWN_LINES lines with a note of the rest."""
    lines = [f"warning: {w}" for w in warnings] + text.rstrip("\n").splitlines()
    if len(lines) > SHOWN_LINES:
        rest = len(lines) - SHOWN_LINES
        lines = lines[:SHOWN_LINES] + [f"... {rest} more lines (the structured content has all)"]
    return "\n".join(lines)


def as_json(rendered: str) -> dict[str, object]:
    """A command's `--format json` output as data (the same renderer, so the same JSON)."""
    data: dict[str, object] = json.loads(rendered)
    return data


def validate_data(path: str | None, phase: str | None) -> tuple[dict[str, object], str]:
    from gsd.cli import lint
    from gsd.output import render

    # jobs=1: validate forks workers for big trees, and this process has threads (the
    # SDK runs each tool in one); a fork there may copy a lock another thread holds
    options = lint.Options(paths=[path] if path else [], phase=phase, fmt="json", jobs=1)
    _, report = lint.validate_options(options)
    return as_json(render.as_json(report)), capped(render.text(report) + render.summary(report))


def show_data(target: str) -> tuple[dict[str, object], str]:
    from gsd.commands.show import plan_views
    from gsd.output import views

    plans, warnings = plan_views(target)
    return as_json(views.render_plans(plans, "json")), capped(
        views.render_plans(plans, "text"), warnings
    )


def waves_data(phase: str) -> tuple[dict[str, object], str]:
    from gsd.commands.show import here, waves_view
    from gsd.output import views

    project = here()
    found = project.phase(phase)
    view = waves_view(found.name, project.phase_graph(found), found.milestone)
    return as_json(views.render_waves(view, "json")), capped(views.render_waves(view, "text"))


def status_data() -> tuple[dict[str, object], str]:
    from gsd.cli.shared import planned_project
    from gsd.commands import progress
    from gsd.output import statusview

    status = progress.project_status(planned_project())
    return as_json(statusview.render(status, "json")), capped(statusview.render(status, "text"))


def errors_data(**filters: str | None) -> tuple[dict[str, object], str]:
    from gsd.commands.failures import error_records
    from gsd.output.views import render_errors

    records, warnings = error_records(**filters)
    return as_json(render_errors(records, "json")), capped(render_errors(records, "text"), warnings)


def report_data(every_run: bool) -> tuple[dict[str, object], str]:
    from gsd.commands.report import run_report
    from gsd.output import reportview

    built, warnings = run_report(every_run)
    return as_json(reportview.render(built, "json")), capped(
        reportview.render(built, "text"), warnings
    )


def snapshot_data(session: str | None) -> tuple[dict[str, object], str]:
    from gsd.cli.shared import planned_project
    from gsd.io.snapshots import saved_snapshot

    root = planned_project().root
    path, text = saved_snapshot(root, session)
    shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return {"path": shown, "session": path.stem, "snapshot": text}, capped(text)


def dry_run_data(
    phase: str, wave: int | None, plan: str | None, timeout: float | None
) -> tuple[dict[str, object], str]:
    from gsd.commands.dryrun import dry_run_tasks, phase_validation
    from gsd.commands.estimate import estimates
    from gsd.commands.show import here
    from gsd.output.estimateview import render

    project = here()
    found = project.phase(phase)
    listed, warnings = phase_validation(project, found)
    tasks = dry_run_tasks(project, found, warnings.extend, wave=wave, plan_id=plan, timeout=timeout)
    estimated = estimates(project, tasks)  # each task's, as `execute-phase --dry-run` shows it
    text = render(found.name, tasks, "text", estimated)
    return as_json(render(found.name, tasks, "json", estimated)), capped(listed + text, warnings)


def context_chain_data(plan: str, task: int) -> tuple[dict[str, object], str]:
    from gsd.commands.show import context_chain

    chain = context_chain(plan, task)
    waiting = [str(t.task) for t in chain.earlier_tasks if t.state == "not run"]
    which = f"task {waiting[0]} has" if len(waiting) == 1 else f"tasks {', '.join(waiting)} have"
    note = f"({which} not run yet: a run would carry what they report)\n\n" if waiting else ""
    return chain.to_json(), note + chain.context_chain


RUN_INSTRUCTIONS = (
    "gsd reads and runs the GSD plans of the project in the server's working directory "
    "(.planning/). The read-only tools validate and show plans, waves, status, failed "
    "attempts, reports and dry runs. execute_phase and execute_plan start a supervised "
    "run in the background (one at a time); run_status and progress watch it, run_stop "
    "stops it (its attempts rolled back), approve answers a human checkpoint."
)


class GsdServer(MCPServer):
    """The SDK's server, with a run tool's call refused in one line where it is not served."""

    def __init__(self, allow_run: bool) -> None:
        from gsd.cli import mcp_gate

        self.allow_run = allow_run
        self.run_tools = mcp_gate.serves_run_tools(allow_run)
        said = RUN_INSTRUCTIONS if self.run_tools else INSTRUCTIONS
        super().__init__("gsd", version=__version__, instructions=said, log_level="WARNING")

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from gsd.cli import mcp_gate

        if name in mcp_gate.RUN_TOOLS and not self.run_tools:
            raise ToolError(mcp_gate.refusal(name, self.allow_run))
        return await super().call_tool(name, arguments, context)


def build_server(allow_run: bool = False) -> MCPServer:
    """The server with the read-only tools, and the run tools with `allow_run` (not for
    an agent a gsd run started); `serve` runs it on stdio."""
    server = GsdServer(allow_run)
    add_plan_tools(server.tool(annotations=READ_ONLY))
    add_run_tools(server.tool(annotations=READ_ONLY))
    if server.run_tools:
        from gsd.cli import mcp_run

        mcp_run.add_tools(server.tool, answer)
    return server


Register = Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]


def add_plan_tools(tool: Register) -> None:
    """The tools over the plans themselves: validate, show, waves, context_chain."""

    @tool
    def validate(path: str | None = None, phase: str | None = None) -> CallToolResult:
        """Check plan files as `gsd validate --format json` does: a plan file or folder
        (path), one phase (a number such as 1 or 02.1), or all of .planning/ (neither)."""
        return answer(lambda: validate_data(path, phase))

    @tool
    def show(target: str) -> CallToolResult:
        """A plan file, a plan id (01-02) or a phase (1, 01-setup): its plans, their tasks
        and the agent each task gets, as `gsd show --format json`."""
        return answer(lambda: show_data(target))

    @tool
    def waves(phase: str) -> CallToolResult:
        """A phase's schedule: its waves, the plans in each that run one after another,
        the critical path and any cycle, as `gsd waves --format json`."""
        return answer(lambda: waves_data(phase))

    @tool
    def context_chain(plan: str, task: int) -> CallToolResult:
        """What the delegation prompt of a task (plan id such as 01-02, task number)
        carries as context: the earlier tasks' Downstream Context and the SUMMARY.md of
        each plan it depends on, with the prompt's placeholder where one is missing."""
        return answer(lambda: context_chain_data(plan, task))


def add_run_tools(tool: Register) -> None:
    """The tools over what runs did and would do: status, errors, report, snapshot,
    dry_run."""

    @tool
    def status() -> CallToolResult:
        """Each phase's plans (done, paused, failed, in progress or pending, with their
        committed tasks) and the open blockers of STATE.md, as `gsd status --format json`."""
        return answer(status_data)

    @tool
    def errors(
        phase: str | None = None,
        plan: str | None = None,
        specialist: str | None = None,
        type: str | None = None,
        since: str | None = None,
    ) -> CallToolResult:
        """Failed task attempts of past runs, as `gsd errors --format json`; filters: a
        phase, a plan, an agent (specialist), an error type (timeout, ...) and since
        (2026-02-23, 2026-02-23T14:00Z, 30m, 2h, 7d)."""
        return answer(
            lambda: errors_data(
                phase=phase, plan_id=plan, specialist=specialist, error_type=type, since=since
            )
        )

    @tool
    def report(all_runs: bool = False) -> CallToolResult:
        """The last run (every run with all_runs): its timeline of spawns, results,
        retries and commits, and attempts, seconds, tokens and cost per agent and per
        plan, as `gsd report --format json`."""
        return answer(lambda: report_data(all_runs))

    @tool
    def snapshot(session: str | None = None) -> CallToolResult:
        """The plan state gsd's pre-compact hook saved before the agent CLI compacted its
        context (this session's, else the newest): the status, the last run and the
        uncommitted plan files as they were then. Nothing is changed."""
        return answer(lambda: snapshot_data(session))

    @tool
    def dry_run(
        phase: str, wave: int | None = None, plan: str | None = None, timeout: float | None = None
    ) -> CallToolResult:
        """What `gsd execute-phase PHASE --dry-run --format json` says: each task's wave,
        plan, agent, tier, runner, argv, timeout and sandbox. Nothing is run or changed."""
        return answer(lambda: dry_run_data(phase, wave, plan, timeout))


def serve(allow_run: bool = False) -> None:
    """Serve on stdin and stdout until the client closes them."""
    build_server(allow_run).run("stdio")
