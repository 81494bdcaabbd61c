"""Generate realistic GSD projects for the benchmarks (deterministic, standard library only).

Each plan is ~3-5 KB, like real ones: frontmatter with phase, plan, type, wave,
depends_on (earlier plans of the same phase, so a phase has several waves; now and
then a plan of the previous phase), files_modified, autonomous and must_haves
(truths, artifacts, key_links), then <objective>, <execution_context>, <context>,
<tasks> with 2-3 `<task type="auto">` (name, files, action, verify, done),
<verification>, <success_criteria> and <output>.

Generated plans are valid: `gsd validate` reports no findings on them.
"""

from __future__ import annotations

import random
from pathlib import Path

PLANS_PER_PHASE = 50
ROSTER = ("python-pro", "code-reviewer", "technical-writer")

_WORDS = (
    "parse config cache request handler session token queue worker schema record index "
    "report export import client server retry timeout backoff logger metric event store "
    "snapshot migration account invoice payment webhook signature adapter registry plugin "
    "loader renderer template router middleware validator serializer encoder decoder stream "
    "buffer window batch shard replica lease lock watcher scheduler job pipeline stage"
).split()
_VERBS = (
    "add",
    "extract",
    "wire",
    "validate",
    "cache",
    "refactor",
    "harden",
    "document",
    "test",
    "split",
    "rename",
    "persist",
    "expose",
    "stream",
    "batch",
    "retry",
)


def _sentence(rng: random.Random, lo: int = 8, hi: int = 16) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def _paragraph(rng: random.Random, sentences: int, width: int = 88) -> str:
    text = " ".join(_sentence(rng) for _ in range(sentences))
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines)


def phase_dir_name(phase: int) -> str:
    return f"{phase:03d}-p{phase}"


def plan_text(phase: int, plan: int, wave: int, depends_on: list[str], rng: random.Random) -> str:
    ph = f"{phase:03d}"
    pid = f"{ph}-{plan:02d}"
    module = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"
    base = f"src/p{phase}/m{plan:02d}"
    files = [
        f"{base}/{module}.py",
        f"{base}/{rng.choice(_WORDS)}.py",
        f"tests/p{phase}/test_{plan:02d}.py",
    ]
    deps = "[" + ", ".join(f'"{d}"' for d in depends_on) + "]"
    truths = "\n".join(f'    - "{_sentence(rng, 6, 12)}"' for _ in range(rng.randint(3, 4)))
    artifacts = "\n".join(
        f'    - path: "{f}"\n      provides: "{_sentence(rng, 5, 9)}"' for f in files[:2]
    )
    links = "\n".join(
        f'    - from: "{files[0]}"\n      to: "{rng.choice(files[1:])}"\n'
        f'      via: "{_sentence(rng, 4, 8)}"'
        for _ in range(rng.randint(1, 2))
    )
    fm = (
        f'---\nphase: {phase_dir_name(phase)}\nplan: "{plan:02d}"\ntype: execute\n'
        f"wave: {wave}\ndepends_on: {deps}\nfiles_modified:\n"
        + "".join(f"  - {f}\n" for f in files)
        + "autonomous: true\nmust_haves:\n"
        f"  truths:\n{truths}\n  artifacts:\n{artifacts}\n  key_links:\n{links}\n---\n"
    )
    tasks = []
    for n in range(1, rng.randint(2, 3) + 1):
        specialist = f' specialist="{rng.choice(ROSTER)}"' if rng.random() < 0.5 else ""
        task_files = ", ".join(rng.sample(files, 2))
        tasks.append(
            f'<task type="auto"{specialist}>\n'
            f"  <name>Task {n}: {rng.choice(_VERBS).capitalize()} the {module} "
            f"{rng.choice(_WORDS)}</name>\n"
            f"  <files>{task_files}</files>\n"
            f"  <action>\n{_paragraph(rng, rng.randint(4, 7))}\n"
            f"Keep `{module}()` free of I/O; callers pass data in & get data out.\n"
            f"  </action>\n"
            f"  <verify><automated>python3 -m pytest -q tests/p{phase}/test_{plan:02d}.py"
            f"</automated></verify>\n"
            f"  <done>{_sentence(rng, 6, 12)}</done>\n"
            f"</task>\n"
        )
    body = (
        f"\n<objective>\n{_paragraph(rng, 2)}\n\nPurpose: {_paragraph(rng, 2)}\n"
        f"Output: `{files[0]}` and its tests.\n</objective>\n\n"
        "<execution_context>\n@~/.claude/get-shit-done/workflows/execute-plan.md\n"
        "@~/.claude/get-shit-done/templates/summary.md\n</execution_context>\n\n"
        "<context>\n@.planning/PROJECT.md\n@.planning/ROADMAP.md\n@.planning/STATE.md\n"
        + "".join(
            f"@.planning/phases/{phase_dir_name(int(d[:3]))}/{d}-SUMMARY.md\n" for d in depends_on
        )
        + "</context>\n\n<tasks>\n\n"
        + "\n".join(tasks)
        + "\n</tasks>\n\n<verification>\n"
        f"- `python3 -m pytest -q tests/p{phase}/test_{plan:02d}.py` passes\n"
        f"- {_sentence(rng)}\n</verification>\n\n<success_criteria>\n"
        + "".join(f"- {_sentence(rng, 5, 10)}\n" for _ in range(3))
        + "</success_criteria>\n\n<output>\n"
        f"After completion, create `.planning/phases/{phase_dir_name(phase)}/{pid}-SUMMARY.md`\n"
        "</output>\n"
    )
    return fm + body


