"""Every read-only command's output over the corpus and the demo, one file per command, so
that two versions of gsd can be compared byte for byte (`diff -r BEFORE AFTER`).

    .venv/bin/python bench/outputs.py OUT [--corpus ../shared/corpus] [--demo]

Each corpus project's `.planning/` is copied to a fixed path and committed with fixed names
and dates, so commit ids agree between runs. `--demo` also runs the demo for real (as
`make demo` does) and keeps its output with moments, durations, numbers, temporary paths and
column padding masked (the corpus outputs are kept exactly). A command's file holds its exit
status, standard output and standard error.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = Path("/tmp/gsd-outputs-work")
PHASES_PER_PROJECT = 8
FIXED = {
    "GIT_AUTHOR_NAME": "gsd outputs",
    "GIT_AUTHOR_EMAIL": "outputs@example.invalid",
    "GIT_COMMITTER_NAME": "gsd outputs",
    "GIT_COMMITTER_EMAIL": "outputs@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "NO_COLOR": "1",
    "COLUMNS": "100",
}
WHOLE_PROJECT = [
    ["validate"],
    *(["validate", "--format", f] for f in ("json", "github", "sarif", "junit")),
    ["validate", "--strict"],
    *(["status", "--format", f] for f in ("text", "markdown", "json")),
    *(["sync", "--check", "--format", f] for f in ("text", "json")),
    ["errors"],
    ["report", "--format", "json"],
    ["agents", "list"],
]
PER_PHASE = [
    *(["show", "{phase}", "--format", f] for f in ("text", "json")),
    *(["waves", "{phase}", "--format", f] for f in ("text", "json", "mermaid", "github-matrix")),
    *(["verify", "{phase}", "--format", f] for f in ("text", "json", "junit")),
    *(["execute-phase", "{phase}", "--dry-run", "--format", f] for f in ("text", "json")),
]
ONCE = [["rules"], *(["rules", "--format", f] for f in ("markdown", "json"))]


def git(root: Path, *args: str) -> None:
    env = {**os.environ, **FIXED}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def gsd_command() -> str:
    return os.environ.get("GSD") or str(Path(sys.executable).parent / "gsd")


def capture(gsd: str, args: list[str], cwd: Path, out: Path) -> None:
    env = {**os.environ, **FIXED}
    try:
        done = subprocess.run(
            [gsd, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )
        text = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    except subprocess.TimeoutExpired:
        text = "timed out\n"
    name = "_".join(re.sub(r"[^\w.-]", "", a) for a in args) or "none"
    (out / f"{name}.txt").write_text(text.replace(str(cwd), "<project>"), encoding="utf-8")


def phases_of(root: Path) -> list[str]:
    folders = sorted(p.name for p in (root / ".planning" / "phases").glob("*") if p.is_dir())
    return [m.group(1) for m in map(re.compile(r"^(\d+(?:\.\d+)*[A-Z]?)").match, folders) if m]


def snapshot_project(gsd: str, source: Path, name: str, out: Path) -> None:
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    shutil.copytree(source / ".planning", root / ".planning", symlinks=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "planned")
    target = out / name
    target.mkdir(parents=True)
    for args in WHOLE_PROJECT:
        capture(gsd, args, root, target)
    for phase in phases_of(root)[:PHASES_PER_PROJECT]:
        for args in PER_PHASE:
            capture(gsd, [a.format(phase=phase) for a in args], root, target)


MASKS = [
    (re.compile(r"/tmp/gsd-demo\.\w+"), "<repo>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?Z?\b"), "<moment>"),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), "<sha>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|m|min|seconds?)\b"), "<duration>"),
    (re.compile(r"\b\d+:\d\d(:\d\d)?\b"), "<clock>"),
    (re.compile(r"pid \d+|\(\d+\)"), "<pid>"),
    # Seconds in the report's columns vary from run to run, and so the columns' widths.
    (re.compile(r"\d+(\.\d+)?"), "N"),
    (re.compile(r"[ \t]+"), " "),
]


def snapshot_demo(gsd: str, out: Path) -> None:
    env = {**os.environ, "GSD": gsd, "TMPDIR": "/tmp", "NO_COLOR": "1"}
    script = REPO / "examples" / "demo" / "run-demo.sh"
    done = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True)
    text = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    (out / "demo.txt").write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--demo", action="store_true", help="also run the demo for real")
    options = parser.parse_args()
    gsd = gsd_command()
    shutil.rmtree(options.out, ignore_errors=True)
    options.out.mkdir(parents=True)
    for args in ONCE:
        capture(gsd, args, REPO, options.out)
    snapshot_project(gsd, REPO / "examples" / "demo", "examples-demo", options.out)
    for source in sorted(p.parent for p in options.corpus.glob("*/.planning")):
        snapshot_project(gsd, source, source.name, options.out)
    if options.demo:
        snapshot_demo(gsd, options.out)
    files = sum(1 for _ in options.out.rglob("*.txt"))
    print(f"{files} outputs in {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
