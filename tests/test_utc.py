"""Moments as gsd writes them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from gsd.core.utc import utc_stamp

pytestmark = pytest.mark.unit  # `make test-fast` runs these

NOON = datetime(2026, 2, 23, 12, 0, 5)


@pytest.mark.parametrize(
    ("moment", "stamp"),
    [
        pytest.param(NOON, "2026-02-23T12:00:05Z", id="naive-is-utc"),
        pytest.param(NOON.replace(tzinfo=timezone.utc), "2026-02-23T12:00:05Z", id="utc"),
        pytest.param(
            NOON.replace(tzinfo=timezone(timedelta(hours=2))), "2026-02-23T10:00:05Z", id="+02"
        ),
        pytest.param(NOON.replace(microsecond=999_999), "2026-02-23T12:00:05Z", id="truncated"),
    ],
)
def test_utc_stamp(moment: datetime, stamp: str) -> None:
    assert utc_stamp(moment) == stamp


def test_utc_stamp_of_now() -> None:
    assert datetime.strptime(utc_stamp(), "%Y-%m-%dT%H:%M:%SZ")
