"""Start-up costs, each against `<venv python> -c pass` in the same run (`--only starts`).

staged:   `gsd validate --staged PLAN` in a git repository with one plan staged: the
          pre-commit hook's path (target: at most 3x the floor).
clihook:  `gsd hooks run claude-post-edit` for an edit of a file that is not a plan: the
          agent-CLI hook on every edit (answered without the validator).
pretool:  `gsd hooks run claude-pre-tool` for a shell command that writes no plan: the
          before-a-tool hook on every shell call (the command read, never run).
mcp:      `gsd mcp` from its start to the answer to tools/list, read by a client that
          sends initialize, initialized and tools/list as an agent CLI does (target:
          0.25 s).
execute:  the imports of `gsd execute-phase 1 --dry-run` on examples/demo (python -X
          importtime, top-level cumulative, median; target 120 ms), beside `gsd --version`,
          and the share of them that is pydantic's (its modules, what they import first,
          the settings and agent models built) and Click's.
floors:   what the hook cannot go below as it is built, each in the same alternation:
          the interpreter importing `re` (any check needs it), then the standard library
          its path imports (re, typing, pathlib, subprocess), then the path's modules
          imported without running.

Commands alternate run by run (order rotated each round); wall seconds by perf_counter,
CPU (user + system of the processes waited for) from RUSAGE_CHILDREN.
"""

from __future__ import annotations

import json
import math
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import generate

REPO = Path(__file__).resolve().parent.parent
VENV_PY = REPO / ".venv" / "bin" / "python"
GSD = REPO / ".venv" / "bin" / "gsd"

STAGED_TARGET = 3.0
MCP_TARGET_S = 0.25
EXECUTE_IMPORTS_TARGET_MS = 120.0
# What `gsd validate --staged` imports before it reads a plan (its floor, run without work).
HOOK_MODULES = ("gsd.cli.entry", "gsd.cli.lint", "gsd.io.plans.validate", "gsd.io.git.command")
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)")

Say = Callable[..., None]
Table = Callable[[list[str], list[list[str]]], None]


class StartFailed(Exception):
    pass


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _repository(root: Path) -> Path:
    _git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "bench"), ("user.email", "bench@example.invalid")):
        _git(root, "config", key, value)
    _git(root, "config", "commit.gpgsign", "false")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")
    return root


def _timed(argv: list[str], cwd: Path, stdin: bytes | None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise StartFailed(f"{argv[1:]}: exit {done.returncode}: {done.stderr.decode()[-500:]}")
    return took


def _mcp_client(cwd: Path, *options: str) -> float:
    """Seconds from starting `gsd mcp OPTIONS` to reading its answer to tools/list."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    start = time.perf_counter()
    with subprocess.Popen(
        [str(GSD), "mcp", *options], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(hello).encode() + b"\n")
        server.stdin.flush()
        first = server.stdout.readline()
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
        server.stdin.flush()
        second = server.stdout.readline()
        took = time.perf_counter() - start
        server.stdin.close()
    if b'"result"' not in first or b'"tools"' not in second:
        raise StartFailed(f"gsd mcp: unexpected answers {first[:200]!r} {second[:200]!r}")
    return took


def _alternate(
    subjects: dict[str, Callable[[], float]], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each subject's wall seconds (as it times itself) and CPU seconds (user + system of
    the processes it waited for), run by run, order rotated each round."""
    names = list(subjects)
    times: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds + 1):  # the first round warms caches and is not counted
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            took = subjects[name]()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if r:
                times[name].append(took)
                cpus[name].append(
                    after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                )
    return times, cpus


# Whose imports a module's subtree is (-X importtime names the first importer): the
# models gsd builds at import count as pydantic's.
_SHARES = {"pydantic": ("pydantic", "annotated_types", "typing_inspection"), "click": ("click",)}
_MODELS = ("gsd.formats.settings", "gsd.formats.agents")


