"""Where the settings live (`.planning/config.json`) and yes/no environment flags.

The settings themselves are `gsd.formats.settings`, which needs pydantic: this module stays light
because the hook path (`gsd validate`) reads environment flags and never the settings."""

from __future__ import annotations

import os

CONFIG_FILE = "config.json"


def env_flag(name: str) -> bool:
    """`DEBUG=true`, `SKIP_VERIFICATION=1` and the like."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
