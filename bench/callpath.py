"""The call path of one gsd command through gsd's modules (issue 22's "steps", "modules"
and "returns to a module already left").

    .venv/bin/python bench/callpath.py REPO [GSD ARGS...]   # e.g. REPO sync --check

Runs `gsd ARGS` in this process, in REPO, under `sys.setprofile`, and keeps each gsd
function the first time it is called (imports, class bodies, comprehensions and lambdas
left out), in call order (the call tree walked depth first,
every function once). The path is the modules of those functions, one after another:
a step is a move from one module to another, and a return is a step into a module the
path had already left. Prints the figures, then the path (`--quiet`: the figures only).
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any


def trace(argv: list[str]) -> list[tuple[str, str]]:
    """(module, function) of each gsd function, at its first call, in call order."""
    from gsd.cli.entry import main

    seen: set[Any] = set()
    order: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        module = frame.f_globals.get("__name__", "")
        if code in seen or not (module == "gsd" or module.startswith("gsd.")):
            return
        if not code.co_flags & inspect.CO_NEWLOCALS or _generated(code.co_qualname):
            return  # a module's or a class's body (imports), a comprehension, a lambda
        seen.add(code)
        order.append((module, code.co_qualname))

    sys.argv = ["gsd", *argv]
    sys.setprofile(profile)
    try:
        main()
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    return order


def _generated(qualname: str) -> bool:
    """A function the code never names: a comprehension, a lambda, a dataclass's
    generated `__init__`."""
    return qualname.startswith("<") or ".<" in qualname or "__create_fn__" in qualname


def figures(order: list[tuple[str, str]]) -> tuple[int, int, int, list[str]]:
    """(steps, modules, returns, the path's lines)."""
    path: list[str] = []
    steps = returns = 0
    left: set[str] = set()
    lines: list[str] = []
    for module, function in order:
        if path and module != path[-1]:
            steps += 1
            left.add(path[-1])
            if module in left:
                returns += 1
        if not path or module != path[-1]:
            path.append(module)
            lines.append(f"{module}.{function}")
    return steps, len(set(path)), returns, lines


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--quiet"]
    repo, argv = Path(args[0]), args[1:]
    os.chdir(repo)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    order = trace(argv)
    steps, modules, returns, lines = figures(order)
    print(
        f"gsd {' '.join(argv)}: {len(order)} functions, {steps} steps through {modules} "
        f"modules, {returns} returns to a module already left",
        file=sys.stderr,
    )
    if "--quiet" not in sys.argv:
        print("\n".join(lines), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
