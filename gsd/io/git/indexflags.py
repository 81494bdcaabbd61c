"""The git index's assume-unchanged and skip-worktree flags, read from the index file itself."""

from __future__ import annotations

import os
import struct
from pathlib import Path

ASSUME_UNCHANGED = "assume-unchanged"
SKIP_WORKTREE = "skip-worktree"


def index_stamp(index: Path) -> tuple[int, int, int, int] | None:
    """The index file's inode, size, mtime and ctime: equal stamps, equal flags."""
    try:
        info = os.stat(index)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def index_flags(index: Path, hash_size: int = 20) -> dict[str, str] | None:
    """Index entries with assume-unchanged or skip-worktree set: path -> the flags, comma
    separated. None when the index is a kind this reader leaves to git (split, sparse,
    unknown version, damaged); {} when there is no index."""
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        return _parse_flags(data, hash_size)
    except (struct.error, ValueError, IndexError):
        return None


def _parse_flags(data: bytes, hash_size: int) -> dict[str, str] | None:
    signature, version, count = struct.unpack_from(">4sII", data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    flags_at = 40 + hash_size  # ctime, mtime, dev, ino, mode, uid, gid, size, then the hash
    unpack, find = struct.unpack_from, data.index
    offset, name = 12, b""
    found: dict[str, str] = {}
    for _ in range(count):  # the hot loop (20,000 entries: a few ms): no work per entry
        (flags,) = unpack(">H", data, offset + flags_at)
        start = offset + flags_at + 2
        extended = 0
        if flags & 0x4000:
            (extended,) = unpack(">H", data, start)
            start += 2
        if version == 4:
            strip, start = _varint(data, start)
            end = find(b"\0", start)
            name = name[: len(name) - strip] + data[start:end]
            offset = end + 1
        else:
            length = flags & 0xFFF
            end = find(b"\0", start) if length == 0xFFF else start + length
            if flags & 0x8000 or extended & 0x4000:
                name = data[start:end]
            offset += (end - offset + 8) & ~7  # NUL padded to a multiple of 8
        if flags & 0x8000 or extended & 0x4000:
            kinds = [ASSUME_UNCHANGED] if flags & 0x8000 else []
            kinds += [SKIP_WORKTREE] if extended & 0x4000 else []
            found[name.decode("utf-8", "surrogateescape")] = ",".join(kinds)
    if _has_extension(data, offset, hash_size, (b"link", b"sdir")):
        return None  # split index (entries live in another file) or sparse index
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset varint (index v4's prefix length)."""
    byte = data[at]
    value = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at + 1


def _has_extension(data: bytes, offset: int, hash_size: int, wanted: tuple[bytes, ...]) -> bool:
    end = len(data) - hash_size
    while offset + 8 <= end:
        signature, size = struct.unpack_from(">4sI", data, offset)
        if signature in wanted:
            return True
        offset += 8 + size
    return False


def parse_ls_files_v(out: str) -> dict[str, str]:
    """`git ls-files -v -z`: a lowercase tag is assume-unchanged, S (or s) skip-worktree."""
    found: dict[str, str] = {}
    for item in out.split("\0"):
        if len(item) < 3:
            continue
        tag, path = item[0], item[2:]
        kinds = [
            k
            for k, on in ((ASSUME_UNCHANGED, tag.islower()), (SKIP_WORKTREE, tag.upper() == "S"))
            if on
        ]
        if kinds:
            found[path] = ",".join(kinds)
    return found
