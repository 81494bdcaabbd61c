"""The demo agents' shared work: what each task of phase 01 really changes, and the report.

gsd runs an agent program with its working directory at the repository root and tells
it which task to do in GSD_PLAN ("01-02") and GSD_TASK ("1"). Every demo agent imports
this module, looks the task up in WORK, makes the change the plan's <action> asks for,
runs the task's checks when its tier has a shell, and prints a Task Report followed by
a GSD marker. Standard library only; deterministic: the same task always makes the same
files.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.dont_write_bytecode = True  # an agent must leave no __pycache__ behind

REPO = Path(os.environ.get("GSD_REPO") or ".").resolve()
PLAN = os.environ.get("GSD_PLAN", "")
TASK = os.environ.get("GSD_TASK", "")
AGENT = os.environ.get("GSD_SPECIALIST", Path(sys.argv[0]).stem)


class Done(NamedTuple):
    """What a task did, for its Task Report and Downstream Context."""

    created: list[str]
    modified: list[str]
    checks: list[list[str]]  # the commands that prove it (run only by agents with a shell)
    interfaces: str
    patterns: str
    warnings: str


class TaskFailed(Exception):
    """The task cannot be done as written (the repository is not as the plan expects)."""


def say(line: str) -> None:
    print(f"{AGENT}: {line}", flush=True)


def read(path: str) -> str:
    return (REPO / path).read_text(encoding="utf-8")


def write(path: str, text: str) -> str:
    target = REPO / path
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    say(f"{'modified' if existed else 'created'} {path}")
    return path


def unittest_check(test_file: str) -> list[str]:
    return [sys.executable, "-m", "unittest", "-q", test_file]


def load_src(module: str):  # noqa: ANN201 - a module object
    """Import src/<module>.py fresh, without writing bytecode."""
    spec = importlib.util.spec_from_file_location(module, REPO / "src" / f"{module}.py")
    if spec is None or spec.loader is None:
        raise TaskFailed(f"cannot load src/{module}.py")
    sys.path.insert(0, str(REPO / "src"))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


# --- plan 01-01: language-aware greet() -------------------------------------------------

GREET_BEFORE = '''def greet(name: str) -> str:
    """Return a friendly greeting for ``name``."""
    return f"Hello, {name}!"
'''

GREET_AFTER = '''# Greeting templates by language code; `{name}` is replaced by the person's name.
GREETINGS: dict[str, str] = {
    "en": "Hello, {name}!",
    "es": "¡Hola, {name}!",
    "fr": "Bonjour, {name} !",
}


def greet(name: str, lang: str = "en") -> str:
    """Return a friendly greeting for ``name`` in the language ``lang``.

    The code is looked up case-insensitively; a code not in GREETINGS falls back to
    English, because a greeting is better than an error.
    """
    template = GREETINGS.get(lang.lower(), GREETINGS["en"])
    return template.format(name=name)
'''


def add_language_table() -> Done:
    text = read("src/greet.py")
    if GREET_BEFORE not in text:
        raise TaskFailed("src/greet.py does not hold the one-language greet() the plan expects")
    text = text.replace(
        '"""Greet a person by name."""',
        '"""Greet a person by name, in English, Spanish or French."""',
    )
    write("src/greet.py", text.replace(GREET_BEFORE, GREET_AFTER))
    return Done(
        created=[],
        modified=["src/greet.py"],
        checks=[unittest_check("tests/test_greet.py")],
        interfaces="src/greet.py: GREETINGS: dict[str, str] (codes en, es, fr -> templates with "
        '{name}); greet(name: str, lang: str = "en") -> str',
        patterns="language codes are looked up lower-cased; unknown codes fall back to English",
        warnings="none",
    )


GREET_TESTS = """
    def test_english(self) -> None:
        self.assertEqual(greet("Ada", lang="en"), "Hello, Ada!")

    def test_spanish(self) -> None:
        self.assertEqual(greet("Ada", lang="es"), "¡Hola, Ada!")

    def test_french(self) -> None:
        self.assertEqual(greet("Ada", lang="fr"), "Bonjour, Ada !")

    def test_language_code_is_case_insensitive(self) -> None:
        self.assertEqual(greet("Ada", lang="ES"), greet("Ada", lang="es"))

    def test_unknown_language_falls_back_to_english(self) -> None:
        self.assertEqual(greet("Ada", lang="xx"), "Hello, Ada!")

    def test_every_language_has_a_test(self) -> None:
        self.assertEqual(sorted(GREETINGS), ["en", "es", "fr"])
