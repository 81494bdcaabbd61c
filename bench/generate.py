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
