"""`gsd validate --staged` reads the git index, not the working tree."""

from __future__ import annotations

from tests.conftest import git, plan_text

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"


def test_staged_blob_is_validated_not_the_working_tree(git_project, gsd) -> None:
    broken = plan_text().replace("type: execute", "type: bogus")
    git_project.write(PLAN, broken)
    git(git_project.root, "add", PLAN)
    git_project.write(PLAN, plan_text())  # fixed on disk, not staged
    staged = gsd("validate", "--staged")
    assert staged.code == 1
    assert f"{PLAN}:4:1: error GSD003" in staged.out
    assert gsd("validate").code == 0


def test_fixed_in_the_index_passes_even_if_the_tree_is_broken(git_project, gsd) -> None:
    git_project.write(PLAN, plan_text())
    git(git_project.root, "add", PLAN)
    git_project.write(PLAN, "garbage")
    assert gsd("validate", "--staged").code == 0
    assert gsd("validate").code == 1


def test_staged_sees_siblings_from_the_index(git_project, gsd) -> None:
    other = ".planning/phases/01-alpha/01-02-PLAN.md"
    git_project.write(PLAN, plan_text())
    git_project.write(
        other, plan_text(plan="02", depends_on='["01-01"]', wave=2, files_modified="[src/y.py]")
    )
    git(git_project.root, "add", other)  # 01-01 exists only on disk
    result = gsd("validate", "--staged", other)
    assert result.code == 1
    assert "GSD040" in result.out


def test_staged_outside_git_is_a_usage_error(project, gsd) -> None:
    project.plan("01-01")
    result = gsd("validate", "--staged")
    assert result.code == 2
    assert result.err.startswith("gsd: error: --staged needs a git repository")
