"""gsd's modules import one another without a cycle, and commands load only what they use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, Project, git

HEAVY = ("git", "pydantic", "lxml", "tabulate")
PACKAGE = REPO / "gsd"


def loaded_after(code: str, cwd: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    probe = (
        f"import sys\n{code}\n"
        f"print('loaded:' + ','.join(m for m in {modules!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    )
    last = done.stdout.strip().splitlines()[-1]
    return [m for m in last.removeprefix("loaded:").split(",") if m]


def test_import_cli_loads_no_heavy_dependency() -> None:
    assert loaded_after("import gsd.cli.app", str(REPO)) == []


@pytest.mark.parametrize("args", [["--help"], ["mcp", "--help"]], ids=["gsd", "gsd-mcp"])
def test_help_does_not_load_the_mcp_sdk(args: list[str]) -> None:
    """Only `gsd mcp` itself imports the MCP SDK (gsd.cli.mcp_server)."""
    code = f"from gsd.cli.entry import main\nmain({args!r})"
    assert loaded_after(code, str(REPO), ("mcp", "gsd.cli.mcp_server")) == []


def test_validate_loads_no_heavy_dependency_and_not_click() -> None:
    code = "from gsd.cli.entry import main\nmain(['validate'])"
    assert loaded_after(code, str(REPO / "examples" / "demo"), (*HEAVY, "click", "yaml")) == []


def test_validate_help_still_goes_through_click() -> None:
    code = "from gsd.cli.entry import main\nmain(['validate', '--help'])"
    assert loaded_after(code, str(REPO), ("click",)) == ["click"]


def test_validate_text_loads_neither_lxml_nor_jsonlines() -> None:
    code = "from gsd.cli.entry import main\nmain(['validate'])"
    modules = ("lxml", "jsonlines", "attr")
    assert loaded_after(code, str(REPO / "examples" / "demo"), modules) == []


def test_validate_junit_loads_lxml_and_still_not_click() -> None:
    code = "from gsd.cli.entry import main\nmain(['validate', '--format', 'junit'])"
    modules = ("lxml", "jsonlines", "click", "pydantic", "git")
    assert loaded_after(code, str(REPO / "examples" / "demo"), modules) == ["lxml"]


def test_the_pre_commit_hook_loads_only_what_its_staged_plan_needs(git_project: Project) -> None:
    """`gsd validate --staged PLAN` (issue 23: at most 3x `python -c pass`): no Click, no
    pydantic, no json without a config.json, and nothing the hook never uses."""
    plan = git_project.plan("01-01")
    git(git_project.root, "add", "-A")
    code = f"from gsd.cli.entry import main\nmain(['validate', '--staged', {str(plan)!r}])"
    unused = ("click", "pydantic", "json", "shlex", "hashlib", "tempfile", "shutil")
    assert loaded_after(code, str(git_project.root), unused) == []


@pytest.mark.parametrize("command", ["status", "validate"])
def test_read_only_commands_load_neither_gitpython_nor_pydantic(
    git_project: Project, command: str
) -> None:
    """`gsd status` took 212 ms instead of 12 when summary imported taskrun (issue 13)."""
    git_project.plan("01-01")
    git_project.write(".planning/phases/01-alpha/01-01-SUMMARY.md", "done\n")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "a plan", "-m", "Gsd-Task: 01-01-1")
    code = f"from gsd.cli.entry import main\nassert main([{command!r}]) == 0"
    assert loaded_after(code, str(git_project.root), ("git", "pydantic")) == []


# The graph: which gsd module imports which ------------------------------------------------


# Bottom to top: a module imports only from its own layer and the layers below it.
LAYERS = ("core", "formats", "io", "run", "commands", "output", "cli")

# Upward imports still to untangle (being removed this round; the list only shrinks).
UPWARD_TODAY: frozenset[tuple[str, str]] = frozenset()


def module_names() -> list[str]:
    """Every module as its dotted name under gsd: `core.ids`, `cli.app`, `__init__`;
    a layer's `__init__.py` is the layer's own name (`core`)."""
    names = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if len(parts) > 1 and parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return sorted(names)


def _module_path(module: str) -> Path:
    path = PACKAGE.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _type_checking_only(node: ast.If) -> bool:
    """An `if TYPE_CHECKING:` block: it never runs, so it cannot make a cycle; but what it
    imports is still a dependency, and may no more point upward than any other import."""
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, known: set[str]) -> set[str]:
    """The gsd modules one statement imports: `import gsd.x.y`, `from gsd.x import y`
    (y a module or a name in x), `from gsd.x.y import z`."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith("gsd."):
                found.add(alias.name.removeprefix("gsd."))
    elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gsd"):
        base = node.module.removeprefix("gsd").removeprefix(".")
        for alias in node.names:
            dotted = f"{base}.{alias.name}" if base else alias.name
            found.add(dotted if dotted in known else base)
    elif isinstance(node, ast.ImportFrom) and node.level > 0:
        raise AssertionError("a relative import: gsd's modules import by their full name")
    return found & known


