"""The supervisor: real processes, real signals; afterwards nothing of the agent is alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gsd.io.process import proc, procgroups


def alive_with(token: str) -> list[int]:
    """Pids whose command line holds `token` (every test agent carries a unique one)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    cmdline = handle.read()
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if token.encode() in cmdline and state != b"Z":
                found.append(int(entry))
    return found


@pytest.fixture
def agent(tmp_path: Path):
    """Write a bash agent whose every process carries a unique token in its argv."""
    token = f"gsd-test-{uuid.uuid4().hex}"

    def make(script: str) -> tuple[list[str], str]:
        path = tmp_path / "agent.sh"
        path.write_text("#!/bin/bash\n" + textwrap.dedent(script))
        path.chmod(0o755)
        return [str(path), token], token

    yield make
    leftovers = alive_with(token)
    for pid in leftovers:  # never leave a process behind, even when a test fails
        os.kill(pid, signal.SIGKILL)
    assert not leftovers, f"processes left alive: {leftovers}"


def spawn(argv: list[str], tmp_path: Path, **kwargs: object) -> proc.Spawned:
    options = {"timeout_s": 30.0, "grace_s": 2.0}
    options.update(kwargs)
    return proc.supervise(
        argv,
        cwd=tmp_path,
        stdout_path=tmp_path / "out" / "stdout",
        stderr_path=tmp_path / "out" / "stderr",
        **options,  # type: ignore[arg-type]
    )


def test_exit_status_and_output_files(agent, tmp_path: Path) -> None:
    argv, _ = agent('echo "to out"; echo "to err" >&2; exit 3\n')
    result = spawn(argv, tmp_path)
    assert (result.exit_code, result.timed_out, result.killed) == (3, False, False)
    assert result.stdout_path.read_text() == "to out\n"
    assert result.stderr_path.read_text() == "to err\n"


def test_one_path_for_stdout_and_stderr_keeps_both_in_order(agent, tmp_path: Path) -> None:
    argv, _ = agent("echo one; echo ERR >&2; echo two\n")
    both = tmp_path / "out" / "both"
    both.parent.mkdir()
    both.write_text("an older run's much longer output\n")
    result = proc.supervise(
        argv, cwd=tmp_path, stdout_path=both, stderr_path=both, timeout_s=30.0, grace_s=2.0
    )
    assert result.exit_code == 0
    assert both.read_text() == "one\nERR\ntwo\n"


def test_timeout_sigterm_gives_124(agent, tmp_path: Path) -> None:
    argv, token = agent("trap 'exit 0' TERM\nsleep 60 & wait\n")
    result = spawn(argv, tmp_path, timeout_s=0.5, grace_s=10.0)
    assert (result.exit_code, result.timed_out, result.killed) == (124, True, False)
    assert result.duration_s < 10  # SIGTERM was enough: no wait for the grace period
    assert alive_with(token) == []


def test_ignores_sigterm_and_grandchild_holds_stdout(agent, tmp_path: Path) -> None:
    argv, token = agent(
        """
        trap '' TERM
        ( trap '' TERM; while true; do echo grandchild; sleep 0.2; done ) &
        echo started
        while true; do sleep 0.2; done
        """
    )
    started = time.monotonic()
    result = spawn(argv, tmp_path, timeout_s=0.5, grace_s=0.5)
    assert (result.exit_code, result.timed_out, result.killed) == (137, True, True)
    assert time.monotonic() - started < 20
    # the grandchild may print before its parent does: both share stdout
    assert "started" in result.stdout_path.read_text().splitlines()
    assert alive_with(token) == []


def test_leftover_grandchild_of_a_finished_agent_is_ended(agent, tmp_path: Path) -> None:
    argv, token = agent("( while true; do sleep 0.2; done ) &\necho done\n")
    result = spawn(argv, tmp_path)
    assert result.exit_code == 0 and result.leftovers >= 1  # the loop and its sleep
    assert alive_with(token) == []


def test_agent_waiting_on_stdin_sees_eof(agent, tmp_path: Path) -> None:
    argv, _ = agent('read -r line || echo "eof"\n')
    result = spawn(argv, tmp_path, timeout_s=10.0)
    assert (result.exit_code, result.stdout_path.read_text()) == (0, "eof\n")


