"""The pieces of the no-push layers (issue 20): the ports a program may connect to, the
environment an agent gets, the launcher's option, codex's exec-policy rules as codex reads
them. tests/test_nopush.py runs hostile agents against real remotes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gsd.core.safety import credentials
from gsd.io.confine import netports
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_the_runners_api_port_is_allowed(tmp_path: Path) -> None:
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model_provider = "x"\n[model_providers.x]\nbase_url = "http://127.0.0.1:7001/v1"\n'
    )
    env = {
        "HOME": str(tmp_path),
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:7000",
        "GOOGLE_GEMINI_BASE_URL": "https://gemini.example:8443/",
        "HTTPS_PROXY": "http://proxy.example:3128",
    }
    assert netports.allowed("claude", env, ()) == (443, 7000, 3128)
    assert netports.allowed("codex", env, [5432]) == (443, 7001, 3128, 5432)
    assert netports.allowed("gemini", env, ()) == (443, 8443, 3128)
    assert netports.allowed("command", env, ()) == (443, 3128)
    assert netports.allowed("claude", {"HOME": str(tmp_path)}, ()) == (443,)
    assert netports.allowed("claude", env, None) is None


def test_credentials_are_taken_out_and_gits_config_appended() -> None:
    env = credentials.agent_environ(
        {
            "GH_TOKEN": "x",
            "GITLAB_PRIVATE_TOKEN": "x",
            "OPENAI_API_KEY": "keep",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "user.name",
            "GIT_CONFIG_VALUE_0": "Me",
            "PATH": "/bin",
        },
        passed=("GITLAB_PRIVATE_TOKEN",),
    )
    assert env == {
        "GITLAB_PRIVATE_TOKEN": "x",
        "OPENAI_API_KEY": "keep",
        "PATH": "/bin",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "Me",
        "GIT_CONFIG_KEY_1": "credential.helper",
        "GIT_CONFIG_VALUE_1": "",
        "GIT_CONFIG_KEY_2": "core.askPass",
        "GIT_CONFIG_VALUE_2": "",
    }


CODEX_CASES = [
    ("git push origin HEAD", "forbidden"),
    ("env git push", "forbidden"),
    ("command git push origin HEAD", "forbidden"),
    ("/usr/bin/git push origin HEAD", "forbidden"),
    ("git status", None),
    ("env git status", None),
    # a prefix rule has no word that matches any word: the port rule holds these
    ("git -C . push origin HEAD", None),
]


def test_codexs_exec_policy_refuses_the_spellings_it_can_express(
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """gsd's rules file as codex 0.169.0's own exec-policy checker reads it."""
    import subprocess

    from gsd.core.safety.policy import BASELINE
    from gsd.formats.runners import codex
    from tests.test_clis import cli_env

    rules = tmp_path / "gsd.rules"
    rules.write_text(codex.exec_rules(BASELINE))
    decided = {}
    for command, _want in CODEX_CASES:
        argv = ["codex", "execpolicy", "check", "--rules", str(rules)]
        argv += ["--resolve-host-executables", "--", *command.split()]
        env = cli_env(cli_bin, tmp_path)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 0, done.stderr
        decided[command] = json.loads(done.stdout).get("decision")
    assert decided == dict(CODEX_CASES)


def test_the_launcher_reads_its_ports_and_puts_connect_in_the_ruleset() -> None:
    from gsd.io.process import landlock, launch

    options = launch.parse_options(["--landlock", "--connect", "443,8080", "--", "true"])
    assert options.connect == (443, 8080)
    assert launch.parse_options(["--connect", "", "--", "true"]).connect == ()
    assert launch.parse_options(["--", "true"]).connect is None  # no rule at all
    for bad in ("http", "443,x", "70000"):
        with pytest.raises(launch.LaunchError, match="--connect needs TCP ports"):
            launch.parse_options(["--connect", bad, "--", "true"])
    attr = landlock.ruleset_attr(4, landlock.write_rights(4), landlock.ACCESS_NET_CONNECT_TCP)
    assert attr[8:16] == (2).to_bytes(8, sys.byteorder) and len(attr) == 16
    assert len(landlock.ruleset_attr(3, landlock.write_rights(3), 0)) == 8  # no net field
