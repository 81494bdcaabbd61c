"""Shell completion through Click's own protocol (`_GSD_COMPLETE=...`), via gsd.cli.entry."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def run_gsd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m gsd` (gsd.cli.entry.main, as the console script runs it) with extra env."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args], env=full, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("shell", "signature"),
    [
        pytest.param("bash", "complete -o nosort -F _gsd_completion gsd", id="bash"),
        pytest.param("zsh", "#compdef gsd", id="zsh"),
        pytest.param("fish", "complete --no-files --command gsd", id="fish"),
    ],
)
def test_each_shell_gets_its_source_script(shell: str, signature: str) -> None:
    done = run_gsd({"_GSD_COMPLETE": f"{shell}_source"})
    assert done.returncode == 0, done.stderr
    assert signature in done.stdout
    assert "_GSD_COMPLETE=" in done.stdout  # the script calls gsd back the same way
    assert done.stderr == ""


def bash_complete(words: str, cword: int, *args: str) -> list[str]:
    env = {"_GSD_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    done = run_gsd(env, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        pytest.param("gsd ex", 1, ["plain,execute-phase", "plain,execute-plan"], id="command"),
        pytest.param(
            "gsd hooks ", 2, ["plain,install", "plain,run", "plain,uninstall"], id="subcommand"
        ),
        pytest.param("gsd hooks un", 2, ["plain,uninstall"], id="partial-subcommand"),
        pytest.param("gsd in", 1, ["plain,init"], id="init"),
        pytest.param("gsd validate --st", 2, ["plain,--staged", "plain,--strict"], id="option"),
        pytest.param(
            "gsd validate --format ",
            3,
            ["plain,text", "plain,json", "plain,github", "plain,sarif", "plain,junit"],
            id="choice",
        ),
    ],
)
def test_bash_completion_requests(words: str, cword: int, expected: list[str]) -> None:
    assert bash_complete(words, cword) == expected


def test_validate_in_argv_does_not_take_the_fast_path() -> None:
    """Even if a shell passed words as arguments, completion goes to Click, not the linter."""
    assert bash_complete("gsd validate --st", 2, "validate") == ["plain,--staged", "plain,--strict"]


def test_zsh_and_fish_completion_requests() -> None:
    zsh = run_gsd({"_GSD_COMPLETE": "zsh_complete", "COMP_WORDS": "gsd hooks u", "COMP_CWORD": "2"})
    assert zsh.stdout.splitlines()[:2] == ["plain", "uninstall"]
    fish = run_gsd(
        {"_GSD_COMPLETE": "fish_complete", "COMP_WORDS": "gsd hooks u", "COMP_CWORD": "u"}
    )
    assert [line.split("\t")[0] for line in fish.stdout.splitlines()] == ["plain,uninstall"]


def test_in_process_completion_returns_an_exit_code(gsd, monkeypatch) -> None:
    monkeypatch.setenv("_GSD_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "gsd agents ")
    monkeypatch.setenv("COMP_CWORD", "2")
    result = gsd()
    assert result.code == 0
    assert result.out.splitlines() == ["plain,check", "plain,list", "plain,sync"]


def test_real_bash_sources_the_script_and_completes(tmp_path: Path) -> None:
    """What a user's ~/.bashrc does: eval the script, then press TAB after `gsd hooks i`."""
    program = tmp_path / "bin" / "gsd"
    program.parent.mkdir()
    program.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} "
        '-m gsd "$@"\n'
    )
    program.chmod(0o755)
    script = (
        'eval "$(_GSD_COMPLETE=bash_source gsd)"\n'
        "COMP_WORDS=(gsd hooks i); COMP_CWORD=2\n"
        "_gsd_completion gsd\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{program.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["install"]
