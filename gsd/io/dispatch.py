"""For every task of a phase: which agent, which runner, which argv, how long (no effects)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core import layout
from gsd.core.errors import InputError, UsageError
from gsd.core.graph import PhaseGraph
from gsd.core.models import RUNNERS, Plan, Task
from gsd.core.resolve import Resolution, debug_print, disabled_agents, resolve_specialist
from gsd.core.safety.budget import Budget, resolve_budget
from gsd.core.safety.policy import Policy, with_extra
from gsd.core.specialists import EXECUTOR
from gsd.core.verdict import review
from gsd.core.words import suggested
from gsd.formats.agents import Agent
from gsd.formats.reviewreport import read_only
from gsd.formats.runners import invocation as runners
from gsd.formats.settings import Settings
from gsd.io.confine import sandbox


class TaskDispatch(NamedTuple):
    """How one task would run."""

    wave: int
    plan: str
    task: int
    name: str
    type: str
    specialist: str | None  # as written
    specialist_form: str | None
    agent: str
    fallback_reason: str | None
    tier: str | None  # None for a human checkpoint: no agent runs
    runner: str | None
    model: str | None
    argv: list[str]
    timeout_s: float
    timeout_source: str
    grace_s: float
    sandbox: str = (
        ""  # what the agent may write (`gsd.io.confine.sandbox.describe`); "" until known
    )
    runner_source: str = ""  # "plan" (the task's runner=) or "agent"; "" for a person
    model_source: str = ""  # "plan", "GSD_DEFAULT_MODEL" or "agent"; "" for no model flag
    agent_source: str = ""  # the agent's file (Agent.source); "" for a human checkpoint
    budget_warn: int | None = None  # tokens past which the attempt is recorded as over
    budget_abort: int | None = None  # tokens past which the agent is stopped
    budget_source: str = ""  # "default", "config.json budgets.<runner>" or the agent file's
    budget_usd: float | None = None  # dollars it may cost: what is left of the run's budget
    budget_usd_source: str = ""  # where that budget comes from (gsd.run.runbudget)
    limits: str = ""  # its memory and process limits, what keeps them (confine.limits.describe)
    # the safety policy that reaches the runner (`runners.policy_view`); None for a person
    policy: runners.PolicyView | None = None
    policy_extra: tuple[str, ...] = ()  # config.json's `policy.extra_deny`, as written
    missing: str = ""  # the dry run's note when the program in argv[0] cannot be found
    subagents: bool = False  # config.json `specialists.allow_subagents`, for the runner files
    review: str = ""  # who reviews its work, `AGENT on RUNNER` (the dry run shows it)
    plan_first: str = ""  # who approves its proposal first (plan-first gates); "": none

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def task_timeout(
    agent: Agent | None,
    config: Settings,
    *,
    cli_timeout: float | None = None,
    environ: Mapping[str, str] = os.environ,
) -> tuple[float, str]:
    """`--timeout` > SPECIALIST_TIMEOUT > agent timeout_mins > config (SPEC 5).

    The config value defaults to 300 s; a `null` there is an InputError when config.json
    is loaded, like any other value that is not a number (`gsd.formats.settings`).
    """
    if cli_timeout is not None:
        return cli_timeout, "--timeout"
    raw = environ.get("SPECIALIST_TIMEOUT", "").strip()
    if raw:
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if seconds <= 0:
            raise UsageError(f"SPECIALIST_TIMEOUT={raw!r} is not a number of seconds > 0")
        return seconds, "SPECIALIST_TIMEOUT"
    if agent is not None and agent.timeout_mins is not None:
        return agent.timeout_mins * 60, f"{agent.name} timeout_mins"
    return config.specialists.timeout_seconds, "specialists.timeout_seconds"


def run_files(git_dir: Path, plan_id: str, task: int) -> tuple[Path, Path]:
    """Where a spawn's prompt and result files live: inside .git, never in the work tree."""
    folder = layout.run_dir(git_dir, plan_id, task)
    return folder / "prompt.md", folder / "result.json"


