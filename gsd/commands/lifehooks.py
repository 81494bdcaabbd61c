"""The lifecycle hooks `gsd hooks install --claude|--gemini --hook NAME` adds (SPEC 0 of
2026-11-27, the design's six hooks): session end, before a tool, after a delegated agent,
before context compaction. What each CLI sends and takes is in
gsd/formats/runners/agenthooks.py; none of these ever blocks the agent's work except the
before-a-tool deny, and a problem is one line on stderr with exit 1 (clihooks.call).

The before-a-tool hook runs on every shell call, so this module imports little: what
the other hooks need is imported inside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsd.core.words import plural
from gsd.formats.runners import agenthooks
from gsd.formats.runners.agenthooks import (
    AFTER_AGENT,
    PRE_COMPACT,
    PRE_TOOL,
    SESSION_END,
    Answer,
    HookInput,
)

if TYPE_CHECKING:
    from pathlib import Path

    from gsd.commands.progress import ProjectStatus
    from gsd.io.plans.project import Project

# What the model is told to use instead of the shell, by CLI.
_EDIT_TOOLS = {"claude": "Write or Edit", "gemini": "write_file or replace"}
_STATUS_LINES = 12  # what a session start may cost the agent's context, at most
_PLAN_LINES = 8  # plans of the last run listed at a session's end, at most
_RENEW_SECONDS = 60  # a snapshot gemini's every-turn "auto" PreCompress leaves as it is
# gsd's delegation prompt names its task: "Task 2 of plan `01-03`, type `auto`."
_TASK_OF_PLAN = r"Task (\d+) of plan `([^`\n]+)`"
_PLAN_FILE = r"(\d+(?:\.\d+)*-\d+)-PLAN\.md"


def run(cli: str, what: str, hook_input: HookInput) -> Answer:
    """Answer hook `what` (one of agenthooks.HOOK_NAMES beyond the default two)."""
    if what == PRE_TOOL:
        return pre_tool(cli, hook_input)
    root = _root(hook_input)
    if root is None:
        return Answer(0)  # not in a gsd project: nothing to say
    from gsd.io.plans.project import Project

    project = Project(root)
    if what == SESSION_END:
        return session_end(project, hook_input)
    if what == AFTER_AGENT:
        return after_agent(project, hook_input)
    if what == PRE_COMPACT:
        return pre_compact(cli, project, hook_input)
    raise AssertionError(what)  # pragma: no cover - RUN_NAMES holds no other


def brief_status(status: ProjectStatus) -> str:
    """A phase a line (done / all, what is running, failed or next), then the blockers."""
    lines = ["gsd status (plans in .planning/; `gsd status` for all of it):"]
    for phase in status.phases:
        plans = phase.plans
        line = f"- phase {phase.phase}: {phase.done}/{len(plans)} plans done"
        for state in ("in progress", "failed", "paused"):
            ids = [p.plan for p in plans if p.status == state]
            if ids:
                line += f"; {state}: {', '.join(ids)}"
        pending = [p.plan for p in plans if p.status == "pending"]
        if pending and phase.done < len(plans):
            line += f"; next: {pending[0]}"
        lines.append(line)
    if len(lines) > _STATUS_LINES:
        hidden = len(lines) - _STATUS_LINES
        lines = [*lines[:_STATUS_LINES], f"- ... and {plural(hidden, 'more phase')}"]
    blockers = status.blockers
    lines.append(f"blockers: {'; '.join(blockers[:3])}" if blockers else "blockers: none")
    return "\n".join(lines)


# -- before a tool -----------------------------------------------------------------------


def pre_tool(cli: str, hook_input: HookInput) -> Answer:
    """Deny a shell command that writes a plan file; anything else goes ahead unanswered."""
    if not hook_input.command:
        return Answer(0)
    from gsd.formats.runners.shellwrites import plan_writes

    written = plan_writes(hook_input.command)
    if not written:
        return Answer(0)
    reason = (
        f"gsd: this command writes the plan file {written[0]} through the shell; write "
        f"plan files with the {_EDIT_TOOLS[cli]} tool instead, so that gsd validates the "
        "plan as it is saved (nothing was run)"
    )
    return agenthooks.deny_tool(cli, reason)


# -- session end -------------------------------------------------------------------------


def session_end(project: Project, hook_input: HookInput) -> Answer:
    """The summary, for the user (`systemMessage`) and in the checkout's git directory:
    Claude Code 2.1.330 shows a SessionEnd hook's output nowhere but its debug log (only
    a failure reaches stderr: `qIn` in the binary), so the file is where it stays."""
    from gsd.core import layout
    from gsd.formats.files import display_path, write_atomic

    text = session_summary(project)
    git_dir = _git_dir(project.root)
    if git_dir is not None:
        path = layout.session_summary(git_dir, hook_input.session_id)
        write_atomic(path, text + "\n")
        text += f"\n(kept in {display_path(path, project.root)})"
    return agenthooks.tell_user(text)


def session_summary(project: Project) -> str:
    """What the last run did, plan by plan, then the status: one screen at most."""
    from gsd.commands.progress import project_status

    lines = ["gsd: what ran (`gsd report` and `gsd status` say more):", *run_lines(project)]
    lines.append(brief_status(project_status(project)))
    return "\n".join(lines)


def run_lines(project: Project) -> list[str]:
    """The last run in a few lines: when, each plan's attempts and outcome, the totals."""
    from gsd.commands.report import build
    from gsd.formats import execlog

    events, _warnings = execlog.read_all(project.planning)
    starts = [e for e in events if e.get("event") == "run-start"]
    if not starts:
        return ["- no gsd run recorded in .planning/logs/"]
    report = build(events)
    start = starts[-1]
    ended = any(e.get("event") == "run-end" for e in events[events.index(start) :])
    head = f"- last run: started {start.get('ts', '?')}"
    if start.get("phase"):
        head += f", phase {start.get('phase')}"
    lines = [head + ("" if ended else " (no end recorded: running, or stopped)")]
    done = {str(e.get("plan")) for e in events[events.index(start) :] if _completed(e)}
    for row in report.per_plan[:_PLAN_LINES]:
        state = "done" if row.name in done else "not done"
        line = f"  - plan {row.name}: {state}; {plural(row.attempts, 'attempt')}"
        line += f" ({row.succeeded} ok, {row.failed} failed), {row.seconds:g} s"
        lines.append(line + _spent(row.input_tokens, row.output_tokens, row.cost_usd))
    hidden = len(report.per_plan) - _PLAN_LINES
    if hidden > 0:
        lines.append(f"  - ... and {plural(hidden, 'more plan')}")
    if report.retries:
        lines.append(f"  - {plural(report.retries, 'retry', 'retries')}")
    return lines


