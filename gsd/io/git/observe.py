"""What an agent's spawn did, seen from git and from .git itself: paths, refs, flags, secrets."""

from __future__ import annotations

from typing import NamedTuple

from gsd.io.git import guard as gitguard
from gsd.io.git import indexflags
from gsd.io.git.checkpointrecord import CHECKPOINT_PREFIX, Checkpoint, gsds_tag
from gsd.io.git.command import split
from gsd.io.git.repo import REFS, Git
from gsd.io.git.restore import PROTECTED_SCAN, ProtectedFiles, stash_entries_lost

_NOT_DESCENDANT = "moved to a commit that does not descend from the checkpoint"


class Observation(NamedTuple):
    """What a spawn did, seen from git and from .git itself."""

    changed: list[str]  # paths changed, staged, created or committed (gsd commits these)
    changed_refs: list[str]  # refs rewritten, one line each
    internals: list[str]  # .git hooks/config/info files changed (already put back)
    flags: list[str]  # index flags the agent set (already cleared), "flag on path"
    protected: list[str]  # ignored .env*/*.pem/*.key files created, changed or deleted

    def then(self, later: Observation) -> Observation:
        """This observation followed by a later one of the same checkpoint (after the
        task's checks ran): the later changed paths, and every finding of both (what
        the first one put back or cleared, the second no longer sees)."""

        def both(a: list[str], b: list[str]) -> list[str]:
            first = set(a)
            return [*a, *(x for x in b if x not in first)]

        return Observation(
            changed=later.changed,
            changed_refs=both(self.changed_refs, later.changed_refs),
            internals=both(self.internals, later.internals),
            flags=both(self.flags, later.flags),
            protected=both(self.protected, later.protected),
        )


