"""Malformed input: every bad file is a diagnostic with a file and a line, never a traceback.

What a user checks: the exit code (1 for findings, 2 for usage errors, never 3),
the diagnostic code, the file and line it points at, and that stderr holds no
traceback. Usage errors are one `gsd: error: ...` line on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gsd.formats.planning.plan import parse, parse_bytes
from tests.conftest import REPO, Project, Run, auto_task, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

PLAN_01 = ".planning/phases/01-alpha/01-01-PLAN.md"
PLAN_02 = ".planning/phases/01-alpha/01-02-PLAN.md"


# --- helpers ------------------------------------------------------------------------------


def line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of `needle` in `text`."""
    index = text.index(needle)
    return text.count("\n", 0, index) + 1


def assert_no_crash(result: Run) -> None:
    assert result.code != 3, result.err
    assert "Traceback" not in result.err and "Traceback" not in result.out, result.err
    assert "internal error" not in result.err, result.err


def validate_json(gsd, *args: str) -> tuple[Run, list[dict]]:
    result = gsd("validate", "--format", "json", *args)
    assert_no_crash(result)
    return result, json.loads(result.out)["diagnostics"]


def found(diagnostics: list[dict], code: str, path: str = PLAN_01) -> list[dict]:
    return [d for d in diagnostics if d["code"] == code and d["path"] == path]