def _shares(stderr: str) -> tuple[float, int, dict[str, float]]:
    """The top-level cumulative import time (ms), the modules, and each share's ms: the
    self times of a share's modules and of all they imported first."""
    # (name, self us, children); -X importtime prints children before their parent
    pending: dict[int, list[tuple[str, int, list[Any]]]] = {}
    total = count = 0
    for line in stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match is None:
            continue
        count += 1
        depth = (len(match.group(3)) - 1) // 2
        total += int(match.group(2)) if depth == 0 else 0
        node = (match.group(4), int(match.group(1)), pending.pop(depth + 1, []))
        pending.setdefault(depth, []).append(node)
    shares = dict.fromkeys(_SHARES, 0.0)

    def size(node: tuple[str, int, list[Any]]) -> int:
        return node[1] + sum(size(kid) for kid in node[2])

    def walk(node: tuple[str, int, list[Any]]) -> None:
        owner = next((k for k, roots in _SHARES.items() if node[0].startswith(roots)), None)
        if owner is not None:
            shares[owner] += size(node) / 1000
            return
        if node[0] in _MODELS:
            shares["pydantic"] += node[1] / 1000
        for kid in node[2]:
            walk(kid)

    for root in pending.get(0, []):
        walk(root)
    return total / 1000, count, shares


def _import_ms(
    argv: list[str], cwd: Path, runs: int
) -> tuple[float, float, float, int, dict[str, float]]:
    """Median, min and max of the top-level cumulative import time, the modules, and the
    median of each share (ms)."""
    totals, counts, shares = [], [], []
    for _ in range(runs):
        done = subprocess.run(
            [str(VENV_PY), "-X", "importtime", *argv], cwd=cwd, capture_output=True
        )
        total, count, share = _shares(done.stderr.decode(errors="replace"))
        totals.append(total)
        counts.append(count)
        shares.append(share)
    median_shares = {k: statistics.median(s[k] for s in shares) for k in _SHARES}
    return (
        statistics.median(totals),
        min(totals),
        max(totals),
        int(statistics.median(counts)),
        median_shares,
    )


