"""STYLE's sizes, read from the source with `ast`: no function over 60 lines, no module over 400."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gsd"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def function_lengths(source: str) -> dict[str, int]:
    """Every function and method (nested ones too) by qualified name: its lines from
    `def` to its last line, docstring, comments and blank lines included."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def test_function_lengths_counts_from_def_to_last_line() -> None:
    source = (
        "@decorated\n"
        "def outer():\n"
        '    """Doc."""\n'
        "\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "class C:\n"
        "    def method(self):\n"
        "        if True:\n"
        "            async def deep():\n"
        "                pass\n"
    )
    assert function_lengths(source) == {
        "outer": 6,
        "outer.inner": 2,
        "C.method": 4,
        "C.method.deep": 2,
    }


def test_no_function_over_60_lines() -> None:
    too_long = []
    for path in _modules():
        for name, lines in function_lengths(path.read_text(encoding="utf-8")).items():
            qualified = f"{_name(path)}:{name}"
            if lines > MAX_FUNCTION_LINES:
                too_long.append(f"{qualified} has {lines} lines (at most {MAX_FUNCTION_LINES})")
    assert too_long == [], "split these into named steps:\n" + "\n".join(too_long)


def test_no_module_over_400_lines() -> None:
    too_long = []
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{_name(path)} has {lines} lines (at most {MAX_MODULE_LINES})")
    assert too_long == [], "split these modules (or shrink them):\n" + "\n".join(too_long)


def test_the_sizes_are_of_formatted_code() -> None:
    """The limits hold on the code as `ruff format` lays it out: no `fmt: skip` or
    `fmt: off` in gsd/, tests/ or bench/ keeps a statement on fewer lines, and ruff has
    nothing to change in them (`make lint` checks the same)."""
    import re
    import shutil
    import subprocess
    import sys

    trees = [PACKAGE, PACKAGE.parent / "tests", PACKAGE.parent / "bench"]
    marker = re.compile(r"#\s*fmt:\s*(?:skip|off)\b")
    marked = [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{number}"
        for tree in trees
        for path in sorted(tree.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if marker.search(line)
    ]
    assert marked == [], "formatting held back by a marker:\n" + "\n".join(marked)
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        return  # the markers are checked; `make lint` checks the layout
    check = [ruff, "format", "--check", *map(str, trees)]
    done = subprocess.run(check, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# A record (a NamedTuple of gsd's) built from this many positional arguments or more is
# built by keyword instead: `TaskOutcome(plan=..., task=...)` says which value is which.
MAX_POSITIONAL_FIELDS = 4


def record_classes() -> set[str]:
    """The names of gsd's NamedTuple classes (a name also used for another class is
    left out: a call cannot be told apart by name alone)."""
    records: set[str] = set()
    others: set[str] = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
                (records if "NamedTuple" in bases else others).add(node.name)
    return records - others


def positional_records(source: str, records: set[str]) -> list[tuple[int, str, int]]:
    """(line, record, positional arguments) of every call building a record from more
    than MAX_POSITIONAL_FIELDS positional arguments."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in records and len(node.args) > MAX_POSITIONAL_FIELDS:
                found.append((node.lineno, name, len(node.args)))
    return sorted(found)


def test_positional_records_are_found() -> None:
    source = "Outcome(1, 2, 3, 4, 5)\nx.Outcome(1, 2, 3, 4)\nOutcome(a=1, b=2, c=3, d=4, e=5)\n"
    assert positional_records(source, {"Outcome"}) == [(1, "Outcome", 5)]


def test_records_are_built_by_keyword() -> None:
    records = record_classes()
    assert {"TaskOutcome", "RunnerOutput", "Spawned", "Verdict"} <= records
    found = []
    for path in [*_modules(), *sorted(Path(__file__).parent.glob("*.py"))]:
        name = _name(path) if path.is_relative_to(PACKAGE) else f"tests/{path.name}"
        for line, record, count in positional_records(path.read_text(encoding="utf-8"), records):
            found.append(f"{name}:{line}: {record} built from {count} positional arguments")
    assert found == [], "build these by keyword:\n" + "\n".join(found)
