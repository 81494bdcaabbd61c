"""Greet a person by name."""

from __future__ import annotations


def greet(name: str) -> str:
    """Return a friendly greeting for ``name``."""
    return f"Hello, {name}!"
