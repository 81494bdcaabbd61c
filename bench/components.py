"""Where `gsd validate` spends its time per plan, measured in-process (a diagnostic).

    .venv/bin/python bench/components.py              # sizes 1000 3000 10000
    .venv/bin/python bench/components.py 500 2000

This script reaches into gsd internals (private names may change). Every figure is
in microseconds per plan. The whole-run rows time one `validate()` call with the GC
on, as the CLI runs it. The component rows are each the best of 3 passes over every
plan, with the GC off, so that each piece is timed on its own.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402
import yaml  # noqa: E402

from gsd import frontmatter, plan  # noqa: E402
from gsd.project import Project  # noqa: E402
from gsd.validate import check_phase, check_plan, path_problem, validate  # noqa: E402


def best_of(fn: Callable[[], object], times: int = 3) -> float:
    results = []
    for _ in range(times):
        start = time.perf_counter()
        fn()
        results.append(time.perf_counter() - start)
    return min(results)


def measure(root: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    paused: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            paused.append(time.perf_counter())
        else:
            paused[-1] = time.perf_counter() - paused[-1]

    gc.collect()
    gc.callbacks.append(on_gc)
    start = time.perf_counter()
    validate(Project(root), [".planning"])
    out["validate() whole run, GC on"] = time.perf_counter() - start
    gc.callbacks.remove(on_gc)
    out["  of which: garbage collector"] = sum(paused)

    project = Project(root)
    paths = project.plans_under(".planning")

    def dedup() -> None:  # the loop at the top of gsd.validate.validate
        requested: list[str] = []
        requested.extend(p for p in paths if p not in requested)

    gc.collect()
    gc.disable()
    try:
        out["  of which: de-duplicating the path list"] = best_of(dedup)
        data = [project.source.read(p) for p in paths]
        out["read (WorkingTree.read)"] = best_of(lambda: [project.source.read(p) for p in paths])
        out["parse (plan.parse_bytes)"] = best_of(
            lambda: [plan.parse_bytes(d, p) for d, p in zip(data, paths, strict=True)]
        )
        texts = [d.decode() for d in data]
        cuts = [frontmatter.split(t) for t in texts]
        out["  frontmatter.split"] = best_of(lambda: [frontmatter.split(t) for t in texts])
        out["  frontmatter.load"] = best_of(lambda: [frontmatter.load(c.yaml_text) for c in cuts])
        loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
        out["    yaml.compose"] = best_of(
            lambda: [yaml.compose(c.yaml_text, Loader=loader) for c in cuts]
        )
        nodes = [yaml.compose(c.yaml_text, Loader=loader) for c in cuts]
        out["    _expanded_size (alias guard)"] = best_of(
            lambda: [frontmatter._expanded_size(n, {}) for n in nodes]
        )
        out["    _to_python"] = best_of(lambda: [frontmatter._to_python(n) for n in nodes])
        out["  body scan (_Scanner.tasks)"] = best_of(
            lambda: [
                plan._Scanner(t, c.body_offset, "p").tasks()
                for t, c in zip(texts, cuts, strict=True)
            ]
        )
        plans = [project.plan(p) for p in paths]
        checked = [f for p in plans for f in p.files_modified]
        checked += [f for p in plans for task in p.tasks if task.child("files") for f in task.files]
        out[f"path_problem ({len(checked) / len(paths):.1f} calls/plan)"] = best_of(
            lambda: [path_problem(f, root) for f in checked]
        )
        out["check_plan (incl. path_problem)"] = best_of(
            lambda: [list(check_plan(p, project)) for p in plans]
        )
        folders = list(dict.fromkeys(p.rsplit("/", 1)[0] for p in paths))
        first = {f: next(p for p in paths if p.startswith(f + "/")) for f in folders}
        out["check_phase"] = best_of(
            lambda: [list(check_phase(first[f], project)) for f in folders]
        )
    finally:
        gc.enable()
    return out


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [1000, 3000, 10000]
    columns: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gsd-components-") as tmp:
        for n in sizes:
            root = generate.make_project(Path(tmp) / f"t{n}", n)
            columns[n] = measure(root)
            print(f"  {n:,} plans measured", file=sys.stderr, flush=True)
    names = list(columns[sizes[0]])
    width = max(len(n) for n in names)
    print(f"{'us per plan':<{width}}  " + "  ".join(f"{n:>8,}" for n in sizes))
    for name in names:
        cells = "  ".join(f"{columns[n][name] / n * 1e6:8.0f}" for n in sizes)
        print(f"{name:<{width}}  {cells}")
    print("(sub-rows are timed on their own and need not add up to the row above them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
