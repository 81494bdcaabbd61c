"""Specialist resolution: SPEC section 3's steps, each recorded with its reason."""

from __future__ import annotations

import pytest

from gsd.core.resolve import debug_print, disabled_agents, resolve_specialist
from gsd.formats.agents import Agent

pytestmark = pytest.mark.unit  # `make test-fast` runs these

AGENTS = {
    name: Agent(name=name)
    for name in ("gsd-executor", "python-pro", "voltagent-lang:python-pro", "postgres-pro")
}
ROSTER = {"python-pro", "voltagent-lang:python-pro", "postgres-pro", "ghost-pro"}


@pytest.mark.parametrize(
    ("requested", "agent", "reason"),
    [
        pytest.param(None, "gsd-executor", None, id="missing"),
        pytest.param("", "gsd-executor", None, id="empty"),
        pytest.param("null", "gsd-executor", None, id="null"),
        pytest.param('"null"', "gsd-executor", None, id="double-quoted-null"),
        pytest.param("'null'", "gsd-executor", None, id="single-quoted-null"),
        pytest.param("x; touch /tmp/pwned", "gsd-executor", "malformed", id="semicolon"),
        pytest.param("$(id)", "gsd-executor", "malformed", id="command-substitution"),
        pytest.param("a b", "gsd-executor", "malformed", id="space"),
        pytest.param("../python-pro", "gsd-executor", "malformed", id="path"),
        pytest.param(" python-pro ", "gsd-executor", "malformed", id="padded"),
        pytest.param("  ", "gsd-executor", None, id="blank"),
        pytest.param(" null ", "gsd-executor", None, id="padded-null"),
        pytest.param(
            "rust-pro", "gsd-executor", "not in .planning/available_agents.md", id="not-in-roster"
        ),
        pytest.param("ghost-pro", "gsd-executor", "no agent file", id="roster-but-no-file"),
        pytest.param("postgres-pro", "gsd-executor", "GSD_DISABLED_AGENTS", id="disabled"),
        pytest.param("python-pro", "python-pro", None, id="resolves"),
        pytest.param(
            "voltagent-lang:python-pro", "voltagent-lang:python-pro", None, id="namespaced"
        ),
    ],
)
def test_steps(requested: str | None, agent: str, reason: str | None) -> None:
    result = resolve_specialist(requested, roster=ROSTER, agents=AGENTS, disabled={"postgres-pro"})
    assert result.agent == agent
    if reason is None:
        assert result.fallback_reason is None
    else:
        assert result.fallback_reason is not None and reason in result.fallback_reason
    assert result.steps[-1].startswith(("->", "step 5"))


def test_no_roster_falls_back_with_the_fix() -> None:
    result = resolve_specialist("python-pro", roster=None, agents=AGENTS)
    assert result.agent == "gsd-executor"
    assert result.fallback_reason is not None and "gsd agents sync" in result.fallback_reason


def test_use_specialists_false_sends_everything_to_the_executor() -> None:
    result = resolve_specialist("python-pro", roster=ROSTER, agents=AGENTS, use_specialists=False)
    assert (result.agent, result.fallback_reason) == (
        "gsd-executor",
        "workflow.use_specialists is false",
    )


def test_disabled_agents_from_the_environment() -> None:
    assert disabled_agents({"GSD_DISABLED_AGENTS": " a, b ,,c"}) == {"a", "b", "c"}
    assert disabled_agents({}) == frozenset()


def test_debug_prints_every_step(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    result = resolve_specialist("rust-pro", roster=ROSTER, agents=AGENTS)
    debug_print("01-02 task 3", result)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("DEBUG", "true")
    debug_print("01-02 task 3", result)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[gsd] resolve 01-02 task 3: specialist as written: 'rust-pro'"
    assert (
        err[-1]
        == "[gsd] resolve 01-02 task 3: -> gsd-executor: not in .planning/available_agents.md"
    )


def test_a_roster_name_whose_file_was_skipped_says_why() -> None:
    resolution = resolve_specialist(
        "ghost-pro",
        roster=ROSTER,
        agents=AGENTS,
        skipped={"ghost-pro": "agents/ghost-pro.md: runner: Input should be 'claude'"},
    )
    assert resolution.agent == "gsd-executor"
    assert resolution.fallback_reason == (
        "its agent file was skipped: agents/ghost-pro.md: runner: Input should be 'claude' "
        "(see `gsd agents check`)"
    )