def _completed(event: dict[str, object]) -> bool:
    return event.get("event") == "plan-complete"


def _spent(tokens_in: float | None, tokens_out: float | None, cost: float | None) -> str:
    parts = []
    if tokens_in is not None or tokens_out is not None:
        parts.append(f"{int((tokens_in or 0) + (tokens_out or 0)):,} tokens")
    if cost is not None:
        parts.append(f"${cost:.2f}")
    return f", {', '.join(parts)}" if parts else ""


# -- after a delegated agent -------------------------------------------------------------


def after_agent(project: Project, hook_input: HookInput) -> Answer:
    """Advise (never block) when a delegated task's answer lacks its Task Report, or its
    Downstream Context while later tasks or dependent plans need one."""
    answer, prompt = hook_input.answer, hook_input.prompt
    if hook_input.agent_transcript and not (answer and prompt):
        first, last = agenthooks.transcript_texts(hook_input.agent_transcript)
        answer, prompt = answer or last, prompt or first
    if "task report" not in f"{prompt}\n{answer}".lower():
        return Answer(0)  # not a gsd delegation: no contract to check
    from gsd.formats.taskreport import parse_task_report

    report = parse_task_report(answer)
    target = delegated_task(prompt)
    missing = [] if report is not None else ["Task Report"]
    if target is not None and not (report is not None and report.downstream):
        needed = downstream_needs(project, *target)
        if needed:
            missing.append(f"Downstream Context ({needed} need it)")
    if not missing:
        return Answer(0)
    if target is None:
        who = "the agent"
    elif target[1]:
        who = f"task {target[1]} of plan {target[0]}"
    else:
        who = f"the agent on plan {target[0]}"
    what = " and no ".join(missing)
    message = (
        f"gsd: the answer of {who} has no {what} (workflows/task-report.md shows the "
        "block); ask it to print one before relying on its work"
    )
    return agenthooks.tell_user(message)


def delegated_task(prompt: str) -> tuple[str, int] | None:
    """The plan (and task, 0 when not said) a delegation prompt is about, if it names one."""
    import re

    match = re.search(_TASK_OF_PLAN, prompt)
    if match:
        return match.group(2), int(match.group(1))
    match = re.search(_PLAN_FILE, prompt)
    return (match.group(1), 0) if match else None


