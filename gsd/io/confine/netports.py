"""Which TCP ports a supervised program may connect to (Landlock ABI 4+, `gsd.io.process.launch`).

Every program gets 443 (HTTPS: package registries, the CLIs' own services), the ports of
the proxies its environment names (HTTPS_PROXY, ...), and config.json `sandbox.connect`;
a runner also gets the port of the API it is pointed at (its base URL: ANTHROPIC_BASE_URL,
OPENAI_BASE_URL or codex's provider `base_url`, GOOGLE_GEMINI_BASE_URL; 443 when unset).
Everything else is refused, git's 9418 and ssh's 22 among them: `git push` to a git://
or ssh remote cannot connect. `"connect": "any"` turns the rule off.

`command` agents and verify commands get 443 and the configured ports only: they run
code an agent wrote, and 443 is what installing a package needs; a test suite that
talks to a database or a server on a fixed local port needs that port listed. An https
remote on 443 is not stopped by the port rule: the credentials layer
(`gsd.core.safety.credentials`) is what stands in its way there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

HTTPS = 443
DEFAULT = (HTTPS,)
SCHEMES = {"https": 443, "http": 80, "socks5": 1080, "socks5h": 1080, "socks4": 1080, "socks": 1080}
PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
# the variables each runner reads its API's address from
BASE_URLS = {
    "claude": ("ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL"),
    "codex": ("OPENAI_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"),
}
# `base_url = "..."` in codex's config.toml (any provider's: the one in use is among them)
_TOML_BASE_URL = re.compile(r'^\s*base_url\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


def url_port(url: str) -> int | None:
    """The TCP port `url` connects to: its own, else its scheme's; None when it has none."""
    try:
        parts = urlsplit(url.strip() if "://" in url else f"http://{url.strip()}")
        port = parts.port
    except ValueError:
        return None
    return port if port is not None else SCHEMES.get(parts.scheme.lower())


def runner_urls(runner: str, environ: Mapping[str, str]) -> list[str]:
    """The base URLs `runner` may be pointed at: its variables, Claude Code's settings'
    `env`, codex's config.toml."""
    names = BASE_URLS.get(runner, ())
    urls = [environ[name] for name in names if environ.get(name)]
    home = Path(environ.get("HOME") or Path.home())
    if runner == "claude":
        urls += _claude_settings_env(home / ".claude" / "settings.json", names)
    if runner == "codex":
        codex_home = Path(environ.get("CODEX_HOME") or home / ".codex")
        urls += _read_all(_TOML_BASE_URL, codex_home / "config.toml")
    return urls


def allowed(
    runner: str, environ: Mapping[str, str], configured: Iterable[int] | None
) -> tuple[int, ...] | None:
    """The ports one program may connect to, in order; None: any (`configured` None)."""
    if configured is None:
        return None
    urls = [*runner_urls(runner, environ), *(environ[p] for p in PROXIES if environ.get(p))]
    found = [port for port in map(url_port, urls) if port is not None]
    return tuple(dict.fromkeys([*DEFAULT, *found, *configured]))


def _claude_settings_env(path: Path, names: Iterable[str]) -> list[str]:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    env = settings.get("env") if isinstance(settings, dict) else None
    if not isinstance(env, dict):
        return []
    return [env[name] for name in names if isinstance(env.get(name), str)]


def _read_all(pattern: re.Pattern[str], path: Path) -> list[str]:
    try:
        return pattern.findall(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def describe(ports: tuple[int, ...] | None, abi: int) -> str:
    """The dry run's words for the port rule."""
    if ports is None:
        return "connects anywhere (sandbox.connect: any)"
    if abi < 4:
        return f"connects anywhere (Landlock ABI {abi} has no TCP rules; 4 has)"
    return "connects only to TCP " + ", ".join(map(str, ports))