"""


def cover_languages() -> Done:
    text = read("tests/test_greet.py")
    anchor = '        self.assertEqual(greet("Ada"), "Hello, Ada!")\n'
    if anchor not in text or "from greet import greet\n" not in text:
        raise TaskFailed("tests/test_greet.py has no test_greets_by_name to extend")
    text = text.replace("from greet import greet\n", "from greet import GREETINGS, greet\n")
    write("tests/test_greet.py", text.replace(anchor, anchor + GREET_TESTS, 1))
    return Done(
        created=[],
        modified=["tests/test_greet.py"],
        checks=[unittest_check("tests/test_greet.py")],
        interfaces="none",
        patterns="tests are unittest.TestCase methods, one per behaviour; run with "
        "PYTHONPATH=src python3 -m unittest",
        warnings="none",
    )


# --- plan 01-02: normalize_name() -----------------------------------------------------------

NAMES = '''"""Clean up the names the greeter is given before it greets them."""

from __future__ import annotations


def normalize_name(raw: str) -> str:
    """Return ``raw`` with runs of whitespace collapsed and both ends trimmed.

    A name written all in lower case gets a capital first letter ("ada" -> "Ada");
    a name with capitals of its own ("McAdams", "de la Cruz") is kept as written.
    Raises ValueError("name is empty") when nothing is left after trimming.
    """
    name = " ".join(raw.split())
    if not name:
        raise ValueError("name is empty")
    if name == name.lower():
        name = name[0].upper() + name[1:]
    return name
'''

NAMES_TESTS = """import unittest

from names import normalize_name

# (raw input, expected name)
CASES = [
    ("Ada", "Ada"),
    ("ada", "Ada"),
    ("  ada  ", "Ada"),
    ("Ada   Lovelace", "Ada Lovelace"),
    ("\\tada\\n", "Ada"),
    ("McAdams", "McAdams"),
    ("de la Cruz", "de la Cruz"),
    ("a", "A"),
]

REJECTED = ["", "   ", "\\t\\n"]


class NormalizeNameTest(unittest.TestCase):
    def test_table(self) -> None:
        for raw, expected in CASES:
            with self.subTest(raw=raw):
                self.assertEqual(normalize_name(raw), expected)

    def test_rejected(self) -> None:
        for raw in REJECTED:
            with self.subTest(raw=raw):
                with self.assertRaisesRegex(ValueError, "name is empty"):
                    normalize_name(raw)


if __name__ == "__main__":
    unittest.main()
"""


def create_normalize_name() -> Done:
    created = [p for p in ("src/names.py", "tests/test_names.py") if not (REPO / p).exists()]
    write("src/names.py", NAMES)
    write("tests/test_names.py", NAMES_TESTS)
    return Done(
        created=created,
        modified=[p for p in ("src/names.py", "tests/test_names.py") if p not in created],
        checks=[unittest_check("tests/test_names.py")],
        interfaces="src/names.py: normalize_name(raw: str) -> str, raises "
        'ValueError("name is empty")',
        patterns="table-driven tests: CASES rows checked with subTest, REJECTED inputs must raise",
        warnings="none",
    )


# --- plan 01-03: the command line and the README -------------------------------------

CLI = '''"""Greet someone from the terminal: `python3 src/cli.py Ada --lang fr`."""

from __future__ import annotations

import argparse
import sys

from greet import GREETINGS, greet
from names import normalize_name


def main(argv: list[str] | None = None) -> int:
    """Print the greeting for the name in `argv`; 0 on success, 2 for an empty name."""
    parser = argparse.ArgumentParser(prog="greet", description="Greet a person by name.")
    parser.add_argument("name", help="who to greet")
    parser.add_argument(
        "--lang", default="en", help=f"language code: {', '.join(GREETINGS)} (default: en)"
    )
    args = parser.parse_args(argv)
    try:
        name = normalize_name(args.name)
    except ValueError as exc:
        print(f"greet: {exc}", file=sys.stderr)
        return 2
    print(greet(name, lang=args.lang))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

CLI_TESTS = """import io
import unittest
from contextlib import redirect_stderr, redirect_stdout

from cli import main


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


class MainTest(unittest.TestCase):
    def test_english_by_default(self) -> None:
        self.assertEqual(run("Ada"), (0, "Hello, Ada!\\n", ""))

    def test_spanish(self) -> None:
        self.assertEqual(run("Ada", "--lang", "es"), (0, "¡Hola, Ada!\\n", ""))

    def test_french(self) -> None:
        self.assertEqual(run("Ada", "--lang", "fr"), (0, "Bonjour, Ada !\\n", ""))

    def test_name_is_normalized(self) -> None:
        self.assertEqual(run("  ada  "), (0, "Hello, Ada!\\n", ""))

    def test_empty_name_is_rejected_with_exit_2(self) -> None:
        self.assertEqual(run("   "), (2, "", "greet: name is empty\\n"))


if __name__ == "__main__":
    unittest.main()
