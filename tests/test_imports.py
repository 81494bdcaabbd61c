"""The validate hook path imports only what it uses."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("git", "pydantic", "lxml", "tabulate")


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
    assert loaded_after("import gsd.cli", str(REPO)) == []


def test_validate_loads_no_heavy_dependency_and_not_click() -> None:
    code = "from gsd.entry import main\nmain(['validate'])"
    assert loaded_after(code, str(REPO / "examples" / "demo"), (*HEAVY, "click", "yaml")) == []


def test_validate_help_still_goes_through_click() -> None:
    code = "from gsd.entry import main\nmain(['validate', '--help'])"
    assert loaded_after(code, str(REPO), ("click",)) == ["click"]


def test_validate_text_loads_neither_lxml_nor_jsonlines() -> None:
    code = "from gsd.entry import main\nmain(['validate'])"
    modules = ("lxml", "jsonlines", "attr")
    assert loaded_after(code, str(REPO / "examples" / "demo"), modules) == []


def test_validate_junit_loads_lxml_and_still_not_click() -> None:
    code = "from gsd.entry import main\nmain(['validate', '--format', 'junit'])"
    modules = ("lxml", "jsonlines", "click", "pydantic", "git")
    assert loaded_after(code, str(REPO / "examples" / "demo"), modules) == ["lxml"]
