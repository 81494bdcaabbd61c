"""The launcher's `--hide`: everything readable but the hidden paths, through the launcher
itself (real Landlock, real files), and the rules it puts around them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.io.confine import sandbox
from gsd.io.process import launchhide
from tests.hostile import LANDLOCK

pytestmark = pytest.mark.unit  # `make test-fast` runs these

READ = """\
import sys
for path in sys.argv[1:]:
    try:
        open(path, "rb").read()
        print(path, "ok")
    except OSError as exc:
        print(path, exc.strerror)
"""


def _tree(base: Path) -> dict[str, Path]:
    paths = {
        "secret": base / "state/gsd/private/key",
        "beside": base / "state/gsd/worktrees/x.txt",
        "home": base / "home.txt",
        "deep": base / "state/gsd/private/inner/allowed.txt",
    }
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("data\n")
    return paths


def _reads(tmp_path: Path, options: list[str], paths: list[Path]) -> dict[str, str]:
    argv = [sys.executable, "-I", "-S", sandbox.LAUNCHER, "--landlock", *options, "--"]
    argv += [sys.executable, "-c", READ, *map(str, paths)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(line.rsplit(" ", 1) for line in done.stdout.replace(" denied", "").splitlines())


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock here")
def test_a_hidden_folder_is_unreadable_and_all_around_it_readable(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    private = tmp_path / "state/gsd/private"
    link = tmp_path / "state/link-to-key"
    link.symlink_to(paths["secret"])
    wanted = [paths["secret"], paths["beside"], paths["home"], link, Path("/etc/passwd")]
    seen = _reads(tmp_path, ["--hide", str(private)], wanted)
    assert seen == {
        str(paths["secret"]): "Permission",
        str(paths["beside"]): "ok",
        str(paths["home"]): "ok",
        str(link): "Permission",
        "/etc/passwd": "ok",
    }


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock here")
def test_a_writable_folder_holding_a_hidden_one_keeps_it_hidden(tmp_path: Path) -> None:
    """`sandbox.writable: ["~"]` must not open gsd's private folder; a writable path
    inside a hidden folder is the user's explicit wish: readable."""
    paths = _tree(tmp_path)
    private = tmp_path / "state/gsd/private"
    inner = private / "inner"
    options = ["--write", str(tmp_path), "--write", str(inner), "--hide", str(private)]
    seen = _reads(tmp_path, options, [paths["secret"], paths["beside"], paths["deep"]])
    assert seen == {
        str(paths["secret"]): "Permission",
        str(paths["beside"]): "ok",
        str(paths["deep"]): "ok",
    }


def test_the_rules_go_around_the_hidden_path_only(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    (tmp_path / "state/gsd/private-link").symlink_to(tmp_path / "state/gsd/private")
    start = str(tmp_path)
    around = {str(paths["home"]), str(tmp_path / "home")}  # the test's HOME is there too
    granted = launchhide.granted((str(tmp_path / "state/gsd/private"),), start)
    # no rule on the link: reached through it, the folder is judged as itself
    assert set(granted) == {*around, str(tmp_path / "state/gsd/worktrees")}
    assert launchhide.granted(("/elsewhere",), start) == [start]
    assert launchhide.granted((start,), start) == []
    missing = launchhide.granted((str(tmp_path / "state/none/key"),), start)
    assert set(missing) == {*around, str(tmp_path / "state/gsd")}


def test_the_sandbox_hides_gsds_private_folder_and_every_terminal(tmp_path: Path) -> None:
    from gsd.io import records

    hidden = sandbox.unreadable(tmp_path)
    assert records.private_folder() in hidden
    terminals = [path for path in hidden if path.parent == Path("/dev")]
    assert {path.name for path in terminals} >= {"tty", "pts"} & set(os.listdir("/dev"))
    assert not set(sandbox.DEVICES) & {"/dev/tty", "/dev/pts", "/dev/ptmx"}


def test_the_users_credential_files_are_hidden_unless_handed_over(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".git-credentials").write_text("https://u:secret@example.com\n")
    (home / ".config/gh").mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = U\n")
    hidden = set(sandbox.unreadable(home))
    assert {home / ".ssh", home / ".git-credentials", home / ".config/gh"} <= hidden
    assert home / ".gitconfig" not in hidden and home / ".netrc" not in hidden  # none there
    handed = set(sandbox.unreadable(home, ("~/.ssh",)))
    assert home / ".ssh" not in handed and home / ".git-credentials" in handed
