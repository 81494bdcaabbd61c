"""How many files of real agent collections gsd loads, skips or ignores, and their tiers.

Usage: python bench/agent_collections.py FOLDER [FOLDER ...] [--markdown]

Each FOLDER is read as one `specialists.agent_paths` entry would be. Run it with the gsd
to measure on the path, e.g. `PYTHONPATH=/path/to/other/checkout python bench/...`: a gsd
without `gsd.io.plans.agentscan` (before issue 11) is measured with its `discover`, which returned
the agents and one warning per skipped file and read only `*.md`.
"""

from __future__ import annotations

import sys
from collections import Counter
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
