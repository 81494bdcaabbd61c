"""Byte-exact saves of .git internals and secrets, and putting them back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gsd.io.git import guard as gitguard

pytestmark = pytest.mark.unit  # `make test-fast` runs these


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
    assert changed == [
        "config",
        "hooks/linked",
        "hooks/post-checkout",
        "hooks/pre-commit",
        "info",
        "info/attributes",
    ]
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