def make_project(
    root: Path, n_plans: int, *, per_phase: int = PLANS_PER_PHASE, seed: int = 1
) -> Path:
    """Write a project with `n_plans` plans under `root/.planning/phases/`; return `root`."""
    rng = random.Random(seed)
    planning = root / ".planning"
    phases = planning / "phases"
    phases.mkdir(parents=True, exist_ok=True)
    (planning / "PROJECT.md").write_text("# Bench project\n\nGenerated by bench/generate.py.\n")
    (planning / "available_agents.md").write_text(
        "# Available Specialists\n\n" + "".join(f"- **{n}**: a specialist\n" for n in ROSTER)
    )
    written = 0
    phase = 0
    while written < n_plans:
        phase += 1
        folder = phases / phase_dir_name(phase)
        folder.mkdir(exist_ok=True)
        waves: dict[int, int] = {}
        count = min(per_phase, n_plans - written)
        for plan in range(1, count + 1):
            earlier = list(range(max(1, plan - 6), plan))
            picked = sorted(rng.sample(earlier, min(len(earlier), rng.choice((0, 0, 1, 1, 2)))))
            wave = 1 + max((waves[p] for p in picked), default=0)
            waves[plan] = wave
            deps = [f"{phase:03d}-{p:02d}" for p in picked]
            if phase > 1 and rng.random() < 0.05:  # now and then, a plan of the previous phase
                deps.append(f"{phase - 1:03d}-{rng.randint(1, per_phase):02d}")
            name = f"{phase:03d}-{plan:02d}-PLAN.md"
            (folder / name).write_text(plan_text(phase, plan, wave, deps, rng))
        written += count
    return root


# ------------------------------------------------------------------ done projects
# A project as `gsd execute-phase` leaves it once every plan ran: each plan's SUMMARY.md
# (the frontmatter and sections gsd writes), its log `.planning/logs/{plan}.jsonl` (spawn,
# result and commit per task, plan-complete; now and then a failed attempt with its error
# record, rollback and retry), each phase's `phase-{NNN}.jsonl` (run, waves, merges), and
# GSD's STATE.md and ROADMAP.md templates, which `gsd sync` then derives.

