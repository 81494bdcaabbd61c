"""`gsd validate --staged` reads the git index, not the working tree."""

from __future__ import annotations

import pytest

from tests.conftest import git, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

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


def test_staged_lists_only_planning_and_the_named_paths(git_project, gsd) -> None:
    """A hook on a big repository lists `.planning/` and what it names, not the index."""
    from gsd.io.plans.sources import GitIndex

    git_project.write(PLAN, plan_text())
    git_project.write("src/a.py", "")
    git_project.write("docs/x [1]*/01-02-PLAN.md", plan_text(plan="02"))
    git_project.write("docs/x [1]*/01-03-PLAN.md", plan_text(plan="03"))
    git_project.write("docs/x [1]*/deep/01-04-PLAN.md", plan_text(plan="04"))
    git(git_project.root, "add", "-A")
    named = "docs/x [1]*/01-02-PLAN.md"
    index = GitIndex(git_project.root, [".planning", named])
    assert sorted(index._entries) == [PLAN, named, "docs/x [1]*/01-03-PLAN.md"]
    assert index.exists("docs") and index.exists("docs/x [1]*") and not index.exists("src")
    assert index.plans_in("docs/x [1]*") == [named, "docs/x [1]*/01-03-PLAN.md"]
    assert index.plan_paths("docs") == [named, "docs/x [1]*/01-03-PLAN.md"]
    whole = GitIndex(git_project.root, ["."])
    assert "src/a.py" in whole._entries and whole.exists(".")
    result = gsd("validate", "--staged", named)
    assert (result.code, result.err) == (0, "0 errors, 1 warning in 1 file\n")
    assert "GSD044" in result.out  # it shares src/x.py with 01-03, listed beside it


def test_staged_phase_and_root(git_project, gsd) -> None:
    git_project.write(PLAN, plan_text().replace("type: execute", "type: bogus"))
    git(git_project.root, "add", PLAN)
    assert "GSD003" in gsd("validate", "--staged", "--phase", "1").out
    assert "GSD003" in gsd("validate", "--staged", ".").out


def test_a_named_file_that_is_not_a_plan_is_refused_alike_on_disk_and_staged(
    git_project, gsd
) -> None:
    """One decision for both sources: -PLAN.md names a plan; anything else is an error."""
    git_project.write(PLAN, plan_text())
    git_project.write("notes/todo.md", "no frontmatter\n")
    git(git_project.root, "add", "-A")
    for name in ("README.md", "notes/todo.md", ".planning/phases/01-alpha/../../../README.md"):
        tree, index = gsd("validate", name), gsd("validate", "--staged", name)
        assert (tree.code, tree.out) == (index.code, index.out) == (2, "")
        assert tree.err == index.err
        assert tree.err.count("\n") == 1 and "not a plan file" in tree.err
    tree, index = gsd("validate", PLAN, "notes"), gsd("validate", "--staged", PLAN, "notes")
    assert (tree.code, tree.err) == (index.code, index.err)
    assert (tree.code, tree.err) == (0, "0 errors, 0 warnings in 1 file\n")
