"""Where the settings live: `.planning/config.json`.

The settings themselves are `gsd.formats.settings`, which needs pydantic: this module stays light
because a command that only names the file (`gsd doctor`) need not load pydantic."""

from __future__ import annotations
