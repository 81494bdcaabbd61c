"""A plan's worktree folder kept as the repository's spare checkout, and the next plan's
worktree made from it: what it holds is exactly a fresh checkout of the plan's start."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.io.git.repo import Git
from gsd.io.git.worktree import Worktrees
from tests.conftest import git


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and link under `root` but `.git`: contents (a link's target) and mode."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            if path.parent == root and name == ".git":
                continue
            rel = path.relative_to(root).as_posix()
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            found[rel] = (data, path.lstat().st_mode & 0o777)
    return found


def folders_of(root: Path) -> set[str]:
    return {
        Path(folder).relative_to(root).as_posix()
        for folder, dirs, _ in os.walk(root)
        if ".git" not in Path(folder).relative_to(root).parts
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    (root / ".gitignore").write_text("build/\n*.log\n")
    for n in range(30):
        (root / f"src/p{n % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"src/p{n % 3}/m{n}.py").write_text(f"VALUE = {n}\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("src/p0/m0.py", root / "link.py")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def worktrees(root: Path) -> Worktrees:
    git_ = Git(root)
    base = root.parent / "state"  # outside the repository, as the state folder is
    return Worktrees(git_, layout.plan_worktrees_dir(base, git_.common_dir))


def fresh_checkout(
    root: Path, commit: str, where: Path
) -> tuple[dict[str, tuple[bytes, int]], set[str]]:
    """The files and folders of a fresh checkout of `commit`."""
    git(root, "worktree", "add", "-q", "--detach", str(where), commit)
    found = files_of(where), folders_of(where)
    git(root, "worktree", "remove", "--force", str(where))
    return found


def spoil(place: Path) -> None:
    """What an agent may leave: untracked, ignored and changed files (one of the same
    size, its time put back), a nested repository, an empty folder, a changed mode."""
    (place / "new.txt").write_text("untracked\n")
    (place / "build").mkdir()
    (place / "build/out.o").write_text("ignored\n")
    (place / "debug.log").write_text("ignored\n")
    target = place / "src/p1/m1.py"
    before = target.stat()
    target.write_text("VALUE = 9\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    (place / "src/p2/m2.py").unlink()
    (place / "empty/deeper").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(place / "nested")], check=True)
    (place / "nested/x").write_text("x\n")
    (place / "run.sh").chmod(0o644)


def test_a_closed_plan_leaves_a_spare_and_the_next_plan_gets_a_fresh_checkout(
    repo: Path, tmp_path: Path
) -> None:
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    place, _ = trees.open("01-01", base)
    spoil(place.root)
    trees.close("01-01")
    spare = trees.folder.with_name(f"{trees.folder.name}.spare")  # type: ignore[union-attr]
    assert spare.is_dir() and not (spare / ".git").exists()
    assert not trees.folder.exists()  # type: ignore[union-attr]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1

    (repo / "src/p0/m3.py").write_text("VALUE = 33\n")  # the next plan starts later
    (repo / "src/p0/added.py").write_text("NEW = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    start = git(repo, "rev-parse", "HEAD").strip()
    place, _ = trees.open("01-02", start)
    assert not spare.exists()  # taken
    files, folders = fresh_checkout(repo, start, tmp_path / "fresh")
    assert files_of(place.root) == files
    assert folders_of(place.root) == folders  # no empty folder, no nested repository
    assert git(place.root, "status", "--porcelain", "--ignored") == ""
    assert git(place.root, "rev-parse", "HEAD").strip() == start
    assert git(place.root, "symbolic-ref", "HEAD").strip() == "refs/heads/gsd/01-02"
    trees.close("01-02")
    trees.delete_branch("01-02")


def test_a_second_plan_closing_while_a_spare_is_kept_is_removed(repo: Path) -> None:
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    first, _ = trees.open("01-01", base)
    second, _ = trees.open("01-02", base)
    trees.close("01-01")
    trees.close("01-02")
    assert not second.root.exists() and not first.root.exists()
    assert not trees.folder.exists()  # type: ignore[union-attr]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_spare_without_its_index_is_not_used(repo: Path) -> None:
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    trees.open("01-01", base)
    trees.close("01-01")
    spare = trees.folder.with_name(f"{trees.folder.name}.spare")  # type: ignore[union-attr]
    spare.with_name(spare.name + ".index").unlink()  # killed half way through a park
    (spare / "stale.txt").write_text("x\n")
    place, _ = trees.open("01-02", base)
    assert not (place.root / "stale.txt").exists()
    assert git(place.root, "status", "--porcelain", "--ignored") == ""
    assert not spare.exists()  # the half a killed run left is gone


def test_a_worktree_killed_before_the_spare_moved_in_is_reset_on_resume(repo: Path) -> None:
    """Killed between the spare's index moved in and its files: the worktree git knows
    has the index and no files; the resume puts the plan's start back in full."""
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    trees.open("01-01", base)
    trees.close("01-01")
    spare = trees.folder.with_name(f"{trees.folder.name}.spare")  # type: ignore[union-attr]
    where = trees.path("01-02")
    where.parent.mkdir(parents=True)
    git(repo, "worktree", "add", "-q", "--no-checkout", "-b", "gsd/01-02", str(where), base)
    admin = Path(git(where, "rev-parse", "--absolute-git-dir").strip())
    os.replace(spare.with_name(spare.name + ".index"), admin / "index")
    place, _ = trees.open("01-02", base)
    files, _ = fresh_checkout(repo, base, repo.parent / "fresh")
    assert files_of(place.root) == files
    trees.open("01-03", base)  # the spare's files, without their index: not used
    assert not spare.exists()


def test_a_spare_is_not_used_when_the_user_has_a_post_checkout_hook(repo: Path) -> None:
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    trees.open("01-01", base)
    trees.close("01-01")
    hook = repo / ".git/hooks/post-checkout"
    hook.write_text("#!/bin/sh\ntouch hooked\n")
    hook.chmod(0o755)
    place, _ = trees.open("01-02", base)
    assert (place.root / "hooked").exists()  # a fresh checkout ran it


def test_a_gitlink_makes_the_spare_be_discarded(repo: Path) -> None:
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    trees.open("01-01", base)
    (trees.path("01-01") / "sub").mkdir()
    trees.close("01-01")
    sub = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},sub")
    git(repo, "commit", "-q", "-m", "a gitlink")
    spare = trees.folder.with_name(f"{trees.folder.name}.spare")  # type: ignore[union-attr]
    (spare / "sub" / "junk").write_text("x\n")  # what no fresh checkout has
    start = git(repo, "rev-parse", "HEAD").strip()
    place, _ = trees.open("01-02", start)
    assert not (place.root / "sub" / "junk").exists()
    assert not spare.exists() and not spare.with_name(spare.name + ".index").exists()


def test_a_worktree_whose_git_file_an_agent_rewrote_is_removed_not_kept(repo: Path) -> None:
    """The `.git` file is in the agent's folder: one naming the user's git folder (or
    another worktree's) must never make gsd move that folder's index."""
    trees = worktrees(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    other, _ = trees.open("01-02", base)
    other_admin = Path(git(other.root, "rev-parse", "--absolute-git-dir").strip())
    spare = trees.folder.with_name(f"{trees.folder.name}.spare")  # type: ignore[union-attr]
    for target in (repo / ".git", other_admin):
        place, _ = trees.open("01-01", base)
        index = target / "index"
        before = index.read_bytes()
        (place.root / ".git").write_text(f"gitdir: {target}\n")
        trees.close("01-01")
        assert index.read_bytes() == before
        assert not spare.exists() and not place.root.exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 2  # 01-02's
    assert git(repo, "status", "--porcelain") == ""