class Dispatcher:
    """Resolves and lays out every task of a phase; changes nothing anywhere."""

    def __init__(
        self,
        agents: Mapping[str, Agent],
        roster: Mapping[str, str] | None,
        config: Settings,
        *,
        cli_timeout: float | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        if EXECUTOR not in agents:
            raise InputError(
                f"no {EXECUTOR} agent found (it ships in gsd's agents/ folder)",
                hint="reinstall gsd or add agents/gsd-executor.md",
            )
        self.agents = agents
        self.roster = roster
        self.config = config
        self.cli_timeout = cli_timeout
        self.environ = environ
        self.disabled = disabled_agents(environ)
        self.use_specialists = config.workflow.use_specialists
        self.grace = config.specialists.kill_grace_seconds
        self.policy: Policy = with_extra(config.policy.extra_deny)
        # gsd's Landlock sandbox will confine every spawn (codex then runs without its own)
        self.confined = bool(config.sandbox.enabled) and sandbox.landlock_abi() > 0
        self.subagents = config.specialists.allow_subagents

    def resolve(self, plan: Plan, task: Task) -> Resolution:
        resolution = resolve_specialist(
            task.specialist,
            roster=self.roster,  # a Mapping: `in` looks the name up among its keys
            agents=self.agents,
            use_specialists=self.use_specialists,
            disabled=self.disabled,
        )
        debug_print(f"{plan.id} task {task.index}", resolution)
        return resolution

    def task(
        self, wave: int, plan: Plan, task: Task, *, fallback: str | None = None
    ) -> TaskDispatch:
        """How a task runs; with `fallback` (a reason), on gsd-executor instead of the
        agent it resolves to (the retry ladder's last step)."""
        base = self._identity(wave, plan, task)
        if task.is_checkpoint:
            return TaskDispatch(
                **base,
                agent="(human)",
                fallback_reason=None,
                tier=None,
                runner=None,
                model=None,
                argv=[],
                timeout_s=0.0,
                timeout_source="waits for `gsd approve`",
            )
        resolution = self.resolve(plan, task)  # a person answers a checkpoint: no agent
        if fallback is not None:
            resolution = resolution._replace(agent=EXECUTOR, fallback_reason=fallback)
        own = self.agents[resolution.agent]
        runner = task.runner
        if fallback is not None and runner == "command" and own.runner != "command":
            runner = None  # the fallback has no command of its own: it runs on its runner
        agent = self.run_as(own, runner, f"{plan.path}:{task.line}: task {task.index}")
        model, model_source = self.model(task, own, agent.runner)
        return TaskDispatch(
            **base,
            **self._run_by(agent),
            fallback_reason=resolution.fallback_reason,
            model=model,
            argv=self._argv(agent, model, model_source, f"{plan.path}:{task.line}", own),
            runner_source="plan" if runner is not None else "agent",
            model_source=model_source,
            subagents=self.subagents,
        )

    def _run_by(self, agent: Agent) -> dict[str, Any]:
        """The fields of a dispatch that follow from the agent that runs it: its name,
        tier, runner and file, its timeout, its token budget and its policy."""
        timeout, source = task_timeout(
            agent, self.config, cli_timeout=self.cli_timeout, environ=self.environ
        )
        budget = self.budget(agent)
        return {
            "agent": agent.name,
            "tier": agent.tier,
            "runner": agent.runner,
            "agent_source": agent.source,
            "timeout_s": timeout,
            "timeout_source": source,
            "budget_warn": budget.warn if budget else None,
            "budget_abort": budget.abort if budget else None,
            "budget_source": budget.source if budget else "",
            "policy": runners.policy_view(agent, self.policy, confined=self.confined),
            "policy_extra": tuple(self.config.policy.extra_deny),
        }

    def reviewer(
        self, wave: int, plan: Plan, task: Task, author: TaskDispatch
    ) -> tuple[Agent, TaskDispatch] | str | None:
        """Who reviews the task's work (issue 24) and how it runs: its agent, read-only,
        on config's `review.runner` or else a runner other than the author's; None when
        the task is not reviewed; one line saying why when the reviewer cannot run."""
        named = self._reviewer_name(plan, task, author)
        if named is None:
            return None
        return self.read_only(wave, plan, task, author, named, self.config.review.runner)

    def read_only(
        self,
        wave: int,
        plan: Plan,
        task: Task,
        author: TaskDispatch,
        named: tuple[str, str],
        configured: str | None,
    ) -> tuple[Agent, TaskDispatch] | str:
        """The agent `named` (its name, where it was given) as a read-only judge of the
        author's work or proposal: on runner `configured`, else another than the
        author's (`review.reviewer_runner`); one line saying why when it cannot run."""
        name, where = named
        if name not in self.agents:
            return (
                f"{where}: reviewer {name!r} is no agent gsd found"
                + suggested(name, self.agents)
                + "; add its agent file or name another"
            )
        own = self.agents[name]
        runner = review.reviewer_runner(configured, own.runner, author.runner or "")
        try:
            agent = read_only(self.run_as(own, runner, where))
        except InputError as exc:
            return str(exc)
        model = own.model if agent.runner == own.runner and own.model != "inherit" else None
        return agent, TaskDispatch(
            **self._identity(wave, plan, task),
            **self._run_by(agent),
            fallback_reason=None,
            model=model,
            argv=self._argv(agent, model, "agent", where, own),
            runner_source="config" if configured else "agent",
            model_source="agent" if model else "",
        )

    def _reviewer_name(
        self, plan: Plan, task: Task, author: TaskDispatch
    ) -> tuple[str, str] | None:
        """The reviewer's name for a task, and where it was given; None: not reviewed."""
        settings = self.config.review
        domains = [plan.frontmatter.get(key) for key in ("domain", "subsystem")]
        name = review.reviewer_for(
            task.review,
            settings.agent,
            settings.when,
            specialist=task.specialist or author.agent,
            files=task.files,
            plan_domains=[d for d in domains if isinstance(d, str)],
        )
        if name is None:
            return None
        if task.review:
            return name, f"{plan.path}:{task.line}: task {task.index}"
        return name, f"{layout.CONFIG_FILE}: review.agent"

    def _identity(self, wave: int, plan: Plan, task: Task) -> dict[str, Any]:
        """The fields every dispatch of the task has, whoever runs it."""
        return {
            "wave": wave,
            "plan": plan.id,
            "task": task.index,
            "name": task.name,
            "type": task.type,
            "specialist": task.specialist,
            "specialist_form": task.specialist_form,
            "grace_s": self.grace,
        }

    def _argv(
        self, agent: Agent, model: str | None, source: str, line: str, own: Agent
    ) -> list[str]:
        """The runner's argv; a model name that could pass for an option is one line naming
        where it was written (`line`: the task's `plan:line`, or `own`'s agent file)."""
        try:
            return runners.build_argv(
                agent, model, policy=self.policy, subagents=self.subagents, confined=self.confined
            )
        except ValueError as exc:
            where = {"plan": f"{line}: model=", "agent": f"{own.source}: model"}
            raise UsageError(f"{where.get(source, source)}: {exc}") from None

    def budget(self, agent: Agent) -> Budget | None:
        """The agent's token budget on its runner: its file's `token_budget` > config.json
        `budgets.<runner>` > the runner's default (none for `command`)."""
        own = agent.token_budget
        return resolve_budget(
            agent.runner,
            (own.warn, own.abort) if own is not None else None,
            agent.source or agent.name,
            {name: (b.warn, b.abort) for name, b in self.config.budgets.items()},
        )

    @staticmethod
    def run_as(agent: Agent, runner: str | None, where: str = "") -> Agent:
        """`agent` as a task runs it: on the task's `runner=` (SPEC 0) when it sets one,
        with the agent's persona, tools and tier. A command agent's `command` is the
        only command there is, so `runner="command"` is refused for any other agent."""
        if runner is None or runner == agent.runner:
            return agent
        if runner not in RUNNERS:
            raise InputError(
                f"{where} has runner={runner!r}, which is not a runner",
                hint="see `gsd validate` (GSD022)",
            )
        if runner == "command":
            raise InputError(
                f'{where} has runner="command" but agent {agent.name} runs on '
                f"{agent.runner} and has no `command:` to run",
                hint="give the agent file `runner: command` and `command: [...]`, or drop "
                "runner= from the task",
            )
        return agent.model_copy(update={"runner": runner, "command": None})

    def model(self, task: Task, agent: Agent, runner: str) -> tuple[str | None, str]:
        """The model flag and where it came from: the task's `model=` > GSD_DEFAULT_MODEL
        > the agent's `model`, the last only on the agent's own runner (model names are
        each runner's own: `sonnet` means nothing to gemini). Claude Code's
        `model: inherit` (the main conversation's model) is no model flag."""
        if task.model is not None:
            return task.model, "plan"
        # as Maestro's variable does, it overrides every agent's `model`
        from_env = self.environ.get("GSD_DEFAULT_MODEL", "").strip()
        if from_env:
            return from_env, "GSD_DEFAULT_MODEL"
        if runner != agent.runner or agent.model in (None, "inherit"):
            return None, ""
        return agent.model, "agent"

    def agent_for(self, dispatch: TaskDispatch) -> Agent:
        """The agent a dispatch runs, on the dispatch's runner (a task's `runner=`): the
        very file it was laid out from. An alias (`voltagent-lang:python-pro`) can name
        an agent whose plain name another file took, so the name alone is not enough."""
        agent = self.agents[dispatch.agent]
        if dispatch.agent_source and agent.source != dispatch.agent_source:
            agent = self._by_source.get(dispatch.agent_source, agent)
        return self.run_as(agent, dispatch.runner) if dispatch.runner else agent

    @cached_property
    def _by_source(self) -> dict[str, Agent]:
        """Every agent a name or an alias reaches, by its file."""
        entries = getattr(self.agents, "roster_entries", None)
        reachable = entries().values() if entries is not None else self.agents.values()
        return {agent.source: agent for agent in reachable}

    def fallbacks(
        self, graph: PhaseGraph, dispatches: Iterable[TaskDispatch]
    ) -> list[TaskDispatch]:
        """How each task that may fall back to gsd-executor would run on it, when the
        retry ladder has a `fallback` step (`retry.steps`, else `voltagent.fallback_on_error`)
        that lets a failed specialist hand its task over."""
        config = self.config
        ladder = config.retry.ladder(
            config.specialists.max_retries, config.voltagent.fallback_on_error
        )
        if "fallback" not in ladder:
            return []
        out = []
        for dispatch in dispatches:
            if not dispatch.argv or dispatch.agent == EXECUTOR:
                continue  # a person, or gsd-executor already: nothing to hand over to
            plan = graph.plans[dispatch.plan]
            task = next(t for t in plan.tasks if t.index == dispatch.task)
            reason = f"{dispatch.agent} failed"
            out.append(self.task(dispatch.wave, plan, task, fallback=reason))
        return out

    def phase(
        self, graph: PhaseGraph, *, wave: int | None = None, plan_id: str | None = None
    ) -> list[TaskDispatch]:
        """Every task of the phase in run order: waves, then plans, then tasks."""
        if plan_id is not None and plan_id not in graph.plans:
            known = ", ".join(graph.plans) or "none"
            raise UsageError(f"no plan {plan_id} in this phase (plans: {known})")
        if wave is not None and not 1 <= wave <= len(graph.waves):
            raise UsageError(f"no wave {wave} in this phase (it has {len(graph.waves)})")
        out: list[TaskDispatch] = []
        for number, plans in enumerate(graph.waves, 1):
            if wave is not None and number != wave:
                continue
            for pid in plans:
                if plan_id is None or pid == plan_id:
                    plan = graph.plans[pid]
                    out.extend(self.task(number, plan, task) for task in plan.tasks)
        return out
