"""Agent files, tool tiers, discovery, `gsd agents list` and `gsd agents sync`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.formats.agents import Agent, AgentError, parse_agent, tier_of
from gsd.formats.planning.roster import parse as parse_roster
from gsd.io.plans.agentscan import bundled_agents_dir, scan
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

AGENT = """\
---
name: {name}
description: "A test agent"
tools: [{tools}]
max_turns: 7
timeout_mins: 2
runner: {runner}
{extra}---
Persona text.
"""


def agent_file(
    name: str = "x", tools: str = "read_file", runner: str = "claude", extra: str = ""
) -> str:
    return AGENT.format(name=name, tools=tools, runner=runner, extra=extra)


@pytest.mark.parametrize(
    ("tools", "tier"),
    [
        pytest.param([], "read-only", id="nothing"),
        pytest.param(["read_file", "glob", "search_file_content"], "read-only", id="read"),
        pytest.param(["read_file", "google_web_search"], "read-only", id="web"),
        pytest.param(["read_file", "run_shell_command"], "read+shell", id="shell"),
        pytest.param(["read_file", "write_file", "replace"], "read+write", id="write"),
        pytest.param(["write_file", "run_shell_command"], "full", id="full"),
    ],
)
def test_tiers(tools: list[str], tier: str) -> None:
    assert tier_of(tools) == tier


def test_parse_agent_coerces_strings() -> None:
    agent = parse_agent(agent_file(extra="temperature: 0.2\nmodel: sonnet\n"), "a.md", "x")
    assert (agent.max_turns, agent.timeout_mins, agent.temperature) == (7, 2.0, 0.2)
    assert (agent.model, agent.runner, agent.tier) == ("sonnet", "claude", "read-only")
    assert agent.body == "Persona text.\n"


def test_parse_agent_reads_a_bom_and_crlf_file() -> None:
    text = "\ufeff" + agent_file(extra="model: sonnet\n").replace("\n", "\r\n")
    agent = parse_agent(text, "a.md", "x")
    assert (agent.model, agent.body) == ("sonnet", "Persona text.\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("no frontmatter", "no frontmatter", id="no-frontmatter"),
        pytest.param(agent_file(runner="bash"), "runner", id="runner"),
        pytest.param(agent_file(runner="command"), "needs `command", id="command-missing"),
        pytest.param(agent_file(extra="max_turns: lots\n"), "max_turns", id="turns"),
        pytest.param("---\nname: [\n---\n", "invalid YAML", id="yaml"),
    ],
)
def test_broken_agent_files_say_why(text: str, problem: str) -> None:
    with pytest.raises(AgentError, match=problem.replace("(", r"\(")) as info:
        parse_agent(text, "agents/x.md", "x")
    assert str(info.value).startswith("agents/x.md")


def test_unknown_tools_and_a_name_unlike_the_file_are_notes_not_skips() -> None:
    # before issue 11 both skipped the whole file
    agent = parse_agent(agent_file(name="y", tools="read_file, rm_rf"), "agents/x.md", "x")
    assert agent.name == "y" and agent.tools == ["read_file", "rm_rf"]
    assert agent.unknown_tools == ["rm_rf"] and agent.tier == "read-only"
    assert any("rm_rf" in note for note in agent.notes)
    assert any("differs from its file name" in note for note in agent.notes)


def test_discovery_order_namespaces_and_broken_files(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "team").mkdir(parents=True)
    second.mkdir()
    (first / "x.md").write_text(agent_file(tools="read_file"))
    (first / "team" / "python-pro.md").write_text(agent_file("team:python-pro"))
    (first / "README.md").write_text("not an agent")
    (second / "x.md").write_text(agent_file(tools="read_file, write_file"))
    (second / "broken.md").write_text(agent_file(name="broken", runner="nope"))
    found = scan([first, second, tmp_path / "missing"])
    agents, warnings = found.agents, found.warnings()
    assert sorted(agents) == ["team:python-pro", "x"]
    assert agents["x"].tier == "read+write"  # the later folder wins
    assert agents["x"].overrides == str(first / "x.md")
    # one summary line per folder; the reason is in `gsd agents check` (gsd.io.plans.agentscan)
    assert warnings == [f"{second}: 1 of 2 agent files skipped (see `gsd agents check`)"]
    assert "runner" in agents.skipped["broken"]


def test_every_bundled_agent_is_valid_and_real() -> None:
    found = scan([bundled_agents_dir()])
    agents, warnings = found.agents, found.warnings()
    assert warnings == []
    maestro = {
        "architect": "read-only",
        "api-designer": "read-only",
        "code-reviewer": "read-only",
        "debugger": "read+shell",
        "performance-engineer": "read+shell",
        "security-engineer": "read+shell",
        "refactor": "read+write",
        "technical-writer": "read+write",
        "coder": "full",
        "data-engineer": "full",
        "devops-engineer": "full",
        "tester": "full",
    }
    for name, tier in maestro.items():
        assert agents[name].tier == tier, name
    for name in ("gsd-executor", "gsd-planner", "python-pro", "typescript-pro", "postgres-pro"):
        assert name in agents
    assert agents["gsd-executor"].tier == "full"
    for agent in agents.values():
        body = agent.body
        assert len(body.splitlines()) >= 60, agent.name
        assert "### Task Report" in body and "### Downstream Context" in body, agent.name
        assert "TODO" not in body and agent.max_turns and agent.timeout_mins, agent.name


def test_agents_list_and_sync(project, gsd) -> None:
    project.write(
        ".claude/agents/local-pro.md",
        agent_file("local-pro", runner="command", extra='command: ["python3", "a.py"]\n'),
    )
    project.write("agents/python-pro.md", agent_file("python-pro", tools="write_file"))
    listed = json.loads(gsd("agents", "list", "--format", "json").out)["agents"]
    rows = {row["name"]: row for row in listed}
    assert rows["local-pro"]["runner"] == "command"
    assert rows["local-pro"]["source"] == ".claude/agents/local-pro.md"
    assert rows["python-pro"]["source"] == "agents/python-pro.md"  # overrides the bundled one
    assert rows["python-pro"]["tier"] == "read+write"
    assert rows["gsd-executor"]["source"] == "(bundled) gsd-executor.md"
    text = gsd("agents", "list").out
    head = ["name", "tier", "runner", "model", "timeout", "source", "overrides"]
    assert text.splitlines()[0].split() == head
    assert rows["python-pro"]["overrides"] == "(bundled) python-pro.md"
    assert rows["python-pro"]["origin"] == "project" and rows["gsd-executor"]["origin"] == "bundled"
    result = gsd("agents", "sync")
    assert result.code == 0 and "specialists" in result.out
    written = (project.planning / "available_agents.md").read_text()
    names = parse_roster(written)
    assert "local-pro" in names and "python-pro" in names and "code-reviewer" in names
    assert not [n for n in names if n.startswith("gsd-")]
    assert all(line.startswith("- **") for line in written.splitlines() if line.startswith("-"))


def test_broken_agent_file_is_a_warning_not_a_failure(project, gsd) -> None:
    project.write("agents/bad.md", "---\nname: bad\nrunner: teleport\n---\n")
    result = gsd("agents", "list")
    assert result.code == 0
    assert result.err == (
        "gsd: warning: agents: 1 of 1 agent files skipped (see `gsd agents check`)\n"
    )
    check = gsd("agents", "check")
    assert check.code == 1
    assert "  skipped  bad.md: runner: Input should be" in check.out
    assert "(got 'teleport')" in check.out


def test_a_user_adds_an_agent_by_dropping_one_file(project, gsd) -> None:
    project.write(".claude/agents/rust-pro.md", agent_file("rust-pro", tools="write_file"))
    assert "rust-pro" in gsd("agents", "list").out


@requires_corpus
def test_roster_reader_accepts_the_forms_in_the_wild() -> None:
    text = (CORPUS / "BrandStake__get-shit-done/.planning/available_agents.md").read_text()
    assert "qa-expert" in parse_roster(text) and "python-pro" not in parse_roster(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- **python-pro**: Python\n", id="bold"),
        pytest.param("- `python-pro`: Python\n", id="code"),
        pytest.param("python-pro\n", id="bare"),
        pytest.param(
            "# Title\n\nSome prose here.\n\n```\nnot-me\n```\n- **python-pro**\n",
            id="prose-and-fences-ignored",
        ),
    ],
)
def test_roster_forms(text: str) -> None:
    assert list(parse_roster(text)) == ["python-pro"]


def test_agent_model_rejects_unsafe_names() -> None:
    with pytest.raises(ValueError):
        Agent(name="x; touch /tmp/pwned")