STATE_TEMPLATE = """\
# Project State

## Current Position

Phase: 1 of [N] ([Phase name])
Plan: 0 of [M] in current phase
Status: Ready to plan
Last activity: 2026-01-01 - Project initialized

Progress: [░░░░░░░░░░] 0%

## Performance Metrics

**Velocity:**
- Total plans completed: 0
- Average duration: -
- Total execution time: 0 hours

**By Phase:**

| Phase | Plans | Total | Avg/Plan |
|-------|-------|-------|----------|
| - | - | - | - |

**Recent Execution:**

| Plan | Duration | Tasks | Files |
|------|----------|-------|-------|
| - | - | - | - |

## Accumulated Context

### Blockers/Concerns

None yet.

## Session Continuity

Last session: 2026-01-01
Stopped at: Project initialized
Resume file: None
"""


def _stamp(seconds: float) -> str:
    """2026-01-01 plus `seconds`, as the logs write it (UTC, milliseconds)."""
    whole = int(seconds)
    day, rest = divmod(whole, 86400)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    millis = int(round((seconds - whole) * 1000)) % 1000
    date = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}"
    return f"{date}T{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


def _json(record: dict[str, object]) -> str:
    import json

    return json.dumps(record, ensure_ascii=False) + "\n"


def roadmap_text(phases: int, per_phase: int) -> str:
    """ROADMAP.md as GSD's template lists the phases and their plans, nothing ticked."""
    head = "# Roadmap: Bench\n\n## Phases\n\n" + "".join(
        f"- [ ] **Phase {n}: P{n}** - generated phase {n}\n" for n in range(1, phases + 1)
    )
    details = "\n## Phase Details\n"
    for n in range(1, phases + 1):
        details += (
            f"\n### Phase {n}: P{n}\n**Goal**: generated phase {n}\n"
            f"**Plans**: {per_phase} plans\n\nPlans:\n"
            + "".join(
                f"- [ ] {n:03d}-{p:02d}-PLAN.md — plan {p}\n" for p in range(1, per_phase + 1)
            )
        )
    progress = (
        "\n## Progress\n\n| Phase | Plans Complete | Status | Completed |\n"
        "|-------|----------------|--------|-----------|\n"
        + "".join(
            f"| {n}. P{n} | 0/{per_phase} | Not started | - |\n" for n in range(1, phases + 1)
        )
    )
    return head + details + progress


def summary_text(phase: int, plan: int, tasks: int, files: list[str], start: float) -> str:
    """SUMMARY.md as gsd writes it when a plan's tasks are done."""
    seconds = 40 + (phase * 7 + plan * 13) % 400
    day = _stamp(start + seconds)[:10]
    listed = "".join(f"    - {f}\n" for f in files)
    commits = "".join(f"{n}. **Task {n}** - `{n:07x}` (python-pro)\n" for n in range(1, tasks + 1))
    return (
        f'---\nphase: {phase_dir_name(phase)}\nplan: "{plan:02d}"\nsubsystem: ""\ntags: []\n\n'
        f"key-files:\n  created: []\n  modified:\n{listed}\nkey-decisions: []\n\n"
        f"# Metrics\nduration: {seconds}s\ncompleted: {day}\n\n"
        f"specialist_usage:\n  python-pro: [{', '.join(str(n) for n in range(1, tasks + 1))}]\n"
        f"---\n\n# Phase {phase:03d} Plan {plan:02d}: Summary\n\n"
        f"**{tasks} of {tasks} tasks done in {tasks} commits, {len(files)} files changed**\n\n"
        f"## Performance\n\n- **Duration:** {seconds} sec\n- **Started:** {_stamp(start)[:19]}Z\n"
        f"- **Tasks:** {tasks}\n- **Files modified:** {len(files)}\n\n"
        f"## Task Commits\n\n{commits}\n## Deviations from Plan\n\nNone - plan executed "
        "exactly as written.\n\n## Issues Encountered\n\nNone\n"
    )