def imports_in(source: str, known: set[str], *, type_checking: bool = True) -> set[str]:
    """Every gsd module the source imports, at module level or inside a function; those
    under `if TYPE_CHECKING:` only with `type_checking`."""
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _type_checking_only(node) and not type_checking:
            pending.extend(node.orelse)
            continue
        found |= _imported(node, known)
        pending.extend(ast.iter_child_nodes(node))
    return found


def import_graph(*, type_checking: bool = True) -> dict[str, set[str]]:
    """Module -> the gsd modules it imports (`gsd/__init__.py` is `__init__`); those under
    `if TYPE_CHECKING:` only with `type_checking`."""
    known = set(module_names())
    return {
        module: imports_in(
            _module_path(module).read_text(encoding="utf-8"), known, type_checking=type_checking
        )
        - {module}
        for module in sorted(known)
    }


def layer_of(module: str) -> int:
    """A module's place from the bottom; gsd's own `__init__` and `__main__` sit on top."""
    first = module.split(".")[0]
    return LAYERS.index(first) if first in LAYERS else len(LAYERS)


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {
        (module, imported)
        for module, imported_ in graph.items()
        for imported in imported_
        if layer_of(imported) > layer_of(module)
    }


def test_every_module_sits_in_a_layer() -> None:
    loose = [
        m
        for m in module_names()
        if m not in ("__init__", "__main__") and "." not in m and m not in LAYERS
    ]
    assert loose == [], f"modules outside the layer folders: {loose}"


def test_imports_go_only_downward() -> None:
    found = upward_imports(import_graph())
    new = sorted(found - UPWARD_TODAY)
    assert new == [], "upward imports: " + "; ".join(f"{a} -> {b}" for a, b in new)
    assert sorted(UPWARD_TODAY - found) == [], "untangled: take them off UPWARD_TODAY"


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_one_cycle(graph, set(component)) for component in components]


def _one_cycle(graph: dict[str, set[str]], members: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, for the message."""
    start = min(members)
    paths: dict[str, list[str]] = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def test_no_import_cycle_among_gsd_modules() -> None:
    """Imports that run: an `if TYPE_CHECKING:` import back to a module that imports this
    one (`run.derive` and `run.statetext` name each other's types) is no cycle."""
    cycles = [" -> ".join(cycle) for cycle in find_cycles(import_graph(type_checking=False))]
    assert cycles == [], "import cycles: " + "; ".join(cycles)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        pytest.param({"a": {"b"}, "b": set()}, [], id="none"),
        pytest.param({"a": {"b"}, "b": {"a"}}, [["a", "b", "a"]], id="two"),
        pytest.param(
            {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]], id="three"
        ),
    ],
)
def test_find_cycles_names_the_cycle(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert find_cycles(graph) == expected


def test_the_reader_sees_every_form_of_import_and_type_checking_ones_when_asked() -> None:
    source = (
        "from __future__ import annotations\n"
        "import typing\n"
        "from typing import TYPE_CHECKING\n"
        "import gsd.core.a\n"
        "from gsd.core import b, not_a_module\n"
        "from gsd.io.c import thing\n"
        "from gsd import io\n"
        "if TYPE_CHECKING:\n    from gsd.core.hint import Hint\n"
        "if typing.TYPE_CHECKING:\n    import gsd.core.hint2\n"
        "else:\n    import gsd.core.f\n"
        "def late() -> None:\n    from gsd.run.g import thing\n"
        "class Late:\n    def method(self) -> None:\n        import gsd.cli.h as h\n"
    )
    known = {
        "core",
        "io",
        "core.a",
        "core.b",
        "io.c",
        "core.f",
        "run.g",
        "cli.h",
        "core.hint",
        "core.hint2",
    }
    assert imports_in(source, known) == known
    assert imports_in(source, known, type_checking=False) == known - {"core.hint", "core.hint2"}


def test_the_graph_holds_every_module() -> None:
    graph = import_graph()
    assert {
        "cli.app",
        "cli.entry",
        "io.git.repo",
        "formats.planning.summary",
        "__init__",
        "core",
    } <= set(graph)
    assert "core.errors" in graph["cli.entry"] and "cli.entry" not in graph["cli.entry"]


def test_an_upward_import_is_found() -> None:
    graph = {"core.a": {"io.b"}, "io.b": {"core.a"}, "cli.c": {"run.d"}, "__main__": {"cli.c"}}
    assert upward_imports(graph) == {("core.a", "io.b")}
