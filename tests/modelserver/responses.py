"""Stub until its CLI's protocol lands."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def reply(*args: Any) -> Any:
    raise NotImplementedError


def configure(home: Path, url: str) -> dict[str, str]:
    raise NotImplementedError
