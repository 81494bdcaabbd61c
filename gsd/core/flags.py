"""Yes/no switches read from the environment: `DEBUG=true`, `SKIP_VERIFICATION=1`."""

from __future__ import annotations

import os
from collections.abc import Mapping


def env_flag(name: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the variable `name` says yes (1, true, yes or on, any case, padding ignored)."""
    return environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
