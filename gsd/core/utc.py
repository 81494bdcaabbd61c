"""Moments as gsd writes them: UTC to the second, `2026-02-23T14:32:15Z`."""

from __future__ import annotations

from datetime import datetime, timezone

STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def as_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC time; a naive time is taken as UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def utc_stamp(moment: datetime | None = None) -> str:
    """`moment` (now when None) as `2026-02-23T14:32:15Z`."""
    return as_utc(moment or datetime.now(timezone.utc)).strftime(STAMP_FORMAT)