def bench_starts(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, float]:
    rounds = 5 if quick else 21
    say("== starts: the hook, the agent-CLI hook, gsd mcp, execute-phase's imports ==")
    hooks = _repository(generate.make_project(tmp / "starts-hook", 30, per_phase=5))
    plan = ".planning/phases/003-p3/003-05-PLAN.md"
    with (hooks / plan).open("a") as handle:
        handle.write("\n")
    _git(hooks, "add", plan)
    demo = tmp / "starts-demo"
    shutil.copytree(REPO / "examples" / "demo", demo)
    (demo / "run-demo.sh").unlink()
    _repository(demo)
    edit = {
        "session_id": "bench",
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "src/greeter.py"},
        "cwd": str(demo),
    }
    shell = {
        **edit,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test 2>&1 | tail -5", "description": "run the tests"},
    }
    floor = [str(VENV_PY), "-c", "pass"]
    stdlib = [str(VENV_PY), "-c", "import re, typing, pathlib, subprocess"]
    imports = [str(VENV_PY), "-c", f"import {', '.join(HOOK_MODULES)}"]
    subjects: dict[str, Callable[[], float]] = {
        "floor: venv python -c pass": lambda: _timed(floor, hooks, None),
        "floor: + re": lambda: _timed([str(VENV_PY), "-c", "import re"], hooks, None),
        "floor: + re, typing, pathlib, subprocess": lambda: _timed(stdlib, hooks, None),
        "floor: + validate --staged's imports": lambda: _timed(imports, hooks, None),
        "gsd validate --staged PLAN": lambda: _timed(
            [str(GSD), "validate", "--staged", plan], hooks, None
        ),
        "gsd hooks run (a non-plan edit)": lambda: _timed(
            [str(GSD), "hooks", "run", "claude-post-edit"], demo, json.dumps(edit).encode()
        ),
        "gsd hooks run (a shell command)": lambda: _timed(
            [str(GSD), "hooks", "run", "claude-pre-tool"], demo, json.dumps(shell).encode()
        ),
    }
    has_sdk = subprocess.run([str(VENV_PY), "-c", "import mcp"], capture_output=True)
    if has_sdk.returncode == 0:
        subjects["gsd mcp: start to tools/list"] = lambda: _mcp_client(demo)
        subjects["gsd mcp --allow-run: start to tools/list"] = lambda: _mcp_client(
            demo, "--allow-run"
        )
    times, cpus = _alternate(subjects, rounds)
    base = statistics.median(times["floor: venv python -c pass"])
    cpu_base = statistics.median(cpus["floor: venv python -c pass"])
    rows = []
    for name, values in times.items():
        med, cpu = statistics.median(values), statistics.median(cpus[name])
        spread = f"{min(values) * 1000:.1f}-{max(values) * 1000:.1f}"
        cpu_spread = f"{min(cpus[name]) * 1000:.1f}-{max(cpus[name]) * 1000:.1f}"
        rows.append(
            [name, f"{med * 1000:.1f}", spread, f"{med / base:.2f}x"]
            + [f"{cpu * 1000:.1f}", cpu_spread, f"{cpu / cpu_base:.2f}x"]
        )
    say(f"{rounds} alternating rounds after one warm-up round; wall, and CPU (user + system)")
    heads = ["median ms", "min-max ms", "vs floor"]
    table(["command", *heads, *(f"CPU {h}" for h in heads)], rows)
    out = {
        "starts_staged_cpu_ratio": statistics.median(cpus["gsd validate --staged PLAN"]) / cpu_base,
        "starts_staged_ratio": statistics.median(times["gsd validate --staged PLAN"]) / base,
        "starts_clihook_ratio": statistics.median(times["gsd hooks run (a non-plan edit)"]) / base,
        "starts_pretool_ratio": statistics.median(times["gsd hooks run (a shell command)"]) / base,
        "starts_staged_imports_ratio": statistics.median(
            times["floor: + validate --staged's imports"]
        )
        / base,
    }
    if "gsd mcp: start to tools/list" in times:
        out["starts_mcp_s"] = statistics.median(times["gsd mcp: start to tools/list"])
    runs = 3 if quick else 9
    execute = _import_ms([str(GSD), "execute-phase", "1", "--dry-run"], demo, runs)
    version = _import_ms([str(GSD), "--version"], demo, runs)
    say(f"imports (python -X importtime, top-level cumulative; median of {runs}):")
    table(
        ["command", "median ms", "min-max ms", "modules", "pydantic's", "Click's"],
        [
            [
                name,
                f"{med:.1f}",
                f"{low:.1f}-{high:.1f}",
                str(count),
                f"{shares['pydantic']:.1f}",
                f"{shares['click']:.1f}",
            ]
            for name, (med, low, high, count, shares) in (
                ("gsd execute-phase 1 --dry-run", execute),
                ("gsd --version", version),
            )
        ],
    )
    out["starts_execute_imports_ms"] = execute[0]
    out["starts_execute_pydantic_ms"] = execute[4]["pydantic"]
    say()
    return out


def summary_rows() -> list[tuple[str, str, str, float]]:
    """(key, label, unit, target) of each figure, for bench/run.py's summary."""
    return [
        (
            "starts_staged_ratio",
            "starts: validate --staged PLAN / python -c pass",
            "x",
            STAGED_TARGET,
        ),
        (
            "starts_staged_cpu_ratio",
            "starts: the same, CPU",
            "x",
            math.inf,
        ),
        (
            "starts_clihook_ratio",
            "starts: hooks run, non-plan edit / python -c pass",
            "x",
            math.inf,
        ),
        (
            "starts_pretool_ratio",
            "starts: hooks run, pre-tool on a shell command / python -c pass",
            "x",
            math.inf,
        ),
        (
            "starts_staged_imports_ratio",
            "starts: validate --staged's imports alone / python -c pass",
            "x",
            math.inf,
        ),
        ("starts_mcp_s", "starts: gsd mcp, start to tools/list", " s", MCP_TARGET_S),
        (
            "starts_execute_imports_ms",
            "starts: execute-phase --dry-run imports",
            " ms",
            EXECUTE_IMPORTS_TARGET_MS,
        ),
        (
            "starts_execute_pydantic_ms",
            "starts: of those, pydantic's (and the models built)",
            " ms",
            math.inf,
        ),
    ]


if __name__ == "__main__":
    sys.exit("run it from bench/run.py --only starts")