def downstream_needs(project: Project, plan_id: str, task: int) -> str:
    """Who needs the Downstream Context of `task` of `plan_id`: its later tasks and the
    plans that depend on it, as words ('' for no one, or a plan gsd cannot find)."""
    from gsd.core.errors import GsdError

    try:
        plan = project.find_plan(plan_id)
        dependents = sorted(
            {
                other.id
                for phase in project.phases()
                for other in project.phase_plans(phase)
                if plan.id in other.depends_on
            }
        )
    except GsdError:
        return ""
    later = [t.index for t in plan.tasks if t.index > task] if task else []
    who = [f"{plural(len(later), 'later task')} of {plan.id}"] if later else []
    if dependents:
        who.append(f"{plural(len(dependents), 'plan')} depending on it ({', '.join(dependents)})")
    return " and ".join(who)


# -- before context compaction -----------------------------------------------------------


def pre_compact(cli: str, project: Project, hook_input: HookInput) -> Answer:
    """Write the snapshot under the checkout's git directory and tell the model (Claude
    Code: through the compaction's instructions) how to read it back."""
    from gsd.core import layout
    from gsd.formats.files import display_path, write_atomic

    git_dir = _git_dir(project.root)
    if git_dir is None:
        return Answer(0)  # not a git checkout: nowhere of gsd's own to write
    path = layout.compact_snapshot(git_dir, hook_input.session_id)
    # gemini-cli 0.61.0 fires PreCompress "auto" before every turn, before it checks
    # whether it will compress (bundle/chunk-5FZXKDXH.js ChatCompressionService): then the
    # snapshot is renewed at most once a minute, and the user is not told each turn
    every_turn = cli == "gemini" and hook_input.trigger != "manual"
    if every_turn and _age(path) < _RENEW_SECONDS:
        return Answer(0)
    write_atomic(path, snapshot_text(project, hook_input))
    if every_turn:
        return Answer(0)
    shown = display_path(path, project.root)
    note = (
        f"gsd saved this project's plan state before the compaction in {shown}. After it, "
        "read it back with gsd's MCP server (`gsd mcp`): its `snapshot` tool "
        "(mcp__gsd__snapshot) gives that file, its `status` tool (mcp__gsd__status) the "
        "plans now, `report` the last run. Keep this note in the summary."
    )
    return agenthooks.before_compaction(cli, note)


def _age(path: Path) -> float:
    """Seconds since `path` was written (infinite when it is not a file there)."""
    import os
    import stat
    import time

    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return float("inf")
    return time.time() - info.st_mtime if stat.S_ISREG(info.st_mode) else float("inf")


def snapshot_text(project: Project, hook_input: HookInput) -> str:
    """The snapshot: when and why, the status, the last run, the plan files changed."""
    from gsd.commands.progress import project_status
    from gsd.core.utc import utc_stamp

    changed = _changed_plans(project.root)
    lines = [
        "# gsd state before a context compaction",
        "",
        f"- at: {utc_stamp()}; trigger: {hook_input.trigger or 'unknown'}; "
        f"session: {hook_input.session_id or 'unknown'}",
        f"- project: {project.root}",
        "",
        "## Status",
        "",
        brief_status(project_status(project)),
        "",
        "## The last run",
        "",
        *run_lines(project),
        "",
        "## Files under .planning/ changed and not committed",
        "",
        *([f"- {line}" for line in changed] or ["- none"]),
        "",
        "gsd's MCP tool `snapshot` (`gsd mcp`) gives this file back; `status` and",
        "`report` the live state (`gsd status` and `gsd report` in a shell).",
    ]
    return "\n".join(lines) + "\n"


def _changed_plans(root: Path) -> list[str]:
    from gsd.core import layout
    from gsd.io.git import command as gitexec

    done = gitexec.call(
        ["status", "--porcelain", "--untracked-files=all", "--", layout.PLANNING],
        cwd=root,
        read_only=True,
    )
    if done.status != 0:
        return []
    lines = done.stdout.splitlines()
    return [*lines[:20], *([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])]


def _git_dir(root: Path) -> Path | None:
    from gsd.io.snapshots import git_dir

    return git_dir(root)


def _root(hook_input: HookInput) -> Path | None:
    from pathlib import Path

    from gsd.core import layout
    from gsd.core.errors import UsageError
    from gsd.io.plans.project import find_root

    try:
        root = find_root(Path(hook_input.cwd or "."))
    except UsageError:
        return None
    return root if (root / layout.PLANNING).is_dir() else None
