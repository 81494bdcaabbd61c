"""Where plan files are read from: the working tree, the git index, or a commit's tree."""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol

from gsd.core.errors import InputError, UsageError

if TYPE_CHECKING:
    from gsd.io.git.command import GitResult

PLAN_SUFFIX = "-PLAN.md"


class Unreadable(Exception):
    """A path that exists but cannot be read as a text file (GSD050)."""


class Source(Protocol):
    """Repo-relative POSIX paths in, bytes out."""

    root: Path

    def plan_paths(self, under: str) -> list[str]: ...

    def plans_in(self, folder: str) -> list[str]: ...

    def read(self, path: str) -> bytes: ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...


class WorkingTree:
    """Files as they are on disk."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def plan_paths(self, under: str) -> list[str]:
        base = self.root / under
        if not base.is_dir() or under.endswith(PLAN_SUFFIX):
            return [under]  # a directory named like a plan is reported, not walked
        found: list[str] = []
        # followlinks=False: a symlinked directory could lead out of the repository
        for dirpath, dirnames, filenames in os.walk(base):
            rel = Path(dirpath).relative_to(self.root).as_posix()
            prefix = "" if rel == "." else f"{rel}/"
            found.extend(
                prefix + name
                for name in sorted([*filenames, *dirnames])
                if name.endswith(PLAN_SUFFIX)
            )
            dirnames[:] = sorted(d for d in dirnames if _walk_into(d))
        return found

    def plans_in(self, folder: str) -> list[str]:
        """Plan files directly in `folder` ("" for the root), by name."""
        try:
            names = os.listdir(self.root / folder)
        except OSError:
            return []
        prefix = f"{folder}/" if folder else ""
        return [prefix + name for name in sorted(names) if name.endswith(PLAN_SUFFIX)]

    def read(self, path: str) -> bytes:
        full = os.path.join(self.root, path)
        try:
            # lstat, not open: opening a FIFO or a device would block or never end
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                real_root = os.path.realpath(self.root)
                if os.path.commonpath([os.path.realpath(full), real_root]) != real_root:
                    raise Unreadable("a symlink that leads outside the repository")
                info = os.stat(full)
            if not stat.S_ISREG(info.st_mode):
                raise Unreadable("not a regular file")
            with open(full, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from None

    def exists(self, path: str) -> bool:
        return (self.root / path).exists()

    def is_dir(self, path: str) -> bool:
        return (self.root / path).is_dir()


class GitBlobs:
    """Blobs named by git (index or tree entries), read in one `git cat-file --batch` call."""

    root: Path
    where = "git"  # where a missing path was looked for, for errors
    missing_hint = ""

    def __init__(self, root: Path, entries: dict[str, tuple[str, str]]) -> None:
        self.root = root
        self._entries = entries  # path -> (mode, blob sha)
        self._blobs: dict[str, bytes] = {}
        # Indexed once, not scanned per question: every folder holding an entry (at
        # any depth; "" is the root), and the plan files directly in each folder.
        self._dirs: set[str] = set()
        self._plans: dict[str, list[str]] = {}
        for path in entries:
            folder = path.rpartition("/")[0]
            if path.endswith(PLAN_SUFFIX):
                self._plans.setdefault(folder, []).append(path)
            while folder not in self._dirs:
                self._dirs.add(folder)
                if not folder:
                    break
                folder = folder.rpartition("/")[0]
        for paths in self._plans.values():
            paths.sort()

    def plan_paths(self, under: str) -> list[str]:
        under = under.rstrip("/")
        if under in self._entries:
            return [under] if under.endswith(PLAN_SUFFIX) else []
        if under in ("", "."):
            return sorted(p for paths in self._plans.values() for p in paths)
        prefix = under + "/"
        return sorted(
            p
            for folder, paths in self._plans.items()
            if folder == under or folder.startswith(prefix)
            for p in paths
        )

    def plans_in(self, folder: str) -> list[str]:
        return list(self._plans.get(folder, ()))

    def preload(self, paths: Iterable[str]) -> None:
        """Read many blobs in one `git cat-file --batch` call."""
        wanted = [p for p in paths if p in self._entries and p not in self._blobs]
        if not wanted:
            return
        from gsd.io.git import command as gitexec

        shas = [self._entries[p][1] for p in wanted]
        done = gitexec.call(
            ["cat-file", "--batch"],
            cwd=self.root,
            read_only=True,
            input="".join(s + "\n" for s in shas).encode(),
        )
        if done.status != 0:
            raise gitexec.failure(done, self.root, error=InputError)
        out = done.out
        pos = 0
        for path in wanted:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split(b" ")[2])
            self._blobs[path] = out[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1

    def read(self, path: str) -> bytes:
        entry = self._entries.get(path)
        if entry is None:
            raise Unreadable(f"not in {self.where}{self.missing_hint}")
        if not entry[0].startswith("100"):  # 120000 symlink, 160000 submodule
            raise Unreadable(f"not a regular file in {self.where}")
        if path not in self._blobs:
            self.preload([path])
        return self._blobs[path]

    def exists(self, path: str) -> bool:
        return path.rstrip("/") in self._entries or self.is_dir(path)

    def is_dir(self, path: str) -> bool:
        path = path.rstrip("/")
        return ("" if path == "." else path) in self._dirs


class GitIndex(GitBlobs):
    """Staged blobs, listed with one `git ls-files --stage`.

    Only what `paths` names is listed (each path, recursively, and the plan files
    beside it, which the phase graph reads): a hook on a repository of 200,000
    files reads a few index entries, not all of them. None lists the whole index.
    """

    where = "the git index"
    missing_hint = " (stage it with git add)"

    def __init__(self, root: Path, paths: Sequence[str] | None = None) -> None:
        from gsd.io.git import (
            command as gitexec,  # subprocess is not needed when reading the working tree
        )

        args = ["ls-files", "--stage", "-z"]
        specs = None if paths is None else _pathspecs(paths)
        if specs is not None:
            args += ["--", *specs]
        # in a pre-commit hook: the index this commit is built from (`git commit -a`)
        index = hook_index(root)
        done = gitexec.call(args, cwd=root, read_only=True, index_file=index)
        if done.status != 0:
            raise gitexec.failure(
                done, root, what="--staged needs a git repository", error=UsageError
            )
        # `MODE SHA STAGE\tPATH`
        entries = {path: (meta[0], meta[1]) for meta, path in _listing(done.out)}
        super().__init__(root, entries)


class GitTree(GitBlobs):
    """The files of one commit below `under`, listed with one `git ls-tree -r`.

    Paths are relative to `root`, as git prints them when run there. Nothing is
    checked out: the working tree and the index are never touched.
    """

    def __init__(self, root: Path, commit: str, under: str) -> None:
        from gsd.io.git import command as gitexec

        self.where = f"commit {commit[:12]}"
        done = gitexec.call(["ls-tree", "-r", "-z", commit, "--", under], cwd=root, read_only=True)
        if done.status != 0:
            raise gitexec.failure(
                done, root, what=f"git ls-tree {commit[:12]} failed", error=InputError
            )
        # `MODE TYPE SHA\tPATH`; submodules (type commit) are not files
        entries = {
            path: (meta[0], meta[2]) for meta, path in _listing(done.out) if meta[1] == "blob"
        }
        super().__init__(root, entries)


def _pathspecs(paths: Sequence[str]) -> list[str] | None:
    """Literal pathspecs for `paths`, plus a glob for the plan files beside each;
    None when one of them is the root (then the whole index is wanted)."""
    specs: list[str] = []
    for path in paths:
        path = path.rstrip("/")
        if path in ("", "."):
            return None
        folder = posixpath.dirname(path)
        beside = f"{_glob_escape(folder)}/*{PLAN_SUFFIX}" if folder else f"*{PLAN_SUFFIX}"
        specs += [f":(literal){path}", f":(glob){beside}"]
    return specs


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[\\" else c for c in text)


def _listing(out: bytes) -> list[tuple[list[str], str]]:
    """`git ls-files --stage -z` / `git ls-tree -z` records: (space-split fields, path)."""
    records = []
    for record in out.decode("utf-8", "replace").split("\0"):
        if record:
            meta, _, path = record.partition("\t")
            records.append((meta.split(" "), path))
    return records


def resolve_commit(root: Path, rev: str) -> str:
    """The full sha of the commit `rev` names, or one clear UsageError."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"{rev!r} is not a revision", hint="name a branch, tag or commit")
    done = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if done.status == 0:
        return done.stdout.strip()
    _require_repository(root)
    raise UsageError(
        f"unknown revision {rev!r}: no commit by that name in {root}",
        hint="name a branch, tag or commit, e.g. main or HEAD~1",
    )


