"""`.planning/config.json`: the keys gsd reads and their defaults; yes/no environment flags."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gsd.errors import InputError

CONFIG_FILE = "config.json"

# Every key gsd reads (SPEC section 7) and its default. Unknown keys are kept as they are.
DEFAULTS: dict[str, Any] = {
    "mode": "interactive",
    "parallelization.enabled": True,
    "parallelization.max_concurrent_agents": 3,
    "workflow.use_worktrees": True,
    "workflow.use_specialists": True,
    "voltagent.fallback_on_error": True,
    "specialists.timeout_seconds": 300,
    "specialists.kill_grace_seconds": 10,
    "specialists.max_retries": 2,
    "specialists.scope": "warn",
    "specialists.agent_paths": [],
    "git.commit_docs": True,
    # SPEC 0: every agent runs in a Landlock sandbox where the kernel has one
    "sandbox.enabled": True,
    "sandbox.writable": [],
}


class Config:
    """Settings read from config.json, with SPEC defaults for missing keys."""

    def __init__(self, data: Mapping[str, Any] | None = None, source: str = "") -> None:
        self.data: dict[str, Any] = dict(data or {})
        self.source = source

    def get(self, dotted: str) -> Any:
        """A value by dotted key (`specialists.timeout_seconds`), else its default."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return DEFAULTS.get(dotted)
            node = node[part]
        return node

    def number(self, dotted: str) -> float:
        value = self.get(dotted)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InputError(
                f"{self.source or CONFIG_FILE}: `{dotted}` must be a number >= 0, not {value!r}"
            )
        return float(value)

    def flag(self, dotted: str) -> bool:
        value = self.get(dotted)
        if not isinstance(value, bool):
            raise InputError(
                f"{self.source or CONFIG_FILE}: `{dotted}` must be true or false, not {value!r}"
            )
        return value


def load(planning: Path) -> Config:
    """The project's config, or the defaults when there is no config.json."""
    path = planning / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(source=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}", hint="fix config.json"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: must hold a JSON object")
    return Config(data, str(path))


def env_flag(name: str) -> bool:
    """`DEBUG=true`, `SKIP_VERIFICATION=1` and the like."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
