"""gsd's paths have one owner, gsd/core/layout.py: no other module spells them out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gsd.core import layout
from tests.conftest import REPO, Project, git

OWNER = REPO / "gsd" / "core" / "layout.py"
# Names only the owner may join into a path: every `.git/gsd/...` path has a "gsd" in it.
OWNED = {layout.GSD, layout.PLANNING, layout.LOGS, layout.PHASES}


def path_literals(source: str) -> list[tuple[int, str]]:
    """String literals joined into a path with `/` (`x / "gsd"`, `".planning" / y`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    found.append((node.lineno, side.value))
    return found


def test_no_module_but_the_layout_joins_gsds_folder_names() -> None:
    strays = [
        f"{path.relative_to(REPO)}:{line}: / {text!r}"
        for path in sorted((REPO / "gsd").rglob("*.py"))
        if path != OWNER
        for line, text in path_literals(path.read_text(encoding="utf-8"))
        if text in OWNED or text.startswith(f"{layout.PLANNING}/")
    ]
    assert strays == [], "use gsd.core.layout:\n" + "\n".join(strays)


def test_the_reader_finds_a_joined_literal() -> None:
    found = path_literals('p = root / ".git" / "gsd"\nq = "a" + "b"\n')
    assert sorted(text for _, text in found) == [".git", "gsd"]


def test_shared_folders_are_under_the_common_dir_of_a_linked_worktree(
    git_project: Project, tmp_path: Path
) -> None:
    """A run started in a linked worktree locks and registers where a run started in the
    main checkout does: `git rev-parse --git-common-dir`, not the worktree's own."""
    from gsd.io.git import Git

    root = git_project.root
    git(root, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    linked = Git(tmp_path / "side")
    assert linked.git_dir != linked.common_dir
    assert layout.lock_file(linked.common_dir) == layout.lock_file(Git(root).common_dir)
    assert layout.running_dir(linked.common_dir).parent == (root / ".git" / "gsd").resolve()
    assert layout.checkpoints_dir(linked.git_dir).is_relative_to(root / ".git" / "worktrees")


def test_architecture_layout_lists_every_module_in_its_folder() -> None:
    """docs/ARCHITECTURE.md's "Layout" names each module of gsd/ under its folder, and no other."""
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text[text.index("## Layout") :]
    block = block[: block.index("\nworkflows/")]
    listed: dict[str, str] = {}
    folder = ""
    for row in block.splitlines():
        heading = re.match(r"^  (\w+(?:/\w+)*)/", row)  # a folder, or a package in one
        folder = heading.group(1) if heading else folder
        for name in re.findall(r"(\w+)\.py", row):
            listed[name] = folder
    tree = {
        path.stem: path.parent.relative_to(REPO / "gsd").as_posix()
        for path in (REPO / "gsd").rglob("*.py")
        if path.stem not in ("__init__", "__main__")
    }
    assert listed == tree


def test_an_archived_plan_names_its_milestone() -> None:
    assert (
        layout.archived_milestone(".planning/milestones/v1.0-phases/01-a/01-01-PLAN.md") == "v1.0"
    )
    assert layout.archived_milestone("/r/.planning/milestones/v2.10-phases/02/x.md") == "v2.10"
    assert layout.archived_milestone(".planning/phases/01-a/01-01-PLAN.md") is None
    assert layout.archived_milestone(".planning/milestones/notes/01/x.md") is None
