"""Salvage: a rolled-back attempt's changes kept out of the way before the rollback.

Each is a commit on no branch, its parent the attempt's checkpoint (the tag's target),
under `refs/gsd/salvage/<plan>/<task>/<attempt>`. It is built in a temporary index
(read-tree, add, write-tree, commit-tree): the worktree's own index and files, and the
user's checkout, are never touched. Protected files (keys, `.env*`, gsd's settings) are
never put in one.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.core.safety.enforce import is_protected
from gsd.core.words import one_line, some
from gsd.formats import execlog
from gsd.io.git import command as gitexec
from gsd.io.git.branches import Branches
from gsd.io.git.checkpointrecord import CHECKPOINT_NAME, Checkpoint
from gsd.io.git.command import first_reason, literal, split
from gsd.io.git.repo import Git
from gsd.io.records import ANY_SIZE, read_private

PREFIX = "refs/gsd/salvage/"
TRAILER = "Gsd-Error-Type: "
_IDENTITY = ("-c", "user.name=gsd", "-c", "user.email=gsd@localhost")  # when the user has none
_TRIES = 20  # names tried for one attempt when a salvage of that name exists
MAX_FILE_BYTES = 50 << 20  # a bigger file (an agent's dump, a model) is not kept
KILLED = "killed-run"  # the error type of an attempt whose run was killed (kill -9, a crash)


class Salvage(NamedTuple):
    """One salvage ref, as `gsd salvage list` shows it."""

    ref: str
    sha: str
    parent: str
    plan: str
    task: str
    attempt: str
    error_type: str
    created: datetime
    files: tuple[str, ...]


def keep(
    git: Git, base: str, where: tuple[str, int, int], error_type: str, changed: list[str]
) -> str | None:
    """Keep the attempt's changes to `changed` (relative to commit `base`, its checkpoint)
    as a salvage commit; returns its ref, or None when nothing (protected files aside)
    differs. `where`: (plan id, task, attempt)."""
    paths = [p for p in changed if not is_protected(p) and _small(git.root / p)]
    if not paths:
        return None
    tree = attempt_tree(git, base, paths)
    if tree == git.out("rev-parse", f"{base}^{{tree}}").strip():
        return None
    plan, task, attempt = where
    message = f"gsd salvage {plan} task {task} attempt {attempt}\n\n{TRAILER}{error_type}\n"
    sha = _commit_tree(git, tree, base, message)
    return _create_ref(git, f"{PREFIX}{plan}/{task}/{attempt}", sha)


def keep_killed(git: Git, cp: Checkpoint, changed: list[str]) -> str | None:
    """The attempt a killed run left open at checkpoint `cp` (in a plan's worktree),
    kept like any rolled-back attempt before the next run rolls it back: a crash never
    loses an agent's work. Its attempt number is the killed run's last `spawn` of the
    task in the journal, else the next one free among the task's salvages. None: not a
    task's checkpoint, or nothing of it to keep."""
    match = CHECKPOINT_NAME.match(cp.tag)
    if match is None:
        return None
    plan, task = match["plan"], int(match["task"])
    attempt = _journalled_attempt(git, plan, task) or _next_attempt(git, plan, task)
    return keep(git, cp.snapshot or cp.head, (plan, task, attempt), KILLED, changed)


def _journalled_attempt(git: Git, plan: str, task: int) -> int | None:
    """The attempt of the task's last `spawn` in the journal a killed run left (its lines
    wait there for the next docs commit); None when there is none."""
    data = read_private(layout.journal_plan_log(git.common_dir, plan), limit=ANY_SIZE)
    events, _ = execlog.parse((data or b"").decode("utf-8", "replace"))
    attempts = [
        e.get("attempt")
        for e in events
        if e.get("event") == "spawn" and e.get("task") == task and e.get("plan") == plan
    ]
    last = attempts[-1] if attempts else None
    return last if isinstance(last, int) and not isinstance(last, bool) and last > 0 else None


def _next_attempt(git: Git, plan: str, task: int) -> int:
    """One past the highest attempt the task's salvages name (1: none)."""
    out = git.out("for-each-ref", "--format=%(refname)", f"{PREFIX}{plan}/{task}/")
    numbers = [ref.rsplit("/", 1)[-1].split("-")[0] for ref in out.split()]
    return max((int(n) for n in numbers if n.isdigit()), default=0) + 1


def attempt_tree(git: Git, base: str, paths: list[str]) -> str:
    """The tree of commit `base` with `paths` as they are in the checkout now (what an
    attempt changed, as its commit would hold them: ignored files and a nested
    repository the agent made left out), built in a temporary index: the checkout's own
    index and files are not touched. The salvage's tree, and what a reviewer is shown."""
    gone = [p for p in paths if not os.path.lexists(git.root / p)]
    if gone:  # a path neither on disk nor in `base` would fail the whole `add`
        listed = git.out("ls-tree", "-r", "-z", "--name-only", base, "--", *map(literal, gone))
        kept = set(split(listed))
        missing = set(gone)
        paths = [p for p in paths if p in kept or p not in missing]
    if not paths:
        return git.out("rev-parse", f"{base}^{{tree}}").strip()
    with _temporary_index(git) as index:
        _call(git, index, "read-tree", base)
        # 1: some path was ignored or unreadable; the others are added all the same
        specs = (literal(p) for p in paths)
        _call(git, index, "add", "-A", "--ignore-errors", "--", *specs, ok=(0, 1))
        _drop_new_gitlinks(git, index, base)
        return _call(git, index, "write-tree").strip()


def _drop_new_gitlinks(git: Git, index: Path, base: str) -> None:
    """A nested repository the agent made is never kept as a bare gitlink (its commits
    live in its own .git, which the rollback removes): out of the salvage."""
    links = _gitlinks(_call(git, index, "ls-files", "-s", "-z"))
    if not links:
        return
    listed = _call(git, None, "ls-tree", "-r", "-z", base, "--", *(literal(p) for p in links))
    doomed = sorted(links - _gitlinks(listed))
    if doomed:
        _call(git, index, "update-index", "--force-remove", "--", *doomed)


def _gitlinks(out: str) -> set[str]:
    """The paths of `ls-files -s -z` or `ls-tree -z` entries that are gitlinks."""
    return {entry.partition("\t")[2] for entry in split(out) if entry.startswith("160000 ")}


def _small(path: Path) -> bool:
    """Whether the file at `path` (not followed: a link is kept as a link) may be kept;
    a file gone since is a deletion, kept."""
    try:
        return os.lstat(path).st_size <= MAX_FILE_BYTES
    except OSError:
        return True


@contextlib.contextmanager
def _temporary_index(git: Git) -> Iterator[Path]:
    path = git.git_dir / f"gsd-salvage-{secrets.token_hex(6)}.index"
    try:
        yield path
    finally:
        for stale in (path, path.with_name(path.name + ".lock")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)


def _call(git: Git, index: Path | None, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    done = gitexec.call(args, cwd=git.root, index_file=index)
    if done.status not in ok:
        raise GsdError(
            f"git {args[0]} failed while salvaging: {first_reason(done.stderr)}",
            hint="the attempt is rolled back without a salvage",
            details=done.stderr,
        )
    return done.stdout


def _commit_tree(git: Git, tree: str, parent: str, message: str) -> str:
    args = ("commit-tree", tree, "-p", parent)
    done = gitexec.call(args, cwd=git.root, input=message.encode())
    if done.status != 0:  # no identity configured: gsd's own
        done = gitexec.call((*_IDENTITY, *args), cwd=git.root, input=message.encode())
    if done.status != 0:
        raise GsdError(f"git commit-tree failed while salvaging: {first_reason(done.stderr)}")
    return done.stdout.strip()


def _create_ref(git: Git, ref: str, sha: str) -> str:
    """`ref`, or `ref-2`, `ref-3` ... when a salvage of that name exists (an earlier run's
    attempt of the same number): an older salvage is never overwritten."""
    for n in range(1, _TRIES + 1):
        name = ref if n == 1 else f"{ref}-{n}"
        git.ledger.wrote(name, sha)  # first: no watch blames an agent for it
        done = git.git("update-ref", "-m", "gsd salvage", name, sha, "", ok=(0, 128))
        if done.status == 0:
            return name
        git.ledger.forget(name)
    raise GsdError(f"cannot create salvage ref {ref}: {_TRIES} names taken")


def listed(git: Git, *, files: bool = True) -> list[Salvage]:
    """The salvage refs of the repository, oldest first (without `files`, the files of
    each are not asked for: one `git diff-tree` a salvage)."""
    fields = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents)%00%(parent)"
    out = git.out("for-each-ref", f"--format={fields}%01", PREFIX)
    found = []
    for entry in out.split("\x01"):
        parts = entry.strip("\n").split("\0")
        if len(parts) != 5 or not parts[0].startswith(PREFIX):
            continue
        ref, sha, stamp, text, parent = parts
        plan, _, rest = ref[len(PREFIX) :].partition("/")
        task, _, attempt = rest.partition("/")
        if not attempt or "/" in attempt or not parent:
            continue
        error = next((ln[len(TRAILER) :] for ln in text.splitlines() if ln.startswith(TRAILER)), "")
        changed = (
            git.out("diff-tree", "-r", "-z", "--name-only", "--no-renames", parent, sha)
            if files
            else ""
        )
        created = datetime.fromtimestamp(int(stamp or 0), timezone.utc)
        found.append(
            Salvage(
                ref=ref,
                sha=sha,
                parent=parent.split()[0],
                plan=plan,
                task=task,
                attempt=attempt,
                error_type=error,
                created=created,
                files=tuple(split(changed)),
            )
        )
    return sorted(found, key=lambda s: (s.created, s.ref))


def find(git: Git, spec: tuple[str, ...]) -> Salvage:
    """The salvage a user named: its ref (full, or below refs/gsd/salvage/), or PLAN TASK
    ATTEMPT; an unknown one is a one-line error naming the closest."""
    if len(spec) not in (1, 3):
        raise GsdError(
            f"a salvage is named by its ref or by PLAN TASK ATTEMPT, not {' '.join(spec)!r}",
            hint="see gsd salvage list",
        )
    everything = listed(git, files=False)
    wanted = spec[0] if len(spec) == 1 else "/".join(spec)
    for salvage in everything:
        if wanted in (salvage.ref, salvage.ref[len(PREFIX) :]):
            changed = git.out(
                "diff-tree", "-r", "-z", "--name-only", "--no-renames", salvage.parent, salvage.sha
            )
            return salvage._replace(files=tuple(split(changed)))
    names = [s.ref[len(PREFIX) :] for s in everything]
    close = difflib.get_close_matches(wanted.removeprefix(PREFIX), names, n=1)
    raise GsdError(
        f"no salvage {wanted!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
        hint="see gsd salvage list" if names else "no attempt has been salvaged",
    )


def diff(git: Git, salvage: Salvage) -> str:
    """The salvage's changes, as `git diff` (binary files included) shows them."""
    return git.out(*_diff(salvage))


def _diff(salvage: Salvage) -> tuple[str, ...]:
    return ("diff", "--binary", "--no-color", "--no-renames", salvage.parent, salvage.sha)


def apply(git: Git, salvage: Salvage) -> list[str]:
    """Apply the salvage's changes to the checkout `git` is; refused (nothing changed) when
    a file it touches has uncommitted changes or is untracked. Returns the files."""
    dirty = sorted(git.dirty_among(salvage.files))
    if dirty:
        raise GsdError(
            f"{some(dirty)} has uncommitted changes in {git.root}; salvage {salvage.ref}"
            " would touch it",
            hint="commit or stash it first, then run gsd salvage apply again",
        )
    patch = gitexec.call(_diff(salvage), cwd=git.root)  # bytes, as `git apply` takes them
    done = gitexec.call(("apply", "--whitespace=nowarn", "-"), cwd=git.root, input=patch.out)
    if done.status != 0:
        raise GsdError(
            f"salvage {salvage.ref} does not apply to {git.root}: {first_reason(done.stderr)}",
            hint=f"see its diff with gsd salvage show {salvage.ref}",
            details=done.stderr,
        )
    return list(salvage.files)


def prune(git: Git, older_than: timedelta | None = None) -> list[str]:
    """Delete salvage refs (all, or those older than `older_than`); returns them."""
    cutoff = None if older_than is None else datetime.now(timezone.utc) - older_than
    doomed = [s.ref for s in listed(git, files=False) if cutoff is None or s.created < cutoff]
    Branches(git).delete_refs(doomed, "gsd salvage prune")
    return doomed


def describe(error: Exception) -> str:
    """A salvage that failed, in one line for the error log."""
    return f"not salvaged: {one_line(str(error))}"
