"""How many files of real agent collections gsd loads, skips or ignores, and their tiers.

Usage: python bench/agent_collections.py FOLDER [FOLDER ...] [--markdown]

Also `bench/run.py --only agents` (bench_agents below): `gsd agents list` over a
generated collection of 5,000 agent files, its time and peak memory.

Each FOLDER is read as one `specialists.agent_paths` entry would be. Run it with the gsd
to measure on the path, e.g. `PYTHONPATH=/path/to/other/checkout python bench/...`: a gsd
without `gsd.io.plans.agentscan` (before issue 11) is measured with its `discover`, which returned
the agents and one warning per skipped file and read only `*.md`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIERS = ("read-only", "read+shell", "read+write", "full")


def measure(folder: Path) -> dict[str, Any]:
    """One folder: files seen, loaded, skipped, ignored, and the agents' tiers and runners."""
    try:
        from gsd.io.plans.agentscan import scan
    except ImportError:  # gsd before issue 11
        return measure_before(folder)
    report = scan([(folder, "agent_paths")])
    files = report.folders[0]
    agents = [f.agent for f in files.files if f.agent is not None]
    return row(
        folder,
        len(files.files),
        files.count("loaded"),
        files.count("skipped"),
        files.count("ignored"),
        agents,
    )


def measure_before(folder: Path) -> dict[str, Any]:
    from gsd.formats.agents import discover

    agents, warnings = discover([folder])
    seen = [
        p
        for p in folder.rglob("*.md")
        if p.name.upper() != "README.MD"
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    loaded = len(seen) - len(warnings)  # one warning per skipped file, then
    return row(folder, len(seen), loaded, len(warnings), 0, list(agents.values()))


def row(
    folder: Path, files: int, loaded: int, skipped: int, ignored: int, agents: list[Any]
) -> dict[str, Any]:
    tiers = Counter(a.tier for a in agents)
    runners = Counter(a.runner for a in agents)
    return {
        "folder": folder.as_posix(),
        "files": files,
        "loaded": loaded,
        "skipped": skipped,
        "ignored": ignored,
        **{tier: tiers.get(tier, 0) for tier in TIERS},
        "runners": ", ".join(f"{r} {n}" for r, n in sorted(runners.items())) or "-",
    }


def main(argv: list[str]) -> int:
    markdown = "--markdown" in argv
    folders = [Path(a) for a in argv if a != "--markdown"]
    if not folders:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rows = [measure(folder) for folder in folders]
    counted = ("files", "loaded", "skipped", "ignored", *TIERS)
    total = {key: sum(int(r[key]) for r in rows) for key in counted}
    rows.append({"folder": "total", **total, "runners": "-"})
    from tabulate import tabulate

    print(tabulate(rows, headers="keys", tablefmt="github" if markdown else "simple"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# --- `gsd agents list` over a large collection (issue 23) ------------------------------------

AGENT_TOOLS = (
    "Read, Grep, Glob",
    "Read, Write, Edit, Bash, Glob, Grep",
    "Read, Bash, Grep",
    "Read, Write, Edit",
    "Read, Grep, Glob, WebFetch, WebSearch, mcp__github__search",
)
AGENT_FOLDERS = 10


def make_agents(root: Path, count: int, *, seed: int = 1) -> Path:
    """A project whose `.claude/agents/` holds `count` agent files of 2-6 KB, as the big
    collections write them (VoltAgent's: a folder per category, read as a namespace;
    `tools` as a comma string, or omitted; now and then a `name` that is not the file's,
    or a tool gsd does not know); a tenth of them in no category. Returns `root`."""
    import random

    rng = random.Random(seed)
    words = "review test deploy data api cloud secure index cache schema query build".split()
    agents = root / ".claude" / "agents"
    (root / ".planning").mkdir(parents=True, exist_ok=True)
    for n in range(count):
        folder = agents if n % 10 == 9 else agents / f"{n % AGENT_FOLDERS:02d}-category"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{rng.choice(words)}-{rng.choice(words)}-{n:05d}"
        written = name if n % 50 else f"{name}-renamed"
        lines = [f"name: {written}", f"description: {_sentence(rng, words, 18)}"]
        if n % 7:
            lines.append(f"tools: {AGENT_TOOLS[n % len(AGENT_TOOLS)]}")
        lines.append(f"model: {('sonnet', 'opus', 'haiku')[n % 3]}")
        body = "\n\n".join(_sentence(rng, words, rng.randint(40, 120)) for _ in range(6))
        text = "---\n" + "\n".join(lines) + f"\n---\n\nYou are {name}.\n\n{body}\n"
        (folder / f"{name}.md").write_text(text)
    return root


def _sentence(rng: Any, words: list[str], count: int) -> str:
    return " ".join(rng.choice(words) for _ in range(count)).capitalize() + "."


# Each child prints its own peak RSS (VmHWM) last, on stderr: not ru_maxrss, which
# charges a vfork+exec child its parent's peak (see bench/task.py).
PEAK = (
    "import sys\n"
    "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
    "sys.stderr.write(f'peak_kb={peak}\\n')\n"
)
# `gsd agents list`, as the console script runs it.
LIST_CHILD = "from gsd.cli.entry import main\ncode = main(['agents', 'list'])\n" + PEAK
# The floor: read every agent file and cut its frontmatter with one regex, in Python.
FLOOR_CHILD = (
    "import os, re\n"
    "fm = re.compile(r'\\A---\\n(.*?)\\n---\\n', re.S)\n"
    "n = 0\n"
    "for d, _, names in os.walk('.claude/agents'):\n"
    "    for name in names:\n"
    "        if name.endswith('.md'):\n"
    "            with open(os.path.join(d, name), 'rb') as f:\n"
    "                n += bool(fm.match(f.read().decode()))\n" + PEAK
)

Say = Callable[[str], None]
Table = Callable[[list[str], list[list[str]]], None]


def bench_agents(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, float]:
    """`gsd agents list` over `count` agent files against a read of the same files."""
    count = 300 if quick else 5000
    runs = 1 if quick else 7
    python = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "python"
    root = make_agents(tmp / "agents-list", count)
    home = tmp / "agents-home"  # no agents of the user's own
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    commands = {
        "floor": [os.path.realpath(python), "-c", FLOOR_CHILD],
        "gsd agents list": [str(python), "-c", LIST_CHILD],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[int]] = {name: [] for name in commands}
    say(f"== agents: gsd agents list over {count:,} agent files (.claude/agents) ==")
    for r in range(runs + 1):  # the first round warms the caches, not counted
        for name in list(commands)[r % 2 :] + list(commands)[: r % 2]:
            start = time.perf_counter()
            done = subprocess.run(
                commands[name],
                cwd=root,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            took = time.perf_counter() - start
            err = done.stderr.decode(errors="replace")
            if done.returncode != 0 or "peak_kb=" not in err:
                raise RuntimeError(f"{name}: exit {done.returncode}\n{err}")
            if r:
                times[name].append(took)
                peak = [line for line in err.splitlines() if line.startswith("peak_kb=")]
                peaks[name].extend(int(line.split("=")[1]) for line in peak)
    rows = []
    for name, values in times.items():
        peak = f"{statistics.median(peaks[name]) / 1024:.1f}"
        rows.append(
            [
                name,
                f"{statistics.median(values) * 1000:.0f}",
                f"{min(values) * 1000:.0f}",
                f"{max(values) * 1000:.0f}",
                peak,
            ]
        )
    say(f"{runs} alternating runs after one warm-up round")
    table(["command", "median ms", "min ms", "max ms", "peak RSS MiB"], rows)
    gsd = statistics.median(times["gsd agents list"])
    ratio = gsd / statistics.median(times["floor"])
    say(f"agents list: {gsd:.2f} s, {ratio:.1f}x the read floor (no target: a figure)")
    say("")
    return {
        "agents_list_s": gsd,
        "agents_list_ratio": ratio,
        "agents_list_files": count,
        "agents_list_peak_mb": statistics.median(peaks["gsd agents list"]) / 1024,
    }
