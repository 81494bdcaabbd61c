"""Putting back what an agent changed beside the tree: refs, the stash list, protected files."""

from __future__ import annotations

from gsd.core.safety.enforce import PROTECTED_PATTERNS
from gsd.io.git import guard as gitguard
from gsd.io.git import refledger
from gsd.io.git.checkpointrecord import CHECKPOINT_PREFIX, Checkpoint, gsds_tag
from gsd.io.git.command import split
from gsd.io.git.repo import Git

PROTECTED_SCAN = (
    "ls-files",
    "-z",
    "--others",
    "--ignored",
    "--exclude-standard",
    "--",
    *(f":(glob)**/{pattern}" for pattern in PROTECTED_PATTERNS),
)
STASH_LOG = "logs/refs/stash"


def stash_entries_lost(git: Git, cp: Checkpoint) -> bytes | None:
    """The stash list to put back when entries of the checkpoint's were taken out:
    its entries, then any pushed since; None when none was lost."""
    assert cp.kept is not None
    before = cp.kept.stash_log.data or b""
    now = gitguard.save(git.common_dir, STASH_LOG).data or b""
    if now.startswith(before):
        return None
    known = {line.split(b" ")[1] for line in before.splitlines() if b" " in line}
    added = [
        line
        for line in now.splitlines(keepends=True)
        if b" " in line and line.split(b" ")[1] not in known
    ]
    return before + b"".join(added)


class RefRestorer:
    """Every ref of a checkpoint put back, and the stash list, in one transaction."""

    def __init__(self, git: Git) -> None:
        self.git = git

    def restore(self, cp: Checkpoint, *, recovery: bool) -> None:
        """Every ref back as it was at `cp`, in one transaction. gsd's own writes since
        stay; a branch checked out in another worktree (and, in a recovery, every ref:
        the user may have worked since the crash) is only re-created, never moved."""
        if cp.confined:
            return  # the agent wrote no ref: what moved meanwhile is the user's, and stays
        with refledger.ref_lock(self.git.common_dir):  # the refs as they are, one writer at once
            self._restore_locked(cp, recovery=recovery)
            if not recovery and cp.kept is not None and cp.refs.get("refs/stash"):
                self._stash_list(cp)

    def _stash_list(self, cp: Checkpoint) -> None:
        """The stashes the agent took out put back, those pushed meanwhile kept."""
        merged = stash_entries_lost(self.git, cp)
        if merged is None:
            return
        path = self.git.common_dir / STASH_LOG
        newest = merged.splitlines()[-1].split(b" ")[1].decode() if merged.strip() else ""
        if newest:  # first: moving the ref appends a line of its own to the reflog
            self.git.git("update-ref", "--no-deref", "refs/stash", newest)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(merged)

    def _restore_locked(self, cp: Checkpoint, *, recovery: bool) -> None:
        now = self.git.ref_table()
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        ours = self.git.ledger.since(cp.mark)
        lines = []
        for ref in sorted((set(cp.refs) | set(now)) - {"HEAD", own}):
            old, new = cp.refs.get(ref), now.get(ref)
            if old == new or (new or "") in ours.get(ref, ()) or gsds_tag(self.git, ref, new):
                continue
            if recovery and ref.startswith(CHECKPOINT_PREFIX):
                continue  # the killed gsd removed other tasks' tags as they ended
            if new is None and old:  # deleted: back where gsd last put it (another plan's
                # branch has moved on since the checkpoint), else where it was then
                lines.append(f"create {ref} {self.git.ledger.last(ref, cp.mark) or old}")
            elif recovery or ref in cp.foreign or new is None or ref == "refs/stash":
                continue  # (the stash list is put back on its own, entries pushed kept)
            elif old is None:
                if not ref.startswith(CHECKPOINT_PREFIX):
                    continue  # a new branch or tag may be the user's: left, never deleted
                lines.append(f"delete {ref} {new}")
            elif not ref.startswith("refs/tags/") and self._moved_on(new, old):
                continue  # a branch moved forward: nothing lost, maybe the user's doing
            else:
                lines.append(f"update {ref} {old} {new}")
            self.git.ledger.wrote(ref, old or "")
        if lines:
            self.git.git(
                "update-ref",
                "-m",
                f"gsd rollback to {cp.tag}",
                "--stdin",
                input="\n".join(lines) + "\n",
            )

    def _moved_on(self, new: str, old: str) -> bool:
        """Whether `new` descends from `old` (commits; anything else: no)."""
        done = self.git.git("merge-base", "--is-ancestor", old, new, ok=(0, 1, 128))
        return done.status == 0


class ProtectedFiles:
    """A checkout's ignored `.env*`, `*.pem`, `*.key` files, kept byte for byte and put
    back: the user's secrets, which git itself never restores."""

    def __init__(self, git: Git) -> None:
        self.git = git

    def scan(self) -> list[str]:
        """The ignored protected files there are now."""
        return split(self.git.out(*PROTECTED_SCAN))

    def save(self, paths: list[str]) -> dict[str, gitguard.Saved]:
        """Ignored protected files, kept byte for byte (bigger ones: their stamp)."""
        return {rel: gitguard.save(self.git.root, rel) for rel in paths if not rel.endswith("/")}

    def keep(self) -> dict[str, gitguard.Saved]:
        """This checkout's ignored `.env*`, `*.pem`, `*.key` files, kept byte for byte:
        the user's secrets beside a plan's worktree, where no sandbox holds the agent."""
        return self.save(self.scan())

    def put_back(self, before: dict[str, gitguard.Saved]) -> list[str]:
        """Those files as `keep` found them; returns the ones that had changed."""
        scan = self.scan()
        now = self.save(sorted(set(scan) | set(before)))
        changed = gitguard.differences(before, now)
        if changed:
            self.restore(before)
        return changed

    def restore(self, before: dict[str, gitguard.Saved]) -> None:
        """Those files as `before` holds them: changed ones rewritten, new ones removed."""
        scan = self.scan()
        now = self.save(sorted(set(scan) | set(before)))
        changed = gitguard.differences(before, now)
        gitguard.restore(self.git.root, before, changed)  # never through a symlinked folder
        for rel in changed:  # folders emptied by removing a file the agent made
            parent = (self.git.root / rel).parent
            while before.get(rel, gitguard.MISSING).kind == "missing" and parent != self.git.root:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
