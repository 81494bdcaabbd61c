"""The index flag reader against git's own `ls-files -v`, for every index version and hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.io.git import indexflags
from tests.conftest import git

pytestmark = pytest.mark.unit  # `make test-fast` runs these

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
    from_file = indexflags.index_flags(root / ".git/index", size)
    from_git = indexflags.parse_ls_files_v(git(root, "ls-files", "-v", "-z"))
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
    assert indexflags.index_flags(root / ".git/index") is None
    assert indexflags.index_flags(tmp_path / "no-index") == {}
    (tmp_path / "junk").write_bytes(b"DIRC\0\0\0\x09")
    assert indexflags.index_flags(tmp_path / "junk") is None