def plan_log(phase: int, plan: int, tasks: int, start: float, failed: bool) -> tuple[str, float]:
    """A plan's log as a run writes it, and when its last event happened."""
    pid = f"{phase:03d}-{plan:02d}"
    lines, now = [], start
    for task in range(1, tasks + 1):
        attempts = 2 if failed and task == 1 else 1
        for attempt in range(1, attempts + 1):
            ok = attempt == attempts
            lines.append(
                _json(
                    {"ts": _stamp(now), "event": "spawn", "plan": pid, "task": task}
                    | {"agent": "python-pro", "attempt": attempt}
                )
            )
            now += 20.5
            if not ok:
                lines.append(
                    _json(
                        {"timestamp": _stamp(now)[:19] + "Z", "phase": f"{phase:03d}"}
                        | {"plan": f"{plan:02d}", "task": str(task), "specialist": "python-pro"}
                        | {"error_type": "timeout-kill", "details": "timed out (exit 137)"}
                        | {"git_state": f"checkpoint/{pid}/{task}", "exit_code": 137}
                        | {"attempt": attempt, "runner": "command", "duration_s": 20.5}
                    )
                )
            lines.append(
                _json(
                    {"ts": _stamp(now), "event": "result", "plan": pid, "task": task}
                    | {"agent": "python-pro", "attempt": attempt, "success": ok}
                    | {"soft_success": False, "error_type": None if ok else "timeout-kill"}
                    | {"duration_s": 20.5, "input_tokens": None, "output_tokens": None}
                )
            )
            kind = "commit" if ok else "rollback"
            lines.append(
                _json({"ts": _stamp(now + 0.001), "event": kind, "plan": pid, "task": task})
            )
            if not ok:
                lines.append(
                    _json({"ts": _stamp(now + 0.002), "event": "retry", "plan": pid, "task": task})
                )
            now += 1
    lines.append(_json({"ts": _stamp(now), "event": "plan-complete", "plan": pid}))
    return "".join(lines), now


def finish_plan(root: Path, phase: int, plan: int, start: float) -> float:
    """Write plan `phase`-`plan`'s SUMMARY.md and log as a run that finished it does;
    return when it ended. The plan file must exist (make_project)."""
    planning = root / ".planning"
    folder = planning / "phases" / phase_dir_name(phase)
    pid = f"{phase:03d}-{plan:02d}"
    text = (folder / f"{pid}-PLAN.md").read_text()
    tasks = text.count('<task type="auto"')
    files = [
        line[4:]
        for line in text.splitlines()
        if line.startswith("  - src/") or line.startswith("  - tests/")
    ]
    log, end = plan_log(phase, plan, tasks, start, failed=(phase * 31 + plan) % 10 == 0)
    (planning / "logs").mkdir(exist_ok=True)
    (planning / "logs" / f"{pid}.jsonl").write_text(log)
    (folder / f"{pid}-SUMMARY.md").write_text(summary_text(phase, plan, tasks, files, start))
    return end


def make_done_project(
    root: Path, phases: int, per_phase: int, *, skip_last: bool = False, seed: int = 1
) -> Path:
    """A project of `phases` x `per_phase` plans, every one done (with `skip_last`, all
    but the last plan of the last phase: `finish_plan` then finishes it, as a merge
    would). STATE.md and ROADMAP.md are GSD's templates: `gsd sync` derives them."""
    make_project(root, phases * per_phase, per_phase=per_phase, seed=seed)
    planning = root / ".planning"
    (planning / "STATE.md").write_text(STATE_TEMPLATE)
    (planning / "ROADMAP.md").write_text(roadmap_text(phases, per_phase))
    (planning / "logs").mkdir(exist_ok=True)
    clock = 0.0
    for phase in range(1, phases + 1):
        lines = [_json({"ts": _stamp(clock), "event": "run-start", "phase": phase_dir_name(phase)})]
        for plan in range(1, per_phase + 1):
            if skip_last and phase == phases and plan == per_phase:
                break
            clock = finish_plan(root, phase, plan, clock) + 0.5
            merge = {"ts": _stamp(clock), "event": "merge", "plan": f"{phase:03d}-{plan:02d}"}
            lines.append(_json(merge | {"branch": f"gsd/{merge['plan']}", "status": "merged"}))
        lines.append(_json({"ts": _stamp(clock + 0.1), "event": "run-end", "status": "complete"}))
        (planning / "logs" / f"phase-{phase:03d}.jsonl").write_text("".join(lines))
        clock += 60
    return root
