"""A finished plan's commits found in HEAD's history and taken back with `git revert`
(`gsd undo`): never a reset, never a force; history only grows.

gsd's commits of a plan are its task commits (a `Gsd-Task: PLAN-N` trailer) and its
`docs(PLAN): ...` commits (a phase's too: `docs(PHASE): ...`) that touch gsd's own files
alone. They reach the checked-out branch through merges: gsd's `--no-ff` merge of
`gsd/PLAN`, a CI job's `git merge --no-ff origin/gsd/PLAN` into a wave's branch, that
branch's pull request merged into main. Each is reverted at the smallest merge that
brought nothing else (`-m 1`: against the branch it was merged into), or one commit at
a time where a merge brought more (a wave's other plans). A revert stopped by a conflict
is aborted (`git revert --abort`); gsd's own logs, STATE.md and ROADMAP.md are settled
without one (`_settle`), since they are derived or only ever appended to.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError
from gsd.core.ids import split_task_key
from gsd.core.visible import visible
from gsd.io.git.command import first_reason, literal, split
from gsd.io.git.commits import UNDONE_TRAILER
from gsd.io.git.repo import Git

# one record a commit: sha, subject, its Gsd-Task trailers; then the files it changed
_LOG = "--format=%x1e%H%x00%s%x00%(trailers:key=Gsd-Task,valueonly,unfold)"
REVERTS_PREFIX = "This reverts commit "


class Commit(NamedTuple):
    """A commit as `gsd undo` looks at it."""

    sha: str
    subject: str
    tasks: tuple[str, ...]  # its `Gsd-Task` trailer values
    files: tuple[str, ...]  # what it changed (a merge: against its first parent)


class Revert(NamedTuple):
    """One commit to revert: a merge is reverted against its first parent (`-m 1`)."""

    commit: Commit
    merge: bool


class RevertConflict(GsdError):
    """`git revert` of `sha` conflicted in `paths` (files not gsd's own): aborted."""

    def __init__(self, sha: str, subject: str, paths: list[str]) -> None:
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        named = visible(", ".join(paths[:3]))
        super().__init__(
            f"reverting {sha[:12]} ({visible(subject)}) conflicts in {named}{more}; "
            "nothing was changed",
            hint="resolve what changed those files since, commit, and run gsd undo again",
        )
        self.paths = paths


def parse_log(out: str) -> list[Commit]:
    """The commits of a `git log -z --name-only` with `_LOG`'s format."""
    found = []
    for record in out.split("\x1e"):
        if not record.strip("\0\n"):
            continue
        sha, _, rest = record.partition("\0")
        subject, _, rest = rest.partition("\0")
        trailers, _, files = rest.partition("\0")
        tasks = tuple(t.strip() for t in trailers.splitlines() if t.strip())
        paths = tuple(p for p in files.lstrip("\n").split("\0") if p.strip("\n"))
        found.append(Commit(sha=sha.strip(), subject=subject, tasks=tasks, files=paths))
    return found


def own_commits(
    git: Git, plan_ids: list[str], scopes: list[str], gsds: Callable[[str], bool], gone: set[str]
) -> dict[str, Commit]:
    """The commits (no merges) HEAD reaches that are gsd's for these plans: a task commit
    of one of them, or a `docs(SCOPE): ...` commit (SCOPE a plan id or one of `scopes`)
    that changed only files `gsds` calls gsd's. Those taken back already (a `This
    reverts commit` line names them, or the merge that brought them: `gone`) and the docs
    commits of an earlier undo are left out."""
    docs = [*plan_ids, *scopes]
    patterns = [f"^Gsd-Task: {_ere(p)}-[0-9]+$" for p in plan_ids]
    patterns += [rf"^docs\({_ere(s)}\): " for s in docs]
    greps = [f"--grep={p}" for p in patterns]
    out = git.out(
        "log", "--no-merges", "-z", "--name-only", "--no-renames", "-E", *greps, _LOG, "HEAD"
    )
    found: dict[str, Commit] = {}
    for commit in parse_log(out):
        keys = [split_task_key(t) for t in commit.tasks]
        if any(k is not None and k[0] in plan_ids for k in keys):
            found[commit.sha] = commit
        elif (
            any(commit.subject.startswith(f"docs({s}): ") for s in docs)
            and not any(commit.subject.startswith(f"docs({s}): undo ") for s in docs)
            and all(gsds(p) for p in commit.files)
        ):
            found[commit.sha] = commit
    return {sha: c for sha, c in found.items() if sha not in gone}


def reverted(git: Git) -> set[str]:
    """Commits HEAD's history took back already: those a `This reverts commit` line
    names, the commits the merges among them brought, and the reverts themselves (a
    commit and its revert, together, changed nothing)."""
    out = git.out(
        "log", "--fixed-strings", f"--grep={REVERTS_PREFIX}", "--format=%H%x00%B%x1e", "HEAD"
    )
    gone: set[str] = set()
    for record in out.split("\x1e"):
        sha, _, body = record.strip().partition("\0")
        named = [
            line[len(REVERTS_PREFIX) :].split()[0].rstrip(".,")
            for line in body.splitlines()
            if line.startswith(REVERTS_PREFIX) and len(line) > len(REVERTS_PREFIX)
        ]
        if named:
            gone.update([sha, *named])
    for sha in sorted(gone):
        parents = git.out("rev-list", "--parents", "-n", "1", sha, ok=(0, 128)).split()[1:]
        for side in parents[1:]:
            gone.update(git.out("rev-list", side, f"^{parents[0]}").split())
    return gone


def reverts_of(git: Git, own: dict[str, Commit]) -> tuple[list[Revert], set[str]]:
    """What to revert, newest first, so that `own` is taken back: each merge of HEAD's
    history that brought only commits of `own` whole, else inside it; and every commit
    those reverts cover (the merges' own commits included)."""
    found: list[Revert] = []
    covered: set[str] = set()
    _walk(git, "HEAD", None, own, found, covered)
    return found, covered


def _walk(
    git: Git,
    tip: str,
    stop: str | None,
    own: dict[str, Commit],
    found: list[Revert],
    covered: set[str],
) -> None:
    """`reverts_of` along the first-parent line from `tip` (down to `stop`'s history)."""
    revs = [tip, f"^{stop}"] if stop else [tip]
    wanted = set(own)
    for line in git.out("rev-list", "--first-parent", "--parents", *revs).splitlines():
        if wanted <= covered:
            return
        sha, *parents = line.split()
        if len(parents) <= 1:
            if sha in own:
                found.append(Revert(commit=own[sha], merge=False))
                covered.add(sha)
            continue
        sides = [f"^{parents[0]}", *parents[1:]]
        brought = set(git.out("rev-list", "--no-merges", *sides).split())
        if not brought & wanted:
            continue
        if brought <= wanted:
            found.append(Revert(commit=merge_commit(git, sha), merge=True))
            covered.update(brought | {sha})
            continue
        for side in parents[1:]:
            _walk(git, side, parents[0], own, found, covered)


def merge_commit(git: Git, sha: str) -> Commit:
    """A merge, its files those it changed against its first parent (`-m` lists it once
    a parent, the first first)."""
    args = ("-n", "1", "-z", "--name-only", "--no-renames", "-m", "--first-parent")
    return parse_log(git.out("log", *args, _LOG, sha))[0]


def changed_later(git: Git, since: str, paths: list[str], skip: set[str]) -> list[Commit]:
    """Commits (no merges) HEAD reaches that `since` does not, outside `skip`, that
    changed one of `paths`, newest first."""
    if not paths:
        return []
    specs = [literal(p) for p in paths]
    out = git.out(
        "log",
        "--no-merges",
        "-z",
        "--name-only",
        "--no-renames",
        _LOG,
        "HEAD",
        f"^{since}",
        "--",
        *specs,
    )
    return [c for c in parse_log(out) if c.sha not in skip]


def _ere(text: str) -> str:
    """`text` matched literally in a POSIX extended regular expression (ids: digits,
    letters, `-` and `.`)."""
    return "".join(f"[{c}]" if not c.isalnum() and c != "-" else c for c in text)


# -- applying ------------------------------------------------------------------------------


@contextlib.contextmanager
def scratch(git: Git) -> Iterator[Git]:
    """A checkout of HEAD on no branch, outside the repository, removed afterwards:
    the reverts are made there, and the user's checkout moves only once they all are."""
    folder = Path(tempfile.mkdtemp(prefix="gsd-undo-"))
    place = folder / "checkout"
    git.git("worktree", "add", "-q", "--detach", str(place), "HEAD")
    try:
        yield Git(place)
    finally:
        removed = git.git("worktree", "remove", "--force", str(place), ok=(0, 128))
        shutil.rmtree(folder, ignore_errors=True)
        if removed.status != 0:  # its folder is gone now: git forgets it
            git.git("worktree", "prune")


def revert(
    place: Git, item: Revert, derived: set[str], appended: Callable[[str], bool]
) -> str | None:
    """`git revert --no-edit` of one commit (`-m 1` for a merge) in `place`; the new
    commit, or None when nothing was left to take back (`git revert --skip`). A conflict
    only in gsd's own files is settled (`derived`: HEAD's copy, derived again after;
    `appended` logs: HEAD's copy without the lines the commit added), any other is
    aborted (`git revert --abort`), a RevertConflict naming the files."""
    sha = item.commit.sha
    argv = ["revert", "--no-edit", *(["-m", "1"] if item.merge else []), sha]
    done = place.git(*argv, ok=(0, 1))
    if done.status == 0:
        return place.head()
    conflicted = split(place.out("diff", "--name-only", "-z", "--diff-filter=U"))
    theirs = [p for p in conflicted if p not in derived and not appended(p)]
    if theirs:
        place.git("revert", "--abort", ok=(0, 128))
        raise RevertConflict(sha, item.commit.subject, theirs)
    for path in conflicted:
        _settle(place, sha, path, keep_ours=path in derived)
    if place.git("diff", "--cached", "--quiet", "HEAD", ok=(0, 1)).status == 0:
        place.git("revert", "--skip")  # taken back already (or only derived files)
        return None
    if not conflicted:  # git stopped for another reason
        place.git("revert", "--abort", ok=(0, 128))
        raise GsdError(
            f"git revert {sha[:12]} failed: {first_reason(done.stderr)}; nothing was changed",
            hint="the log has git's whole message",
            details=done.stderr,
        )
    place.git("revert", "--continue", "--no-edit")
    return place.head()


def restore(place: Git, commit: str, keep: Callable[[str], bool]) -> None:
    """The files `keep` picks, as `commit` holds them, staged in `place`: what the reverts
    since `commit` took back of them is put back."""
    paths = [p for p in split(place.out("diff", "--name-only", "-z", commit, "HEAD")) if keep(p)]
    if paths:
        place.git("checkout", commit, "--", *(literal(p) for p in paths))


def mark_undone(place: Git, subject: str, tasks: tuple[str, ...], paths: list[str]) -> str:
    """gsd's last commit of an undo: `paths` (STATE.md and ROADMAP.md derived again) and
    a `Gsd-Undone` trailer a task, which tells `committed_tasks` that their commits are
    taken back (their `Gsd-Task` trailers are still in the history): the next run does
    them again. Made even when nothing else changed."""
    trailers = "".join(f"{UNDONE_TRAILER}: {t}\n" for t in tasks)
    message = f"{subject}\n\n{trailers}" if trailers else f"{subject}\n"
    if paths:
        place.git("add", "-A", "--", *(literal(p) for p in paths))
    place.git("commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", message)
    head = place.head()
    assert head is not None
    return head


def _settle(place: Git, sha: str, path: str, *, keep_ours: bool) -> None:
    """One conflicted file of gsd's: HEAD's copy, or HEAD's copy without the lines
    `sha` added to it (a log only appended to); staged, written by git itself."""
    ours = place.git("show", f":2:{path}", ok=(0, 128))
    if ours.status != 0:  # gone on HEAD's side: it stays gone
        place.git("rm", "-q", "-f", "--", literal(path))
        return
    text = ours.stdout
    if not keep_ours:
        added = Counter(_lines(place, f"{sha}:{path}")) - Counter(_lines(place, f"{sha}^1:{path}"))
        kept = []
        for line in reversed(text.splitlines(keepends=True)):
            if added[line] > 0:
                added[line] -= 1
            else:
                kept.append(line)
        text = "".join(reversed(kept))
    blob = place.out("hash-object", "-w", "--stdin", input=text).strip()
    place.git("update-index", "--cacheinfo", f"100644,{blob},{path}")
    place.git("checkout", "--", literal(path))


def _lines(place: Git, spec: str) -> list[str]:
    done = place.git("show", spec, ok=(0, 128))
    return done.stdout.splitlines(keepends=True) if done.status == 0 else []
