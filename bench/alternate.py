"""Commands alternated run by run, each one's CPU and wall time: for before/after figures.

    .venv/bin/python bench/alternate.py ROUNDS 'COMMAND' 'COMMAND' ...

Each round runs every command once, the order rotated by one each round; one warm-up
round is not counted. CPU is user + system of the command and every process it waited
for (os.wait4's rusage); wall is perf_counter around the start and the reaping. Prints
each command's median and min-max, and its median against the first command's (give
the yardstick first, e.g. `python -c pass`). A command is one string split as a shell
splits words, run without a shell; its output is thrown away.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time


def alternate(commands: list[list[str]], rounds: int) -> list[tuple[list[float], list[float]]]:
    """(CPU seconds, wall seconds) of each command, run by run."""
    found: list[tuple[list[float], list[float]]] = [([], []) for _ in commands]
    for number in range(rounds + 1):  # round 0 warms caches and is not counted
        shift = number % len(commands)
        for index in [*range(shift, len(commands)), *range(shift)]:
            start = time.perf_counter()
            child = subprocess.Popen(
                commands[index], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            _, _, usage = os.wait4(child.pid, 0)
            child.returncode = 0  # reaped above: Popen must not wait for it again
            took = time.perf_counter() - start
            if number:
                found[index][0].append(usage.ru_utime + usage.ru_stime)
                found[index][1].append(took)
    return found


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write(__doc__ or "")
        return 2
    commands = [shlex.split(command) for command in argv[1:]]
    found = alternate(commands, int(argv[0]))
    base = statistics.median(found[0][0])
    print(f"load average {' '.join(f'{n:.2f}' for n in os.getloadavg())}; {argv[0]} rounds")
    for command, (cpu, wall) in zip(argv[1:], found, strict=True):
        median = statistics.median(cpu)
        print(
            f"cpu {median * 1000:7.1f} ms ({min(cpu) * 1000:.1f}-{max(cpu) * 1000:.1f}) "
            f"{median / base:5.2f}x   wall {statistics.median(wall) * 1000:7.1f} ms   {command}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