"""


def add_cli() -> Done:
    for needed in ("src/greet.py", "src/names.py"):
        if not (REPO / needed).exists():
            raise TaskFailed(f"{needed} is missing: plans 01-01 and 01-02 must run first")
    created = [p for p in ("src/cli.py", "tests/test_cli.py") if not (REPO / p).exists()]
    write("src/cli.py", CLI)
    write("tests/test_cli.py", CLI_TESTS)
    return Done(
        created=created,
        modified=[p for p in ("src/cli.py", "tests/test_cli.py") if p not in created],
        checks=[
            unittest_check("tests/test_cli.py"),
            [sys.executable, "src/cli.py", "Ada", "--lang", "fr"],
        ],
        interfaces="src/cli.py: main(argv: list[str] | None = None) -> int; "
        "command `python3 src/cli.py NAME [--lang CODE]`, exit 2 on an empty name",
        patterns="errors go to stderr as `greet: <message>`; main() returns the exit code",
        warnings="none",
    )


def write_readme() -> Done:
    greet = load_src("greet")
    cli_out = greet.greet("Ada", lang="fr")  # what `python3 src/cli.py Ada --lang fr` prints
    codes = "\n".join(
        f"- `{code}`: {template.format(name='Ada')}" for code, template in greet.GREETINGS.items()
    )
    text = f"""# Greeter

Greeter greets a person by name, in English, Spanish or French, from Python or from
the terminal.

## Use it from Python

```python
>>> from greet import greet
>>> greet("Ada")
{greet.greet("Ada")!r}
>>> greet("Ada", lang="es")
{greet.greet("Ada", lang="es")!r}
```

An unknown language code falls back to English: `greet("Ada", lang="xx")` returns
`{greet.greet("Ada", lang="xx")!r}`.

## Use it from the terminal

```console
$ python3 src/cli.py Ada --lang fr
{cli_out}
```

Surrounding spaces are trimmed and an all-lower-case name is capitalized; an empty
name is refused with `greet: name is empty` on stderr and exit status 2.

## Languages

{codes}

## Run the tests

```sh
PYTHONPATH=src python3 -m unittest discover -s tests
```
"""
    existed = (REPO / "README.md").exists()
    write("README.md", text)
    return Done(
        created=[] if existed else ["README.md"],
        modified=["README.md"] if existed else [],
        checks=[],
        interfaces="none",
        patterns="README examples are generated from the code itself, so they match it",
        warnings="none",
    )


# --- the table of work, and how a task ends ---------------------------------------------------

WORK: dict[tuple[str, str], Callable[[], Done]] = {
    ("01-01", "1"): add_language_table,
    ("01-01", "2"): cover_languages,
    ("01-02", "1"): create_normalize_name,
    ("01-03", "1"): add_cli,
    ("01-03", "2"): write_readme,
}


def report(
    status: str,
    *,
    created: list[str] | None = None,
    modified: list[str] | None = None,
    validation: str = "skipped",
    errors: str = "none",
    interfaces: str = "none",
    patterns: str = "none",
    warnings: str = "none",
) -> int:
    """Print the Task Report, the Downstream Context and the marker; return the exit code."""
    print()
    print("### Task Report")
    print(f"- Status: {status}")
    print(f"- Files Created: {', '.join(created or []) or 'none'}")
    print(f"- Files Modified: {', '.join(modified or []) or 'none'}")
    print("- Files Deleted: none")
    print(f"- Validation: {validation}")
    print(f"- Errors: {errors}")
    print("### Downstream Context")
    print(f"- Key Interfaces Introduced: {interfaces}")
    print(f"- Patterns Established: {patterns}")
    print(f"- Warnings: {warnings}")
    if status == "success":
        print("## TASK COMPLETE")
        return 0
    print(f"## FAILED: {errors}")
    return 1


def run_checks(checks: list[list[str]]) -> tuple[str, str]:
    """Run the task's checks as gsd will: ('pass', 'none') or ('fail', the decisive line)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    for argv in checks:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=30)
        shown = " ".join(a if a != sys.executable else "python3" for a in argv)
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        say(f"check `{shown}`: exit {done.returncode} {last[0]}")
        if done.returncode != 0:
            return "fail", f"`{shown}` exited {done.returncode}: {last[0]}"
    return "pass", "none"


def do_task(*, shell: bool) -> int:
    """Do this process's task from WORK; an agent without a shell skips the checks."""
    work = WORK.get((PLAN, TASK))
    if work is None:
        return report("failure", errors=f"no demo work for plan {PLAN} task {TASK}")
    say(f"plan {PLAN} task {TASK}: {work.__name__.replace('_', ' ')}")
    try:
        done = work()
    except TaskFailed as exc:
        return report("failure", errors=str(exc))
    if shell and done.checks:
        validation, errors = run_checks(done.checks)
        warnings = done.warnings
    else:  # no shell tool: say so rather than claim a pass
        validation, errors = "skipped", "none"
        warnings = "no shell tool: the verify commands were left to gsd"
    return report(
        "success" if validation != "fail" else "failure",
        created=done.created,
        modified=done.modified,
        validation=validation,
        errors=errors,
        interfaces=done.interfaces,
        patterns=done.patterns,
        warnings=warnings,
    )


def table_rows(path: str, name: str) -> list[object]:
    """The literal list assigned to `name` in a Python file (a test table), or []."""
    for node in ast.parse(read(path)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []
