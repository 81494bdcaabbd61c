"""Byte-exact saves of .git internals and secrets, and the index flag reader, against git."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gsd.io import gitguard
from tests.conftest import git

LONG = "/".join(["d" * 200] * 21) + "/long.txt"  # past the 4095 a name's length field holds


def flagged_repo(root: Path, version: int, object_format: str = "sha1") -> Path:
    git(root.parent, "init", "-q", f"--object-format={object_format}", str(root))
    git(root, "config", "index.version", str(version))
    for name in ["plain.txt", "dir/deep/name with space.txt", "ü-utf8.txt", "dir/z.txt"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    git(root, "add", "-A")
    blob = git(root, "hash-object", "-w", "plain.txt").strip()
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{LONG}")  # no such file
    git(root, "update-index", "--assume-unchanged", "plain.txt", LONG)
    git(root, "update-index", "--skip-worktree", "dir/deep/name with space.txt", "plain.txt")
    git(root, "update-index", "--skip-worktree", "dir/z.txt")
    return root


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_index_flags_read_from_the_file_equal_git_ls_files_v(
    tmp_path: Path, version: int, object_format: str
) -> None:
    root = flagged_repo(tmp_path / "repo", version, object_format)
    size = 20 if object_format == "sha1" else 32
    from_file = gitguard.index_flags(root / ".git/index", size)
    from_git = gitguard.parse_ls_files_v(git(root, "ls-files", "-v", "-z"))
    assert (
        from_file
        == from_git
        == {
            "plain.txt": "assume-unchanged,skip-worktree",
            LONG: "assume-unchanged",
            "dir/deep/name with space.txt": "skip-worktree",
            "dir/z.txt": "skip-worktree",
        }
    )


def test_a_split_index_is_left_to_git(tmp_path: Path) -> None:
    root = flagged_repo(tmp_path / "repo", 2)
    git(root, "update-index", "--split-index")
    assert gitguard.index_flags(root / ".git/index") is None
    assert gitguard.index_flags(tmp_path / "no-index") == {}
    (tmp_path / "junk").write_bytes(b"DIRC\0\0\0\x09")
    assert gitguard.index_flags(tmp_path / "junk") is None


def test_save_and_restore_a_tree_exactly(tmp_path: Path) -> None:
    base = tmp_path / "git"
    (base / "hooks").mkdir(parents=True)
    (base / "hooks/pre-commit").write_bytes(b"#!/bin/sh\nexit 0\n")
    (base / "hooks/pre-commit").chmod(0o755)
    (base / "hooks/linked").symlink_to("pre-commit")
    (base / "config").write_text("[core]\n")
    saved = gitguard.save_tree(base, ["hooks", "config", "info"])
    assert saved["info"] == gitguard.MISSING and saved["hooks/linked"].kind == "link"
    assert gitguard.same_stamps(base, saved)

    (base / "hooks/pre-commit").write_bytes(b"#!/bin/sh\ncurl evil\n")
    (base / "hooks/linked").unlink()
    (base / "hooks/linked").symlink_to("/etc/passwd")
    (base / "hooks/post-checkout").write_text("new\n")
    (base / "config").chmod(0o666)
    (base / "info").mkdir()
    (base / "info/attributes").write_text("* filter=evil\n")
    assert not gitguard.same_stamps(base, saved)
    now = gitguard.save_tree(base, ["hooks", "config", "info"])
    changed = gitguard.differences(saved, now)
    assert changed == ["config", "hooks/linked", "hooks/post-checkout", "hooks/pre-commit",
                       "info", "info/attributes"]  # fmt: skip
    assert gitguard.restore(base, saved, changed) == []
    assert gitguard.differences(saved, gitguard.save_tree(base, ["hooks", "config", "info"])) == []
    assert os.readlink(base / "hooks/linked") == "pre-commit"
    assert stat.S_IMODE((base / "hooks/pre-commit").stat().st_mode) == 0o755
    assert not (base / "info").exists()


def test_big_files_are_compared_by_stamp_and_reported_lost(tmp_path: Path) -> None:
    (tmp_path / "big.key").write_bytes(b"k" * 100)
    saved = {"big.key": gitguard.save(tmp_path, "big.key", cap=10)}
    assert saved["big.key"].data is None
    (tmp_path / "big.key").write_bytes(b"x" * 100)
    now = {"big.key": gitguard.save(tmp_path, "big.key", cap=10)}
    assert gitguard.differences(saved, now) == ["big.key"]
    assert gitguard.restore(tmp_path, saved, ["big.key"]) == ["big.key"]


def test_nothing_is_read_or_removed_through_a_symlinked_folder(tmp_path: Path) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "x").write_text("outside\n")
    (base / "sub").symlink_to(outside)
    assert gitguard.save(base, "sub/x") == gitguard.MISSING
    gitguard.restore(base, {"sub/x": gitguard.MISSING}, ["sub/x"])
    assert (outside / "x").read_text() == "outside\n"
    with pytest.raises(OSError):
        gitguard.restore(base, {"sub/y": gitguard.save(outside, "x")}, ["sub/y"])
    assert not (outside / "y").exists()


def test_the_ledger_answers_for_writes_after_a_mark(tmp_path: Path) -> None:
    ledger = gitguard.ledger(tmp_path)
    assert gitguard.ledger(tmp_path) is ledger
    ledger.wrote("refs/heads/a", "1")
    mark = ledger.now()
    ledger.wrote("refs/heads/b", "2")
    ledger.wrote("refs/heads/b", "")
    # every value since the mark is gsd's: another thread's listing may have seen "2"
    assert ledger.since(mark) == {"refs/heads/b": frozenset({"2", ""})}
    ledger.forget("refs/heads/b")
    assert ledger.since(0) == {"refs/heads/a": frozenset({"1"})}
