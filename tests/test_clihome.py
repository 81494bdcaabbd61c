"""The private home of one codex or gemini spawn (gsd.io.confine.clihome), judged on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gsd.core.safety.policy import BASELINE
from gsd.formats.runners.agenthooks import hook_groups
from gsd.formats.runners.codex import RULES_FILE, exec_rules
from gsd.io.confine import clihome

pytestmark = pytest.mark.unit  # `make test-fast` runs these

HOOKS = hook_groups("gemini", "/venv/bin/python -m gsd")


def test_the_private_codex_home_is_removed_and_the_users_untouched(tmp_path: Path) -> None:
    user = tmp_path / "codex"
    (user / "rules").mkdir(parents=True)
    (user / "auth.json").write_text("{}")
    (user / "rules" / "mine.rules").write_text("# mine\n")
    with clihome.codex_home({"CODEX_HOME": str(user)}, "01-01-1-9", exec_rules(BASELINE)) as env:
        home = Path(env["CODEX_HOME"])
        assert (home / "auth.json").resolve() == (user / "auth.json").resolve()
        assert (home / "rules" / "mine.rules").read_text() == "# mine\n"
        assert 'pattern=["git", "push"]' in (home / "rules" / RULES_FILE).read_text()
        (home / "auth.json").write_text('{"new": 1}')  # codex writes through the link
    assert not home.exists() and not (user / "gsd-runs").exists()
    assert (user / "auth.json").read_text() == '{"new": 1}'
    assert sorted(os.listdir(user / "rules")) == ["mine.rules"]
    assert (user / "tmp").is_dir()  # its helper programs go to the user's tmp/


def user_gemini(home: Path, settings: object) -> Path:
    user = home / ".gemini"
    (user / "tmp").mkdir(parents=True)
    (user / "oauth_creds.json").write_text('{"old": 1}')
    (user / "projects.json").write_text('{"projects": {}}')
    (user / "GEMINI.md").write_text("my memory\n")
    if settings is not None:
        (user / "settings.json").write_text(json.dumps(settings))
    return user


def test_the_private_gemini_home_holds_the_users_settings_with_gsds(tmp_path: Path) -> None:
    """GEMINI_CLI_HOME/.gemini/settings.json: the user's (the auth type, MCP servers) with
    gsd's hooks and the turn limit; the launcher's GEMINI_CLI_HOME/settings.json is the
    same file; every other entry is the user's through a link; the user's file is as
    it was, and the private home goes after the spawn."""
    mine = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "mcpServers": {"x": {}}}
    user = user_gemini(tmp_path, mine)
    (tmp_path / ".agents" / "skills").mkdir(parents=True)
    with clihome.gemini_home({"HOME": str(tmp_path)}, "01-01-1-9", 4, HOOKS) as env:
        base = Path(env["GEMINI_CLI_HOME"])
        assert base.parent == user / "gsd-runs"
        settings = json.loads((base / ".gemini" / "settings.json").read_text())
        assert settings["security"] == mine["security"] and settings["mcpServers"] == {"x": {}}
        assert settings["model"] == {"maxSessionTurns": 4}
        commands = [h["command"] for g in settings["hooks"].values() for h in g[0]["hooks"]]
        assert commands == [
            "/venv/bin/python -m gsd hooks run gemini-post-edit",
            "/venv/bin/python -m gsd hooks run gemini-session-start",
        ]
        assert json.loads((base / "settings.json").read_text()) == settings
        assert (base / ".gemini" / "GEMINI.md").read_text() == "my memory\n"
        assert (base / ".agents").resolve() == (tmp_path / ".agents").resolve()
        assert not (base / ".gemini" / "gsd-runs").exists()
    assert not base.exists() and not (user / "gsd-runs").exists()
    assert json.loads((user / "settings.json").read_text()) == mine


def test_what_gemini_writes_in_its_private_home_reaches_the_user(tmp_path: Path) -> None:
    """Through a link (a refreshed login), by a rename over a link (the project registry),
    a file and a folder the user had none of: all of it is the user's after the spawn."""
    user = user_gemini(tmp_path, None)
    with clihome.gemini_home({"HOME": str(tmp_path)}, "01-01-1-9", 3, None) as env:
        inner = Path(env["GEMINI_CLI_HOME"]) / ".gemini"
        (inner / "oauth_creds.json").write_text('{"new": 1}')
        (inner / "tmp" / "chats.json").write_text("[]")
        scratch = inner / "projects.json.tmp"
        scratch.write_text('{"projects": {"/w": "w"}}')
        os.replace(scratch, inner / "projects.json")
        (inner / "installation_id").write_text("id\n")
        (inner / "history" / "w").mkdir(parents=True)  # history/: made in the user's first
        (inner / "antigravity").mkdir()
        (inner / "settings.json").write_text("{}")  # gsd's own: not carried back
    assert (user / "oauth_creds.json").read_text() == '{"new": 1}'
    assert (user / "tmp" / "chats.json").read_text() == "[]"
    assert json.loads((user / "projects.json").read_text()) == {"projects": {"/w": "w"}}
    assert not (user / "projects.json").is_symlink()
    assert (user / "installation_id").read_text() == "id\n"
    assert (user / "history" / "w").is_dir() and (user / "antigravity").is_dir()
    assert not (user / "settings.json").exists() and not (user / "gsd-runs").exists()


def test_gemini_cli_home_of_the_user_is_where_the_private_home_goes(tmp_path: Path) -> None:
    home = tmp_path / "gemhome"
    user_gemini(home, {"a": 1})
    env = {"HOME": str(tmp_path / "elsewhere"), "GEMINI_CLI_HOME": str(home)}
    with clihome.gemini_home(env, "p", None, HOOKS) as made:
        base = Path(made["GEMINI_CLI_HOME"])
        assert base.parent == home / ".gemini" / "gsd-runs"
        assert json.loads((base / ".gemini" / "settings.json").read_text())["a"] == 1


@pytest.mark.parametrize("text", ["[1]", "{broken"])
def test_settings_gemini_cannot_read_get_no_private_home(tmp_path: Path, text: str) -> None:
    """gemini reads the user's own file then and reports what is wrong with it."""
    user = user_gemini(tmp_path, None)
    (user / "settings.json").write_text(text)
    with clihome.gemini_home({"HOME": str(tmp_path)}, "p", 3, HOOKS) as env:
        assert env == {} and not (user / "gsd-runs").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only folder")
def test_a_read_only_gemini_home_gets_no_private_home(tmp_path: Path) -> None:
    user = user_gemini(tmp_path, {})
    user.chmod(0o500)
    try:
        with clihome.gemini_home({"HOME": str(tmp_path)}, "p", 3, HOOKS) as env:
            assert env == {}
    finally:
        user.chmod(0o700)
