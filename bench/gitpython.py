"""GitPython against gsd's own git runner (gsd.io.git.command): the figures behind its removal.

GitPython is no longer installed with gsd: `.venv/bin/pip install GitPython` first. Then
`.venv/bin/python bench/gitpython.py REPO` prints, for 200 reads of HEAD, the refs, a
config value and a commit's trailers, the median time each way and the git processes each
read starts; then which GitPython calls gsd would need start a git process anyway.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git  # GitPython

from gsd.io.git import command as gitexec
from gsd.io.git.repo import Git

RUNS = 200
started: list[str] = []
_popen_init = subprocess.Popen.__init__


def _counting_init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
    started.append(args[1] if isinstance(args, list) and len(args) > 1 else str(args))
    _popen_init(self, args, *rest, **kwargs)


def timed(label: str, read: Callable[[], object]) -> None:
    read()  # warm: GitPython's long-lived `git cat-file --batch` starts here
    started.clear()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    print(
        f"{label:56s} {statistics.median(times) * 1e6:7.0f} us  "
        f"{len(started) / RUNS:4.2f} git processes/read"
    )


def main(root: Path) -> None:
    subprocess.Popen.__init__ = _counting_init  # type: ignore[method-assign]
    repo, ours = git.Repo(root), Git(root)
    head = repo.head.commit.hexsha
    refs = ["for-each-ref", "--format=%(refname)%00%(objectname)"]
    trailers = ["log", "-1", "--format=%(trailers:key=Gsd-Task,valueonly)", head]
    timed("HEAD: Repo.head.commit.hexsha", lambda: repo.head.commit.hexsha)
    timed("HEAD: gsd's Git.head_from_files (reads .git/HEAD)", ours.head_from_files)
    timed(
        "HEAD: gitexec.call(rev-parse HEAD)", lambda: gitexec.call(["rev-parse", "HEAD"], cwd=root)
    )
    timed(
        "refs: (r.path, r.commit.hexsha) for Repo.refs",
        lambda: [(r.path, r.commit.hexsha) for r in repo.refs],
    )
    timed("refs: gitexec.call(for-each-ref)", lambda: gitexec.call(refs, cwd=root))
    timed(
        "config: Repo.config_reader().get_value",
        lambda: repo.config_reader().get_value("user", "name"),
    )
    timed(
        "config: gitexec.call(config user.name)",
        lambda: gitexec.call(["config", "user.name"], cwd=root),
    )
    timed("trailers: Repo.commit(sha).trailers_dict", lambda: repo.commit(head).trailers_dict)
    timed(
        "trailers: gitexec.call(log -1 --format=%(trailers))",
        lambda: gitexec.call(trailers, cwd=root),
    )
    timed(
        "trailers: a new Repo each time (a new Git object)",
        lambda: git.Repo(root).commit(head).trailers_dict,
    )
    print()
    for label, call in [
        ("repo.is_dirty(untracked_files=True)", lambda: repo.is_dirty(untracked_files=True)),
        ("repo.untracked_files", lambda: repo.untracked_files),
        ("repo.index.diff(None)", lambda: repo.index.diff(None)),
        (
            "repo.iter_commits('HEAD', grep=...)",
            lambda: list(repo.iter_commits("HEAD", grep="Gsd-Task")),
        ),
        ("repo.is_ancestor(a, b)", lambda: repo.is_ancestor(head, head)),
        ("repo.git.stash('create')", lambda: repo.git.stash("create")),
        (
            "repo.references (names and shas)",
            lambda: [(r.path, r.object.hexsha) for r in repo.references],
        ),
        ("repo.head.commit.hexsha", lambda: repo.head.commit.hexsha),
        ("repo.config_reader().get_value", lambda: repo.config_reader().get_value("user", "name")),
    ]:
        started.clear()
        call()
        print(f"{label:40s} {len(started)} git process(es) {' '.join(started)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