def run_subprocess(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """The real `gsd` in a child process, for inputs that could hang or blow up memory."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def alias_bomb() -> str:
    """Billion laughs: nine levels of nine aliases, 9**9 values once expanded."""
    lines = ["---", "a: &a [x,x,x,x,x,x,x,x,x]"]
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
        previous = name
    lines.append("phase: 01-alpha")
    lines.append("---")
    return "\n".join(lines) + "\n\n<tasks>\n" + auto_task() + "\n</tasks>\n"


def crlf(text: str) -> bytes:
    """The text as a Windows editor saves it: UTF-8 BOM and CRLF line endings."""
    return ("\ufeff" + text).replace("\n", "\r\n").encode()


# --- malformed frontmatter and task structure ---------------------------------------------

VALID = plan_text()
YAML_UNCLOSED = (
    '---\nphase: 01-alpha\nplan: "01"\ntype: execute\n'
    "files_modified: [src/x.py, src/y.py\n"  # line 5: the bracket is never closed
    "\n\n"
    "wave: 1\n"  # line 8: where the YAML parser notices
    "---\n\n<tasks>\n" + auto_task() + "\n</tasks>\n"
)
YAML_BAD_INDENT = (
    '---\nphase: 01-alpha\nplan: "01"\ntype: execute\nwave: 1\n'
    "depends_on: []\n"
    "  files_modified: [src/x.py]\n"  # line 7: indented under a scalar
    "autonomous: true\n---\n\n<tasks>\n" + auto_task() + "\n</tasks>\n"
)
NESTED_TASK = plan_text(
    tasks='<task type="auto">\n  <name>outer</name>\n  <action>a</action>\n'
    + auto_task("inner")
    + "\n</task>"
)
UNCLOSED_TASK = plan_text(
    tasks='<task type="auto">\n  <name>A</name>\n  <action>never closed</action>\n'
)
STRAY_CLOSE = plan_text(tasks=auto_task() + "\n</task>")
UNCLOSED_ACTION = plan_text(
    tasks='<task type="auto">\n  <name>A</name>\n  <action>never closed\n  <done>d</done>\n</task>'
)

# (content, code, acceptable lines, text the message must hold)
MALFORMED = [
    pytest.param("", "GSD001", {1}, "", id="empty-file"),
    pytest.param("\n" + VALID, "GSD001", {2}, "byte 0", id="leading-blank-line"),
    pytest.param("  " + VALID, "GSD001", {1}, "byte 0", id="leading-spaces"),
    pytest.param(
        VALID.replace("\n---\n", "\n", 1).replace("\n---\n", "\n\n"),
        "GSD001",
        {1},
        "not closed",
        id="no-closing-fence",
    ),
    # the bracket's line or the line where the parser noticed; both are file lines
    # (the YAML-relative line of the problem would be 7)
    pytest.param(YAML_UNCLOSED, "GSD001", {5, 8}, "invalid YAML", id="yaml-unclosed-bracket"),
    pytest.param(YAML_BAD_INDENT, "GSD001", {7}, "invalid YAML", id="yaml-bad-indentation"),
    pytest.param(
        "---\n- phase\n- plan\n---\n\n" + auto_task(),
        "GSD001",
        {2},
        "mapping",
        id="frontmatter-is-a-list",
    ),
    pytest.param(
        "---\njust words\n---\n\n" + auto_task(),
        "GSD001",
        {2},
        "mapping",
        id="frontmatter-is-a-scalar",
    ),
    pytest.param(
        "\n".join(
            line + (" caf\xe9" if n == 7 else "") for n, line in enumerate(VALID.split("\n"), 1)
        ).encode("latin-1"),
        "GSD050",
        {7},
        "UTF-8",
        id="latin-1-byte-on-line-7",
    ),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        "GSD050",
        {3},
        "binary",
        id="png-renamed-to-plan",
    ),
    pytest.param(
        VALID.encode()[:200] + b"\x00" + VALID.encode()[200:],
        "GSD050",
        {VALID[:200].count("\n") + 1},
        "NUL",
        id="nul-byte-in-text",
    ),
    pytest.param(
        UNCLOSED_TASK,
        "GSD015",
        {line_of(UNCLOSED_TASK, "<task ")},
        "never closed",
        id="unclosed-task",
    ),
    pytest.param(
        NESTED_TASK, "GSD015", {line_of(NESTED_TASK, "<task ")}, "not closed", id="nested-task"
    ),
    pytest.param(
        STRAY_CLOSE,
        "GSD015",
        {line_of(STRAY_CLOSE, "</task>\n</task>") + 1},
        "stray",
        id="stray-close-task",
    ),
    pytest.param(
        UNCLOSED_ACTION,
        "GSD015",
        {line_of(UNCLOSED_ACTION, "<action>")},
        "<action>",
        id="unclosed-action",
    ),
    # the same problems in a BOM + CRLF file land on the same lines
    pytest.param(
        crlf(YAML_BAD_INDENT), "GSD001", {7}, "invalid YAML", id="crlf-yaml-bad-indentation"
    ),
    pytest.param(crlf(YAML_UNCLOSED), "GSD001", {5, 8}, "invalid YAML", id="crlf-yaml-unclosed"),
    pytest.param(
        crlf(UNCLOSED_ACTION),
        "GSD015",
        {line_of(UNCLOSED_ACTION, "<action>")},
        "<action>",
        id="crlf-unclosed-action",
    ),
]


@pytest.mark.parametrize(("content", "code", "lines", "words"), MALFORMED)
def test_malformed_plan_is_a_diagnostic_with_file_and_line(
    project: Project, gsd, content: str | bytes, code: str, lines: set[int], words: str
) -> None:
    project.plan("01-01", content)
    result, diagnostics = validate_json(gsd)
    assert result.code == 1
    hits = found(diagnostics, code)
    assert hits, diagnostics
    assert hits[0]["line"] in lines, hits
    assert hits[0]["severity"] == "error"
    assert words in hits[0]["message"]
    text = gsd("validate")
    assert_no_crash(text)
    assert text.code == 1
    assert f"{PLAN_01}:{hits[0]['line']}:1: error {code} " in text.out
    for command in (("show", "1"), ("show", "01-01", "--format", "json"), ("waves", "1")):
        assert_no_crash(gsd(*command))


def test_yaml_alias_bomb_is_refused_fast(project: Project) -> None:
    project.plan("01-01", alias_bomb())
    started = time.monotonic()
    done = run_subprocess("validate", "--format", "json", cwd=project.root, timeout=120)
    assert time.monotonic() - started < 10  # includes starting Python; the parse itself is instant
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert [d["code"] for d in json.loads(done.stdout)["diagnostics"] if d["path"] == PLAN_01] == [
        "GSD001"
    ]
    started = time.monotonic()  # the child did not hang, so parsing in-process is safe
    plan = parse(alias_bomb(), PLAN_01)
    assert time.monotonic() - started < 2
    assert [(d.code, d.line) for d in plan.diagnostics] == [("GSD001", 2)]


def test_fifo_named_like_a_plan_does_not_hang(project: Project) -> None:
    project.plan("01-01")
    os.mkfifo(project.planning / "phases" / "01-alpha" / "01-02-PLAN.md")
    done = run_subprocess("validate", "--format", "json", cwd=project.root, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    hits = found(json.loads(done.stdout)["diagnostics"], "GSD050", PLAN_02)
    assert len(hits) == 1 and hits[0]["line"] == 1
    assert "not a regular file" in hits[0]["message"]


def test_symlinked_plan_pointing_outside_the_repository(
    project: Project, gsd, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "secret-PLAN.md"
    outside.parent.mkdir()
    outside.write_text(plan_text())
    (project.planning / "phases" / "01-alpha").mkdir(parents=True)
    (project.root / PLAN_01).symlink_to(outside)
    result, diagnostics = validate_json(gsd)
    assert result.code == 1
    hits = found(diagnostics, "GSD050")
    assert len(hits) == 1 and hits[0]["line"] == 1
    assert "outside the repository" in hits[0]["message"]


def test_directory_named_like_a_plan_is_reported(project: Project, gsd) -> None:
    project.plan("01-01")
    (project.root / PLAN_02).mkdir()
    result, diagnostics = validate_json(gsd)
    assert result.code == 1
    hits = found(diagnostics, "GSD050", PLAN_02)
    assert len(hits) == 1 and hits[0]["line"] == 1


def test_directory_named_like_a_plan_given_as_argument(project: Project, gsd) -> None:
    (project.root / PLAN_02).mkdir(parents=True)
    result = gsd("validate", PLAN_02)
    assert_no_crash(result)
    assert result.code in (1, 2), (result.out, result.err)


# --- nothing in a plan is resolved, fetched or executed ------------------------------------


def test_doctype_and_entities_are_never_resolved(project: Project, gsd, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SENTINEL-SECRET-4711\n")
    tasks = (
        '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">'
        f'<!ENTITY own SYSTEM "file://{secret}">]>\n'
        '<task type="auto">\n  <name>Read it</name>\n  <files>src/x.py</files>\n'
        "  <action>print &xxe; and &own; verbatim</action>\n"
        "  <verify><automated>true</automated></verify>\n  <done>d</done>\n</task>"
    )
    text = plan_text(tasks=tasks)
    project.plan("01-01", text)

    shown = gsd("show", "01-01", "--format", "json")
    assert_no_crash(shown)
    assert shown.code == 0, shown.err
    assert "SENTINEL-SECRET-4711" not in shown.out and "root:" not in shown.out
    [view] = json.loads(shown.out)["plans"]
    assert [t["name"] for t in view["tasks"]] == ["Read it"]

    plan = parse(text, PLAN_01)
    action = plan.tasks[0].child("action")
    assert action is not None
    assert action.text == "print &xxe; and &own; verbatim"
    assert action.line == line_of(text, "<action>")

    result, diagnostics = validate_json(gsd)
    assert result.code == 0, diagnostics
    assert "SENTINEL-SECRET-4711" not in result.out + result.err


def test_ten_megabyte_plan_with_five_thousand_tasks(project: Project, gsd) -> None:
    count = 5000
    filler = "x" * 1900
    tasks = "\n".join(auto_task(f"Task {n}: {filler}") for n in range(1, count + 1))
    data = plan_text(tasks=tasks).encode()
    assert len(data) > 10 * 10**6
    started = time.monotonic()
    plan = parse_bytes(data, PLAN_01)
    assert len(plan.tasks) == count
    assert plan.diagnostics == []
    assert plan.tasks[-1].name.startswith(f"Task {count}: ")
    assert plan.tasks[-1].line == data.decode().count("\n", 0, data.decode().rindex("<task ")) + 1
    project.plan("01-01", data)
    result = gsd("validate")
    assert_no_crash(result)
    assert result.code == 0, result.out
    assert time.monotonic() - started < 30


# --- paths that leave the repository ------------------------------------------------------

ESCAPING = [
    pytest.param("../x", id="parent"),
    pytest.param("/etc/passwd", id="absolute"),
    pytest.param("~/.ssh/id_rsa", id="home"),
    pytest.param("a/../../b", id="dotdot-in-the-middle"),
    pytest.param("vendor/x.py", id="symlinked-dir-to-outside"),
    pytest.param("vendor", id="symlinked-dir-itself"),
]


@pytest.mark.parametrize("path", ESCAPING)
def test_paths_that_escape_the_repository_are_gsd030(
    project: Project, gsd, tmp_path: Path, path: str
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (project.root / "vendor").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    text = plan_text(files_modified=f'["{path}"]', tasks=auto_task(files=path))
    project.plan("01-01", text)
    result, diagnostics = validate_json(gsd)
    assert result.code == 1
    hits = found(diagnostics, "GSD030")
    assert sorted(d["line"] for d in hits) == [
        line_of(text, "files_modified:"),
        line_of(text, "<files>"),
    ]
    assert all(d["severity"] == "error" and repr(path) in d["message"] for d in hits)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("src/../src/x.py", id="dotdot-back-inside"),
        pytest.param("./src/x.py", id="dot-slash"),
        pytest.param("src/x.py", id="plain"),
    ],
)
def test_paths_that_stay_inside_are_fine(project: Project, gsd, path: str) -> None:
    project.plan("01-01", plan_text(files_modified=f'["{path}"]', tasks=auto_task(files=path)))
    result, diagnostics = validate_json(gsd)
    assert result.code == 0
    assert diagnostics == []


# --- encodings ----------------------------------------------------------------------------


def test_bom_and_crlf_plan_parses_cleanly_with_true_line_numbers(project: Project, gsd) -> None:
    text = plan_text(tasks=auto_task(files="src/x.py, /etc/passwd"))
    data = ("\ufeff" + text).replace("\n", "\r\n").encode()
    project.plan("01-01", data)
    result, diagnostics = validate_json(gsd)
    assert result.code == 1
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD030", line_of(text, "<files>"))]

    plan = parse_bytes(data, PLAN_01)
    assert plan.diagnostics == []
    assert plan.frontmatter["plan"] == "01"
    assert plan.key_lines["wave"] == line_of(text, "wave:")
    [task] = plan.tasks
    assert task.line == line_of(text, "<task ")
    assert [(c.tag, c.line) for c in task.children] == [
        (tag, line_of(text, f"<{tag}>")) for tag in ("name", "files", "action", "verify", "done")
    ]
    assert all("\r" not in c.text for c in task.children)
    assert task.files == ["src/x.py", "/etc/passwd"]


# --- usage errors: exit 2, one line -------------------------------------------------------


def assert_one_line_usage_error(result: Run) -> None:
    assert_no_crash(result)
    assert result.code == 2, (result.out, result.err)
    assert result.err.startswith("gsd: error: ")
    assert result.err.count("\n") == 1, result.err
    assert result.out == ""


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("validate", "nope.md"), id="validate-missing-file"),
        pytest.param(("validate", "--phase", "99"), id="validate-unknown-phase"),
        pytest.param(("show", "99"), id="show-unknown-phase"),
        pytest.param(("show", "01-09"), id="show-unknown-plan"),
        pytest.param(("waves", "99"), id="waves-unknown-phase"),
    ],
)
def test_usage_errors_in_a_project(project: Project, gsd, args: tuple[str, ...]) -> None:
    project.plan("01-01")
    assert_one_line_usage_error(gsd(*args))


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("validate",), id="validate"),
        pytest.param(("show", "1"), id="show"),
        pytest.param(("waves", "1"), id="waves"),
    ],
)
def test_outside_any_project(
    gsd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    monkeypatch.chdir(nowhere)
    result = gsd(*args)
    assert_one_line_usage_error(result)
    assert "nowhere" in result.err
