"""Files gsd keeps for itself under .git/gsd: signed, read and written without following links."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.formats.files import write_atomic
from gsd.io import statedir

RECORD_LIMIT = 64 * 1024 * 1024  # a record lists every ref: a few KiB, MiBs with 10,000s of tags
_KEY_BYTES = 32
_CONTEXT = b"gsd checkpoint record v1\0"
_keys: dict[Path, bytes] = {}  # one read per key file and process


def key_path() -> Path:
    """Where the per-user signing key lives: in gsd's private folder, outside every
    repository an agent works in, and unreadable from inside the sandbox."""
    return layout.record_key_file(statedir.state_home(os.environ))


def private_folder() -> Path:
    """gsd's private folder (the key's): the sandbox leaves it unreadable to agents."""
    return layout.private_dir(statedir.state_home(os.environ))


def record_key() -> bytes:
    """The signing key, created (0600, in a 0700 folder) the first time it is needed, or
    moved there from where an older gsd kept it (agents could read it there)."""
    path = key_path()
    if path in _keys:
        return _keys[path]
    key = read_private(path, limit=1024)
    if key is None:
        key = _store(path, _legacy_key() or secrets.token_hex(_KEY_BYTES).encode())
        _legacy_path().unlink(missing_ok=True)
    if len(key) < _KEY_BYTES:
        raise GsdError(
            f"the checkpoint signing key {path} is damaged",
            hint="delete it; gsd makes a new one (open checkpoints are then ignored)",
        )
    _keys[path] = key
    return key


def _legacy_path() -> Path:
    return layout.legacy_record_key_file(statedir.state_home(os.environ))


def _legacy_key() -> bytes | None:
    """The key an older gsd kept beside the worktrees, if any (records it signed stay good)."""
    return read_private(_legacy_path(), limit=1024)


def _store(path: Path, key: bytes) -> bytes:
    """Write `key` to `path` unless another gsd made it first: the key in the file."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.chmod(0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        made = read_private(path, limit=1024)  # another gsd made it first
        if made is not None:
            return made
        raise GsdError(f"cannot read the checkpoint signing key {path}") from None
    except OSError as exc:
        raise GsdError(
            f"cannot create the checkpoint signing key {path}: {exc.strerror}",
            hint="make the folder writable, or set XDG_STATE_HOME to a writable folder",
        ) from exc
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def sign(data: dict[str, Any]) -> str:
    """A record as the text gsd writes: the data and its HMAC-SHA256 under the user's key."""
    body = _canonical(data)
    mac = hmac.new(record_key(), _CONTEXT + body, hashlib.sha256).hexdigest()
    return json.dumps({"record": data, "hmac": mac}, sort_keys=True) + "\n"


def mac(data: dict[str, Any], purpose: str) -> str:
    """The HMAC-SHA256 of `data` under the user's key for one `purpose` ("approval"):
    each purpose its own context, so one kind of signed line never passes for another."""
    context = f"gsd {purpose} v1\0".encode()
    return hmac.new(record_key(), context + _canonical(data), hashlib.sha256).hexdigest()


def verify(text: bytes) -> dict[str, Any] | None:
    """The data of a record gsd signed, or None (not JSON, unsigned, or a bad signature)."""
    try:
        outer = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(outer, dict) or not isinstance(outer.get("record"), dict):
        return None
    mac = outer.get("hmac")
    if not isinstance(mac, str):
        return None
    data: dict[str, Any] = outer["record"]
    good = hmac.new(record_key(), _CONTEXT + _canonical(data), hashlib.sha256).hexdigest()
    return data if hmac.compare_digest(good, mac) else None


def _canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


ANY_SIZE = 1 << 40  # `limit` for files gsd keeps whole whatever their size (journals)


def read_private(path: Path, *, limit: int = RECORD_LIMIT) -> bytes | None:
    """A regular file's bytes, or None: missing, a symlink, not a regular file, or larger
    than `limit`. Opened with O_NOFOLLOW, so a link an agent planted is never followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None  # missing, or a symlink (ELOOP)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def safe_dir(path: Path, *, under: Path | None = None) -> bool:
    """Whether `path` is a real directory, not a symlink to one; with `under`, also every
    folder between `under` (trusted) and `path`."""
    folders = [path]
    if under is not None:
        try:
            rel = path.relative_to(under)
        except ValueError:
            return False
        folders = [under.joinpath(*rel.parts[:n]) for n in range(1, len(rel.parts) + 1)]
    for folder in folders:
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        except OSError:
            return False
    return True


def private_dir(path: Path, *, under: Path) -> Path:
    """`path` made (0700 where new) as a real directory below `under`; a symlink in the way is
    refused (one line), never followed."""
    try:
        rel = path.relative_to(under)
    except ValueError:
        raise GsdError(f"{path} is not inside {under}") from None
    folder = under
    for part in rel.parts:
        folder = folder / part
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise GsdError(f"cannot create {folder}: {exc.strerror}") from exc
        if not safe_dir(folder):
            raise GsdError(
                f"{folder} is a symlink or not a folder; gsd does not follow it",
                hint="remove it (an agent may have planted it) and run gsd again",
            )
    return path


def write_private(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write `path` with `mode` atomically (`files.write_atomic`: a temporary file, synced,
    then a rename that replaces a planted symlink itself, never its target); the folder
    must be a real one (`private_dir`)."""
    if not safe_dir(path.parent):
        raise GsdError(f"{path.parent} is a symlink or not a folder; gsd does not follow it")
    write_atomic(path, data, mode=mode)
