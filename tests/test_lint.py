"""The Click-free `gsd validate` path parses exactly what Click would."""

from __future__ import annotations

import pytest

from gsd.cli import lint
from gsd.cli.app import run as run_click
from tests.conftest import git

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param([], lint.Options(), id="nothing"),
        pytest.param(["a.md", "b"], lint.Options(paths=["a.md", "b"]), id="paths"),
        pytest.param(
            ["--phase", "2", "--strict", "--staged", "--format=json", "-j", "2"],
            lint.Options(phase="2", staged=True, strict=True, fmt="json", jobs=2),
            id="every-option",
        ),
        pytest.param(
            ["--jobs=1", "--", "-odd.md"], lint.Options(paths=["-odd.md"], jobs=1), id="double-dash"
        ),
        pytest.param(["--base", "main"], lint.Options(base="main"), id="base"),
        pytest.param(["--help"], None, id="help-goes-to-click"),
        pytest.param(["--format", "xml"], None, id="bad-format-goes-to-click"),
        pytest.param(["--jobs", "0"], None, id="bad-jobs-goes-to-click"),
        pytest.param(["--phase"], None, id="missing-value-goes-to-click"),
        pytest.param(["--stricter"], None, id="unknown-option-goes-to-click"),
        pytest.param(["--strict=yes"], None, id="flag-with-value-goes-to-click"),
    ],
)
def test_parse(args: list[str], expected: lint.Options | None) -> None:
    assert lint.parse(args) == expected


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--format", "json"],
        ["--strict", "--format", "github"],
        ["--phase", "1", "--format", "sarif"],
        [".planning/phases/01-alpha/01-02-PLAN.md", "--jobs", "1"],
        ["--base", "HEAD", "--format", "github"],
    ],
)
def test_fast_path_and_click_agree(git_project, gsd, capsys, args: list[str]) -> None:
    project = git_project
    project.plan("01-01")
    project.plan("01-02", text="---\nphase: x\n---\n<task type='odd'></task>\n")
    fast = gsd("validate", *args)
    code = run_click(["validate", *args])
    slow = capsys.readouterr()
    assert (fast.code, fast.out, fast.err) == (code, slow.out, slow.err)


def test_click_reports_bad_options_as_usage_errors(gsd) -> None:
    result = gsd("validate", "--format", "xml")
    assert result.code == 2
    assert "Invalid value for '--format'" in result.err


def test_phase_with_paths_is_a_usage_error_on_both_paths(project, gsd) -> None:
    from gsd.core.errors import UsageError

    project.plan("01-01")
    args = ["validate", "--phase", "1", ".planning/phases/01-alpha/01-01-PLAN.md"]
    fast = gsd(*args)
    assert (fast.code, fast.out) == (2, "")
    assert fast.err == (
        "gsd: error: --phase and PATHS name what to validate twice (pass one or the other)\n"
    )
    with pytest.raises(UsageError, match="^--phase and PATHS"):  # entry.main prints it
        run_click(args)


BROKEN = "---\nphase: x\n---\n<task type='odd'></task>\n"


def test_base_fails_only_on_what_the_change_introduces(git_project, gsd) -> None:
    """A pull request's check: every finding annotated, exit 1 only for new errors
    (compared as `gsd diff` compares them: by code, path and message, not line)."""
    git_project.plan("01-01", text=BROKEN)
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "a broken plan on the base branch")
    base = git(git_project.root, "rev-parse", "HEAD").strip()
    git_project.plan("01-02")  # a good plan; the old problem moves down a line
    path = git_project.root / ".planning/phases/01-alpha/01-01-PLAN.md"
    path.write_text(BROKEN.replace("---\n<task", "---\nA line of prose.\n\n<task"))
    result = gsd("validate", "--format", "github", "--base", base)
    assert result.code == 0, result.err
    assert result.out.count("::error") >= 1  # still annotated
    assert "0 failing findings new since" in result.err
    git_project.plan("01-03", text=BROKEN)  # a new broken plan
    result = gsd("validate", "--format", "github", "--base", base)
    assert result.code == 1
    assert "01-03-PLAN.md" in result.out and "01-01-PLAN.md" in result.out
    assert "new since" in result.err
    assert gsd("validate", "--base", base, ".planning/phases/01-alpha/01-02-PLAN.md").code == 0
    unknown = gsd("validate", "--base", "no-such-rev")
    assert unknown.code == 2 and "no-such-rev" in unknown.err and "Traceback" not in unknown.err