class Observer:
    """Watches one repository for what an agent did since a checkpoint."""

    def __init__(self, git: Git) -> None:
        self.git = git

    def observe(self, cp: Checkpoint) -> Observation:
        """Everything a spawn did. First, before any git command: .git internals put back
        and index flags the agent set cleared (so a hidden edit shows). Then one `status`,
        `for-each-ref` and protected-file listing, run side by side; the full
        `changed_files` only when HEAD or its branch moved (or with a snapshot)."""
        internals = gitguard.guard(self.git.common_dir).changes(cp.tag)
        flags = self.clear_flags(cp)
        with self.git.side(PROTECTED_SCAN, REFS) as side:
            status = self.git.status()
            scan, listing = side.results()
        now = self.git.ref_table(listing)
        protected = self._protected_changes(cp, split(scan))
        now["HEAD"] = f"ref: refs/heads/{status.branch}" if status.branch else (status.head or "")
        if cp.snapshot is None and status.head == cp.head and status.branch == cp.branch:
            changed = sorted(status.changed | (status.untracked - set(cp.untracked)))
        else:
            changed = self.changed_files(cp)
        return Observation(
            changed=changed,
            changed_refs=self._ref_notes(cp, now, status.head),
            internals=internals,
            flags=flags,
            protected=protected,
        )

    def changed_files(self, cp: Checkpoint) -> list[str]:
        """Every path the spawn changed: tracked, staged, new untracked and committed.

        Ignored files are not seen; untracked files that predate the checkpoint count
        only when the agent staged or committed them.
        """
        base = cp.snapshot or cp.head
        index_base = f"{cp.snapshot}^2" if cp.snapshot else cp.head
        names = ("--name-only", "-z", "--no-renames")
        paths = set(split(self.git.out("diff", *names, base)))
        paths.update(split(self.git.out("diff", "--cached", *names, index_base)))
        paths.update(set(self.git.untracked()) - set(cp.untracked))
        revs = self._agent_revs(cp)
        if revs:
            # -m --first-parent: a merge the agent made counts with what it brought in.
            log = self.git.out("log", *names, "--format=", "-m", "--first-parent", *revs)
            paths.update(split(log))
        return sorted(path for path in paths if path)

    def changed_refs(self, before: dict[str, str], cp: Checkpoint) -> list[str]:
        """What the agent did to refs since `before` (usually `cp.refs`), one line each.

        Reported: any ref deleted or moved (tags, branches, the stash list, notes,
        remote-tracking branches), a checkpoint tag gsd did not make, HEAD switched or
        detached, HEAD or its branch on a commit that does not descend from the
        checkpoint; a branch checked out in another worktree only when deleted or moved
        off its line. Not reported: new commits on the branch (`changed_files` sees them),
        other refs the agent created (rollback deletes them) and gsd's own ref writes.
        """
        return self._ref_notes(cp._replace(refs=before), self.git.snapshot_refs(), self.git.head())

    def _ref_notes(self, cp: Checkpoint, now: dict[str, str], head: str | None) -> list[str]:
        notes = self._moved_refs(cp, now)
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        symbolic = now.get("HEAD", "")
        current = (
            symbolic.removeprefix("ref: refs/heads/") if symbolic.startswith("ref: ") else None
        )
        if current != cp.branch:
            notes.append(f"HEAD switched to branch {current}" if current else "HEAD detached")
        if head is None:
            notes.append(f"HEAD on branch {current}, which has no commits")
        elif head != cp.head and not self.git.descends(head, cp.head):
            notes.append(f"HEAD {_NOT_DESCENDANT}")
        if own and current != cp.branch:
            if own not in now:
                notes.append(f"branch {cp.branch} deleted")
            elif now[own] != cp.head and not self.git.descends(now[own], cp.head):
                notes.append(f"branch {cp.branch} {_NOT_DESCENDANT}")
        return notes

    def _moved_refs(self, cp: Checkpoint, now: dict[str, str]) -> list[str]:
        """Refs deleted, moved or (checkpoint tags) created other than by gsd itself."""
        if cp.confined:
            return []  # the agent could not write a ref: the user may, meanwhile
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        ours = self.git.ledger.since(cp.mark)
        notes = []
        for ref in sorted((set(cp.refs) | set(now)) - {"HEAD", own}):
            old, new = cp.refs.get(ref), now.get(ref)
            if old == new or (new or "") in ours.get(ref, ()) or ref == "refs/stash":
                continue
            if gsds_tag(self.git, ref, new):
                continue
            kind, name = _kind(ref)
            if ref in cp.foreign:
                if new is None:
                    notes.append(f"{kind} {name} (checked out in another worktree) deleted")
                elif old is not None and not self.git.descends(new, old):
                    notes.append(
                        f"{kind} {name} (checked out in another worktree) moved to "
                        "a commit that does not descend from its tip"
                    )
            elif old is None:
                if ref.startswith(CHECKPOINT_PREFIX):
                    notes.append(f"checkpoint tag {name} created, not by gsd")
            else:
                notes.append(f"{kind} {name} {'deleted' if new is None else 'moved'}")
        if self._stash_changed(cp, now):
            notes.append("stash list changed")
        return notes

    def _stash_changed(self, cp: Checkpoint, now: dict[str, str]) -> bool:
        """Whether stashes the user had were lost: refs/stash gone, or an entry taken out
        of its reflog (the stash list: `git stash clear` or `drop`). A stash pushed
        meanwhile only adds an entry: the user's, or harmless, and left as it is."""
        if cp.refs.get("refs/stash") is None or cp.kept is None:
            return False
        if "refs/stash" not in now:
            return True
        return stash_entries_lost(self.git, cp) is not None

    def _agent_revs(self, cp: Checkpoint) -> list[str]:
        """rev-list arguments for commits new since `cp` on HEAD or its branch."""
        tips = ["HEAD"] if self.git.head() else []
        if cp.branch:
            own = f"refs/heads/{cp.branch}"
            if self.git.git("rev-parse", "--verify", "-q", own, ok=(0, 1)).status == 0:
                tips.append(own)
        if not tips:
            return []
        known = {cp.head, *(sha for ref, sha in cp.refs.items() if ref != "HEAD" and sha)}
        return [*tips, "--not", *sorted(known)]

    def clear_flags(self, cp: Checkpoint) -> list[str]:
        """Clear the flags the agent set (the user's stay); returns "flag on path" lines."""
        if cp.kept is not None and indexflags.index_stamp(self.git.index) == cp.kept.index_stamp:
            return []  # the index file was not rewritten: no flag changed
        added: dict[str, str] = {}
        for path, kinds in self.git.index_flags().items():
            before = set(cp.flags.get(path, "").split(","))
            new = [kind for kind in kinds.split(",") if kind not in before]
            if new:
                added[path] = ",".join(new)
        if added:
            self.git.unflag(added)
        return [
            f"{kind} on {path}"
            for path, kinds in sorted(added.items())
            for kind in kinds.split(",")
        ]

    def _protected_changes(self, cp: Checkpoint, scan: list[str]) -> list[str]:
        if cp.kept is None:
            return []
        before = cp.kept.protected
        now = ProtectedFiles(self.git).save(sorted(set(scan) | set(before)))
        return gitguard.differences(before, now)


def _kind(ref: str) -> tuple[str, str]:
    for prefix, kind in (
        ("refs/heads/", "branch"),
        ("refs/tags/", "tag"),
        ("refs/remotes/", "remote-tracking branch"),
        ("refs/notes/", "notes"),
    ):
        if ref.startswith(prefix):
            return kind, ref.removeprefix(prefix)
    return "ref", ref
