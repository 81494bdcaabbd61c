"""Which snapshots `gsd diff` compares: revisions named as `git diff` names them.

Plans are read from git objects (`git ls-tree` + `git cat-file --batch`), the index
or the working tree; nothing is ever checked out, and the working tree and the index
are never written.
"""

from __future__ import annotations

from pathlib import Path

from gsd.commands.diff import PlanChanges, Side, Snapshot, body_sections, compare
from gsd.core import layout
from gsd.core.errors import UsageError
from gsd.core.ids import parse_phase_name
from gsd.formats.challengereport import file_name
from gsd.io.plans import sources
from gsd.io.plans.project import Project
from gsd.io.plans.sources import GitIndex, GitTree, Source, Unreadable, WorkingTree

WORKING_TREE = "working tree"
INDEX = "index"


def diff_revisions(root: Path, revisions: list[str], *, staged: bool = False) -> PlanChanges:
    """`gsd diff [BASE [HEAD]]` in the project at `root`, like `git diff`:

    no revision: HEAD vs the working tree; BASE: BASE vs the working tree; BASE HEAD
    (or BASE..HEAD): two commits; BASE...HEAD: their merge base vs HEAD. With
    `staged`, the index stands in for the working tree.
    """
    if len(revisions) > 2:
        raise UsageError("gsd diff takes at most two revisions", hint="gsd diff [BASE [HEAD]]")
    two = len(revisions) == 2 or (len(revisions) == 1 and ".." in revisions[0])
    if staged and two:  # before any git call: the revisions need not even exist
        raise UsageError("--staged compares one revision with the index, not two revisions")
    if len(revisions) == 1 and ".." in revisions[0]:
        left, dots, right = _split_range(revisions[0])
        head_rev = right or "HEAD"
        head_sha = sources.resolve_commit(root, head_rev)
        base_sha = sources.resolve_commit(root, left or "HEAD")
        base_label = left or "HEAD"
        if dots == "...":
            base_sha = sources.merge_base(root, base_sha, head_sha)
            base_label = f"merge base of {left or 'HEAD'} and {head_rev}"
        pair: list[tuple[str, str | None]] = [(base_label, base_sha), (head_rev, head_sha)]
    else:
        pair = [(rev, sources.resolve_commit(root, rev)) for rev in revisions]
    if not pair:
        pair = [("HEAD", sources.head_commit(root))]  # None on a branch with no commit yet
    base = _commit_snapshot(root, *pair[0])
    if len(pair) == 2:
        head = _commit_snapshot(root, *pair[1])
    elif staged:
        head = load_snapshot(root, GitIndex(root, [layout.PLANNING]), Side(INDEX, None, False))
    else:
        head = load_snapshot(root, WorkingTree(root), Side(WORKING_TREE, None, False))
    return compare(base, head)


def _split_range(text: str) -> tuple[str, str, str]:
    dots = "..." if "..." in text else ".."
    left, _, right = text.partition(dots)
    return left, dots, right


def base_snapshot(root: Path, revision: str) -> Snapshot:
    """The plans at `revision` and what `gsd validate` says of them (UsageError when git
    does not know the revision)."""
    return _commit_snapshot(root, revision, sources.resolve_commit(root, revision))


def _commit_snapshot(root: Path, label: str, commit: str | None) -> Snapshot:
    if commit is None:
        return Snapshot(Side(f"{label} (no commit yet)", None, False), {}, [])
    return load_snapshot(root, GitTree(root, commit, layout.PLANNING), Side(label, commit, False))


def load_snapshot(root: Path, source: Source, side: Side) -> Snapshot:
    """Every plan under `.planning/` in `source`, parsed, and what `gsd validate` says."""
    from gsd.io.plans.validate import validate

    if not source.is_dir(layout.PLANNING):
        return Snapshot(side._replace(has_planning=False), {}, [])
    project = Project(root, source=source)
    paths = source.plan_paths(layout.PLANNING)
    project.preload(paths)
    plans = {path: project.plan(path) for path in paths}
    diagnostics = validate(project, [layout.PLANNING]).diagnostics if paths else []
    sections = {path: _body_sections(source, path) for path, plan in plans.items() if plan.readable}
    challenges = _challenges(source, paths)
    return Snapshot(
        side=side._replace(has_planning=True),
        plans=plans,
        diagnostics=diagnostics,
        sections=sections,
        challenges=challenges,
    )


def _challenges(source: Source, paths: list[str]) -> dict[str, str]:
    """The text of each `NN-CHALLENGE.md` (`gsd challenge`) beside the plans, by path."""
    found = {}
    for folder in dict.fromkeys(path.rpartition("/")[0] for path in paths):
        parsed = parse_phase_name(folder.rpartition("/")[2])
        if parsed is None:
            continue
        path = f"{folder}/{file_name(parsed.number)}"
        try:
            found[path] = source.read(path).decode("utf-8", "replace")
        except Unreadable:  # none there
            continue
    return found


def _body_sections(source: Source, path: str) -> dict[str, str]:
    """A readable plan's sections (its bytes were just read: git blobs are cached)."""
    try:
        return body_sections(source.read(path).decode("utf-8", "replace"))
    except Unreadable:  # changed on disk since it was read
        return {}
