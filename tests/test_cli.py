"""The command line: show, waves, rules, formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.cli.entry import internal_error
from gsd.core.rules import RULES
from tests.conftest import auto_task, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.fixture
def phase(project):
    """Phase 1: 01-01 and 01-02 in wave 1 (sharing a file), 01-03 in wave 2."""
    project.plan(
        "01-01",
        files_modified="[src/a.py]",
        tasks=auto_task(attrs=' specialist="python-pro"') + "\n" + auto_task("Task 2: b"),
    )
    project.plan("01-02", files_modified="[src/a.py, src/b.py]")
    project.plan("01-03", depends_on='["01-01"]', wave=2, files_modified="[src/c.py]")
    project.write(".planning/available_agents.md", "- **python-pro**: Python\n")
    return project


def test_show_json_gives_every_task(phase, gsd) -> None:
    result = gsd("show", "01-01", "--format", "json")
    assert result.code == 0
    (plan,) = json.loads(result.out)["plans"]
    assert plan["id"] == "01-01" and plan["plan"] == "01"
    assert plan["tasks"] == [
        {
            "index": 1,
            "type": "auto",
            "name": "Task 1: do it",
            "specialist": "python-pro",
            "specialist_form": "attribute",
            "agent": "python-pro",
            "fallback": None,
            "runner": None,
            "model": None,
            "files": ["src/x.py"],
            "line": 21,
        },
        {
            "index": 2,
            "type": "auto",
            "name": "Task 2: b",
            "specialist": None,
            "specialist_form": None,
            "agent": "gsd-executor",
            "fallback": None,
            "runner": None,
            "model": None,
            "files": ["src/x.py"],
            "line": 28,
        },
    ]


@pytest.mark.parametrize("target", ["1", "01", "01-alpha", ".planning/phases/01-alpha"])
def test_show_a_phase(phase, gsd, target: str) -> None:
    result = gsd("show", target)
    assert result.code == 0, result.err
    assert [line.split()[1] for line in result.out.splitlines() if line.startswith("Plan ")] == [
        "01-01",
        "01-02",
        "01-03",
    ]


def test_show_a_plan_file_as_markdown(phase, gsd) -> None:
    result = gsd("show", ".planning/phases/01-alpha/01-01-PLAN.md", "--format", "markdown")
    assert result.code == 0
    assert result.out.startswith("## Plan 01-01")
    assert "| python-pro " in result.out
    assert "| agent " in result.out and "| fallback " in result.out


def test_show_unknown_plan(phase, gsd) -> None:
    result = gsd("show", "01-09")
    assert (result.code, result.err.splitlines()[0][:16]) == (2, "gsd: error: no p")


def test_waves_text_and_json(phase, gsd) -> None:
    text = gsd("waves", "1")
    assert text.code == 0
    assert "Phase 01-alpha: 3 plans in 2 waves" in text.out
    assert "01-01 -> 01-02" in text.out  # they share src/a.py
    assert "Critical path: 01-01 -> 01-03 (2 plans)" in text.out
    view = json.loads(gsd("waves", "1", "--format", "json").out)
    assert view["waves"] == [
        {"wave": 1, "plans": ["01-01", "01-02"], "sequential_groups": [["01-01", "01-02"]]},
        {"wave": 2, "plans": ["01-03"], "sequential_groups": []},
    ]


def test_waves_github_matrix(phase, gsd) -> None:
    everything = json.loads(gsd("waves", "1", "--format", "github-matrix").out)
    # 01-01 and 01-02 share src/a.py: one entry, run in order on one runner
    assert [row["plans"] for row in everything["include"]] == ["01-01 01-02", "01-03"]
    second = json.loads(gsd("waves", "1", "--format", "github-matrix", "--wave", "2").out)
    assert second == {"include": [{"phase": "01", "plan": "01-03", "plans": "01-03", "wave": 2}]}


def test_waves_with_a_cycle_exits_1(project, gsd) -> None:
    project.plan("01-01", depends_on='["01-02"]')
    project.plan("01-02", depends_on='["01-01"]', files_modified="[b]")
    result = gsd("waves", "1")
    assert result.code == 1
    assert "Cycle (not scheduled): 01-01 -> 01-02 -> 01-01" in result.out


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_rules_lists_every_code(gsd, fmt: str) -> None:
    from gsd.core.rules import RULES

    result = gsd("rules", "--format", fmt)
    assert result.code == 0
    for code in RULES:
        assert code in result.out


def test_text_output_is_path_line_col_severity_code(project, gsd) -> None:
    project.plan("01-01", text=plan_text().replace("wave: 1", "wave: soon"))
    result = gsd("validate")
    assert result.code == 1
    assert result.out == (
        ".planning/phases/01-alpha/01-01-PLAN.md:5:1: error GSD003 `wave` is 'soon'; "
        "it must be an integer >= 0\n"
    )
    assert result.err == "1 error, 0 warnings in 1 file\n"


def test_usage_errors_exit_2(gsd) -> None:
    assert gsd("validate", "--format", "xml").code == 2
    assert gsd("no-such-command").code == 2


def test_internal_error_writes_the_traceback_to_a_file(capsys) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        code = internal_error(exc)
    err = capsys.readouterr().err
    assert code == 3
    assert "gsd: internal error: RuntimeError: boom (traceback in " in err
    path = Path(err.split("traceback in ")[1].split(";")[0])
    assert "RuntimeError: boom" in path.read_text()
    path.unlink()


def test_version(gsd) -> None:
    result = gsd("--version")
    assert result.code == 0 and result.out.startswith("gsd, version ")


def test_errors_command_filters_and_formats(project, gsd) -> None:
    from gsd.formats import errorlog

    log = errorlog.log_path(project.root)
    for plan, kind, agent in [("01", "timeout", "python-pro"), ("02", "nonzero-exit", "coder")]:
        errorlog.append(
            log,
            errorlog.ErrorRecord(
                phase="1",
                plan=plan,
                task="1",
                specialist=agent,
                error_type=kind,
                details="details " * 20,
                git_state="checkpoint/01-01/1",
                exit_code=124,
                attempt=1,
                runner="claude",
                duration_s=3.0,
            ),
        )
    everything = json.loads(gsd("errors", "--format", "json").out)["errors"]
    assert [e["error_type"] for e in everything] == ["timeout", "nonzero-exit"]
    only = json.loads(gsd("errors", "--type", "timeout", "--format", "json").out)["errors"]
    assert [e["specialist"] for e in only] == ["python-pro"]
    assert [
        e["plan"]
        for e in json.loads(gsd("errors", "--plan", "01-02", "--format", "json").out)["errors"]
    ] == ["02"]
    text = gsd("errors", "--specialist", "coder")
    assert text.code == 0 and "nonzero-exit" in text.out and "timeout" not in text.out
    bad = gsd("errors", "--since", "yesterday-ish")
    assert bad.code == 2 and bad.err.startswith("gsd: error: --since")


def test_checkpoints_list_and_prune(git_project, gsd) -> None:
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.repo import Git

    assert gsd("checkpoints", "list").out == "No checkpoint tags.\n"
    left = Checkpoints(Git(git_project.root)).create("01-02", 3)  # as a crash leaves it
    listed = json.loads(gsd("checkpoints", "list", "--format", "json").out)["checkpoints"]
    assert [(c["tag"], c["plan"], c["task"]) for c in listed] == [(left.tag, "01-02", 3)]
    assert gsd("checkpoints", "prune", "--older-than", "1").out == ""  # too recent to prune
    from gsd.io.lock import RunLock

    with RunLock(git_project.root / ".git"):
        busy = gsd("checkpoints", "prune")  # a live run holds the lock
    assert busy.code == 2 and "another gsd run holds" in busy.err
    pruned = gsd("checkpoints", "prune")
    assert pruned.code == 0 and pruned.out == f"deleted {left.tag}\n"
    assert gsd("checkpoints", "list", "--format", "json").out.strip().endswith("[]\n}")


def test_checkpoints_outside_git_is_one_line(project, gsd) -> None:
    result = gsd("checkpoints", "list")
    assert result.code == 2 and result.err.startswith("gsd: error: not a git repository")


def markdown_rows(out: str) -> list[list[str]]:
    """The cells of every Markdown table row, split where GitHub splits them."""
    import re

    return [
        [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in out.splitlines()
        if line.startswith("|")
    ]


def test_markdown_tables_escape_pipes_and_keep_rows_on_one_line(project, gsd) -> None:
    project.plan("01-01", tasks=auto_task("Task 1: a | b", files="src/a|b.py"))
    rows = markdown_rows(gsd("show", "01-01", "--format", "markdown").out)
    assert len({len(r) for r in rows}) == 1  # every row has as many cells as the header
    assert "Task 1: a \\| b" in rows[2] and "src/a\\|b.py" in rows[2]
    status = markdown_rows(gsd("status", "--format", "markdown").out)
    assert status[0] == ["plan", "wave", "status", "tasks committed"]
    assert status[2] == ["01-01", "1", "pending", "0/1"]
    rules = markdown_rows(gsd("rules", "--format", "markdown").out)
    assert rules[0] == ["code", "severity", "rule"] and len(rules) == 2 + len(RULES)


def test_markdown_cell_is_one_line() -> None:
    from gsd.output.views import table

    assert table([{"a": "x|y\nz", "b": 1}], markdown=True).splitlines()[2] == "| x\\|y z |   1 |"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        pytest.param(
            ["validate", "--format", "xml"],
            "gsd: error: Invalid value for '--format': 'xml' is not one of 'text', 'json', "
            "'github', 'sarif', 'junit'. (see gsd validate --help)",
            id="bad-choice",
        ),
        pytest.param(
            ["no-such-command"],
            "gsd: error: No such command 'no-such-command'. (see gsd --help)",
            id="unknown-command",
        ),
        pytest.param(
            ["show"],
            "gsd: error: Missing argument 'TARGET'. (see gsd show --help)",
            id="missing-argument",
        ),
        pytest.param(
            ["validate", "-j", "²"],
            "gsd: error: Invalid value for '-j' / '--jobs': '²' is not a valid integer range. "
            "(see gsd validate --help)",
            id="superscript-jobs",
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(gsd, args: list[str], line: str) -> None:
    result = gsd(*args)
    assert (result.code, result.out, result.err) == (2, "", line + "\n")


def test_ctrl_c_says_the_same_on_both_paths(project, gsd, monkeypatch) -> None:
    from gsd.cli import lint
    from gsd.core.errors import INTERRUPTED
    from gsd.output import render

    def interrupt(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(lint, "run", interrupt)  # the git-hook path, no Click
    monkeypatch.setattr(render, "rules_table", interrupt)  # a Click command
    for args in (["validate"], ["rules"]):
        result = gsd(*args)
        assert (result.code, result.err) == (130, f"\n{INTERRUPTED}\n")


# --- --help: whole sentences, every --format explained ---------------------------------------


def _commands(group=None, path=("gsd",)):
    """Every command and group of the command line, with its path."""
    import click

    from gsd.cli.app import cli

    group = group or cli
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


@pytest.mark.parametrize("width", ["80", "50"])
def test_help_lists_every_command_by_a_whole_sentence(gsd, monkeypatch, width: str) -> None:
    monkeypatch.setenv("COLUMNS", width)
    groups = [(), *[p[1:] for p, c in _commands() if hasattr(c, "commands")]]
    for group in groups:
        result = gsd(*group, "--help")
        assert result.code == 0
        listing = result.out.split("Commands:\n", 1)[1]
        summaries = " ".join(listing.split())  # a summary may wrap onto more lines
        assert "..." not in summaries
    for path, command in _commands():
        summary = command.get_short_help_str(limit=10)
        assert summary[0].isupper() and summary.endswith("."), (path, summary)
        assert summary == " ".join(command.help.split("\n\n")[0].split()), path


def test_help_summaries_fit_one_line_of_an_80_column_terminal(gsd, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = gsd("--help")
    rows = result.out.split("Commands:\n", 1)[1].splitlines()
    assert all(row.startswith("  ") and not row.startswith("   ") for row in rows if row), rows


def test_every_format_option_names_its_choices() -> None:
    import click

    for path, command in _commands():
        for option in command.params:
            if "--format" not in getattr(option, "opts", []):
                continue
            assert isinstance(option.type, click.Choice), path
            assert option.help, path
            for choice in option.type.choices:
                assert str(choice) in option.help, (path, choice)


def test_format_help_in_the_real_help_output(gsd) -> None:
    result = gsd("diff", "--help")
    text = " ".join(result.out.split())
    assert (
        "Output format: text (for a terminal), markdown (for a pull request or an issue) or "
        "json (for programs). [default: text]"
    ) in text


# --- counted nouns ---------------------------------------------------------------------------


def test_counts_are_singular_for_one(project, gsd, runners_on_path) -> None:
    project.plan("01-01")
    waves = gsd("waves", "1")
    assert waves.out.startswith("Phase 01-alpha: 1 plan in 1 wave\n")
    assert "Critical path: 01-01 (1 plan)" in waves.out
    assert "autonomous true, 1 task\n" in gsd("show", "1").out
    assert gsd("execute-phase", "1", "--dry-run").out.startswith(
        "Phase 01-alpha: dry run, 1 task (nothing is changed)\n"
    )
    assert gsd("status").out.startswith("Phase 01-alpha: 0/1 plan done\n")
    assert gsd("validate").err == "0 errors, 0 warnings in 1 file\n"


def test_counts_are_plural_for_two(project, gsd, runners_on_path) -> None:
    project.plan("01-01", tasks=auto_task() + "\n" + auto_task("Task 2: more"))
    project.plan("01-02", depends_on='["01-01"]', wave=2, files_modified="[src/y.py]")
    waves = gsd("waves", "1")
    assert waves.out.startswith("Phase 01-alpha: 2 plans in 2 waves\n")
    assert "Critical path: 01-01 -> 01-02 (2 plans)" in waves.out
    assert "autonomous true, 2 tasks\n" in gsd("show", "01-01").out
    assert gsd("execute-phase", "1", "--dry-run").out.startswith(
        "Phase 01-alpha: dry run, 3 tasks (nothing is changed)\n"
    )
    assert gsd("status").out.startswith("Phase 01-alpha: 0/2 plans done\n")


def test_no_output_counts_with_a_parenthesised_plural() -> None:
    """`task(s)`, `error(s)`: one helper, gsd.core.words.plural, says `1 task`, `2 tasks`."""
    import re

    found = set()
    for path in sorted((Path(__file__).parent.parent / "gsd").glob("*.py")):
        for match in re.finditer(r"\b\w+\((?:s|es)\)", path.read_text()):
            found.add((path.name, match.group()))
    assert not found, found