def head_commit(root: Path) -> str | None:
    """The commit HEAD names, or None on a branch with no commit yet."""
    done = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if done.status == 0:
        return done.stdout.strip()
    _require_repository(root)
    return None


def merge_base(root: Path, one: str, other: str) -> str:
    """The best common ancestor of two commits (what `git diff A...B` compares from)."""
    done = _git(root, "merge-base", one, other)
    if done.status != 0:
        raise UsageError(
            f"no merge base between {one[:12]} and {other[:12]}",
            hint="the two revisions share no history; name BASE and HEAD instead",
        )
    return done.stdout.strip()


def _require_repository(root: Path) -> None:
    if _git(root, "rev-parse", "--git-dir").status != 0:
        raise UsageError(f"not a git repository: {root}", hint="run gsd diff inside a git clone")


def _git(root: Path, *args: str) -> GitResult:
    """A git command that only reads, in `root`, through the one git runner."""
    from gsd.io.git import command as gitexec

    return gitexec.call(args, cwd=root, read_only=True)


def hook_index(root: Path) -> Path | None:
    """The index a git hook was handed (GIT_INDEX_FILE: `git commit -a` and `git commit
    PATH` build a temporary one) when it is the index of the repository at `root`; None
    otherwise, and outside hooks: a hook of another repository names that one's index."""
    given = os.environ.get("GIT_INDEX_FILE")
    if not given:
        return None
    index = Path(os.path.abspath(given))  # relative to the hook's directory, the top level
    if index.parent == Path(os.path.abspath(root / ".git")) and index.is_file():
        return index  # the common case, without asking git: `root` is the top level
    from gsd.io.git import command as gitexec

    asked = ["rev-parse", "--absolute-git-dir", "--git-common-dir"]
    done = gitexec.call(asked, cwd=root, read_only=True)
    dirs = {Path(os.path.abspath(root / line)) for line in done.stdout.splitlines()}
    if done.status == 0 and index.parent in dirs and index.is_file():
        return index
    return None


def _walk_into(name: str) -> bool:
    return name not in (".git", "node_modules") and not name.endswith(PLAN_SUFFIX)


def relative_to_root(root: Path, given: str) -> str:
    """A user's path argument as a repo-relative POSIX path; refuse paths outside."""
    full = Path(os.path.normpath(Path.cwd() / given))
    try:
        rel = full.relative_to(os.path.normpath(root))
    except ValueError:
        raise UsageError(f"{given}: outside the repository at {root}") from None
    text = PurePosixPath(*rel.parts).as_posix() if rel.parts else "."
    return text