def test_prompt_is_fed_on_stdin(agent, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("x" * 300_000 + "\nEND\n")  # larger than any pipe buffer
    argv, _ = agent("wc -c\n")
    result = spawn(argv, tmp_path, stdin_path=prompt)
    assert result.stdout_path.read_text().strip() == str(300_000 + 5)


def test_one_gib_of_output_goes_to_a_file(agent, tmp_path: Path) -> None:
    argv, _ = agent("head -c 1073741824 /dev/zero\n")
    result = spawn(argv, tmp_path, timeout_s=120.0)
    assert result.exit_code == 0
    assert result.stdout_path.stat().st_size == 1 << 30
    result.stdout_path.unlink()


def test_missing_program_is_a_result(tmp_path: Path) -> None:
    result = spawn(["gsd-no-such-runner-anywhere"], tmp_path)
    assert (result.exit_code, result.pid) == (127, None)
    assert result.error is not None and "gsd-no-such-runner-anywhere" in result.error
    assert "cannot start" in result.stderr_path.read_text()


def test_an_unwritable_registry_ends_the_program_it_could_not_record(agent, tmp_path: Path) -> None:
    argv, token = agent("trap '' TERM\nwhile true; do sleep 0.2; done\n")
    registry = tmp_path / "running"
    registry.write_text("a file where the folder should be\n")
    with pytest.raises(OSError):
        spawn(argv, tmp_path, grace_s=0.5, registry=registry)
    assert alive_with(token) == []


def test_killed_by_a_signal_reports_128_plus_n(agent, tmp_path: Path) -> None:
    argv, _ = agent("kill -USR1 $$\n")
    assert spawn(argv, tmp_path).exit_code == 128 + signal.SIGUSR1


def test_a_dead_runs_agent_and_grandchild_end_with_it(agent, tmp_path: Path) -> None:
    """gsd is SIGKILLed mid-spawn: its agent's warden ends the agent and the grandchild
    (issue 20: nothing outlives gsd); the next run's reap finds nothing left."""
    argv, token = agent(
        "trap '' TERM\n( trap '' TERM; while true; do sleep 0.2; done ) &\n"
        "while true; do sleep 0.2; done\n"
    )
    registry = tmp_path / "running"
    runner = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
        from gsd.io.process import proc, procgroups
        proc.supervise({argv!r}, cwd=Path({str(tmp_path)!r}),
                       stdout_path=Path({str(tmp_path / "o")!r}),
                       stderr_path=Path({str(tmp_path / "e")!r}),
                       timeout_s=60, grace_s=1, registry=Path({str(registry)!r}))
        """
    )
    gsd = subprocess.Popen([sys.executable, "-c", runner])
    deadline = time.monotonic() + 120
    # the runner's own command line holds the token too: wait for the shell and its
    # background subshell, not counting the runner
    while len(set(alive_with(token)) - {gsd.pid}) < 2 or not list(registry.glob("*.json")):
        assert time.monotonic() < deadline, "the supervised agent never started"
        time.sleep(0.05)
    assert len(list(registry.glob("*.json"))) == 1
    gsd.kill()
    gsd.wait()
    deadline = time.monotonic() + 60  # the warden's parent-death signal ends them all
    while alive_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(token) == []
    assert procgroups.reap(registry, grace_s=0.5) == []
    assert list(registry.glob("*.json")) == []


# A debugger's hold: a process traced with PTRACE_O_TRACEEXIT stops on its way out,
# SIGKILL included, until its tracer lets go; to gsd it is a process that outlives SIGKILL
# (as one stuck in the kernel, D state, would).
TRACER = """
import ctypes, os, sys, time
from pathlib import Path
member, traced = Path(sys.argv[1]), Path(sys.argv[2])
while not member.exists() or not member.read_text().strip():
    time.sleep(0.02)
ptrace = ctypes.CDLL("libc.so.6", use_errno=True).ptrace
ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
done = ptrace(0x4206, int(member.read_text()), None, 0x40)  # PTRACE_SEIZE, TRACEEXIT
traced.write_text("yes" if done == 0 else f"no: errno {ctypes.get_errno()}")
time.sleep(60)  # the hold lasts while the tracer lives
"""


def test_a_process_that_outlives_sigkill_is_given_up_on_not_waited_for(
    agent, tmp_path: Path
) -> None:
    argv, token = agent(
        """
        trap '' TERM
        ( trap '' TERM; while true; do sleep 0.2; done ) &
        echo $! > member.pid
        while [ ! -s traced ]; do sleep 0.02; done
        while true; do sleep 0.2; done
        """
    )
    tracer = subprocess.Popen(
        [sys.executable, "-c", TRACER, str(tmp_path / "member.pid"), str(tmp_path / "traced")]
    )
    registry = tmp_path / "running"
    try:
        started = time.monotonic()
        result = spawn(argv, tmp_path, timeout_s=1.0, grace_s=0.5, registry=registry)
        elapsed = time.monotonic() - started
        if (tmp_path / "traced").read_text() != "yes":
            pytest.skip(f"ptrace not permitted here: {(tmp_path / 'traced').read_text()}")
        assert (result.exit_code, result.timed_out, result.killed) == (137, True, True)
        assert result.survivors == 1 and elapsed < 5  # 1 s + 0.5 s + at most 1 s more
        assert len(list(registry.glob("*.json"))) == 1  # the next run tries again
    finally:
        tracer.kill()
        tracer.wait()
    deadline = time.monotonic() + 60  # let go of, the process ends its SIGKILL exit
    while alive_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(token) == []
    assert procgroups.reap(registry) == [] and list(registry.glob("*.json")) == []
