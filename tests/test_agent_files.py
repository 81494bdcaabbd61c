"""Real agent files (tests/data/agents, see SOURCES.md): every dialect, names, origins."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gsd.formats.agents import Agent, parse_agent, parse_codex_agent
from gsd.formats.files import display_path
from gsd.formats.runners import invocation as runners
from gsd.io.plans.agentscan import Scan, scan
from tests.conftest import auto_task, git, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

DATA = Path(__file__).parent / "data" / "agents"
FOLDERS = {
    "voltagent": DATA / "voltagent" / "categories",
    "wshobson": DATA / "wshobson" / "plugins",
    "lst97": DATA / "lst97" / "agents",
    "0xfurai": DATA / "0xfurai" / "agents",
    "maestro": DATA / "maestro-gemini" / "agents",
    "maestro-v1": DATA / "maestro-gemini-v1.0" / "agents",
    "codex": DATA / "codex" / "categories",
    "gsd": DATA / "gsd-written",
}


def scanned(collection: str) -> Scan:
    return scan([(FOLDERS[collection], "agent_paths")])


@pytest.mark.parametrize(
    ("collection", "name", "alias", "tier", "runner"),
    [
        pytest.param(
            "voltagent",
            "python-pro",
            "voltagent-lang:python-pro",
            "full",
            "claude",
            id="claude-comma-tools-in-a-plugin",
        ),
        pytest.param(
            "voltagent",
            "gdpr-ccpa-compliance",
            "voltagent-qa-sec:gdpr-ccpa-compliance",
            "read-only",
            "claude",
            id="claude-yaml-rejects-it",
        ),
        pytest.param(
            "voltagent",
            "ui-ux-tester",
            "voltagent-qa-sec:ui-ux-tester",
            "full",
            "claude",
            id="claude-unknown-tools",
        ),
        pytest.param(
            "wshobson",
            "sql-pro",
            "database-design:sql-pro",
            "full",
            "claude",
            id="claude-no-tools-is-all-tools",
        ),
        pytest.param(
            "wshobson",
            "arm-cortex-expert",
            "arm-cortex-microcontrollers:arm-cortex-expert",
            "read-only",
            "claude",
            id="claude-empty-tool-list",
        ),
        pytest.param(
            "wshobson",
            "agent-orchestration-context-manager",
            "agent-orchestration:agent-orchestration-context-manager",
            "full",
            "claude",
            id="claude-name-unlike-file",
        ),
        pytest.param(
            "lst97",
            "frontend-developer",
            "development:frontend-developer",
            "full",
            "claude",
            id="claude-mcp-tools-in-a-subfolder",
        ),
        pytest.param("0xfurai", "kafka-expert", None, "full", "claude", id="claude-no-tools"),
        pytest.param("maestro", "coder", None, "full", "gemini", id="gemini-current"),
        pytest.param(
            "maestro", "code_reviewer", None, "read-only", "gemini", id="gemini-current-read-only"
        ),
        pytest.param("maestro-v1", "coder", None, "full", "gemini", id="gemini-older"),
        pytest.param(
            "codex",
            "idp-architect",
            "12-platform-engineering-idp:idp-architect",
            "read+shell",
            "codex",
            id="codex-read-only-sandbox",
        ),
        pytest.param(
            "codex",
            "backend-developer",
            "01-core-development:backend-developer",
            "read+write",
            "codex",
            id="codex-workspace-write",
        ),
        pytest.param(
            "gsd",
            "careful-reviewer",
            None,
            "read+shell",
            "claude",
            id="claude-disallowed-and-permission-mode",
        ),
        pytest.param("gsd", "planner", None, "read-only", "claude", id="claude-plan-mode"),
    ],
)
def test_real_agent_files(
    collection: str, name: str, alias: str | None, tier: str, runner: str
) -> None:
    agents = scanned(collection).agents
    agent = agents[name]
    assert (agent.tier, agent.runner, agent.origin) == (tier, runner, "agent_paths")
    assert agent.aliases == ((alias,) if alias else ())
    if alias:
        assert agents[alias] is agent  # a roster may name it either way
    assert agent.body.strip() and Path(agent.source).is_file()


def test_what_each_dialect_keeps() -> None:
    reviewer = scanned("gsd").agents["careful-reviewer"]
    assert reviewer.tools == ["Read", "Grep", "Glob", "Bash", "Edit"]
    assert reviewer.disallowed_tools == ["Edit", "Write"]  # for the claude runner's deny list
    assert (reviewer.permission_mode, reviewer.max_turns, reviewer.model) == (
        "acceptEdits",
        12,
        "inherit",
    )
    assert "color" not in reviewer.model_dump() and not reviewer.web
    planner = scanned("gsd").agents["planner"]
    assert planner.tools_omitted and planner.web  # all tools, the web included
    sql = scanned("wshobson").agents["sql-pro"]
    assert sql.tools_omitted and sql.model == "inherit"
    older = scanned("maestro-v1").agents["coder"]
    assert older.model == "gemini-3-pro-preview" and "search_file_content" in older.tools
    assert (older.max_turns, older.timeout_mins, older.temperature) == (25, 10, 0.2)
    coder = scanned("maestro").agents["coder"]
    assert {"list_directory", "grep_search", "write_todos", "ask_user"} <= set(coder.tools)
    assert coder.notes == () and coder.unknown_tools == []
    codex = scanned("codex").agents["idp-architect"]
    assert codex.model == "gpt-5.4" and codex.sandbox_mode == "read-only"
    assert codex.body.startswith("Own internal developer platform architecture")


def test_argv_from_real_files() -> None:
    reviewer = scanned("gsd").agents["careful-reviewer"]
    argv = runners.build_argv(reviewer, None)  # model: inherit -> the caller passes None
    assert "--model" not in argv and argv[argv.index("--max-turns") + 1] == "12"
    codex = scanned("codex").agents["backend-developer"]
    argv = runners.build_argv(codex, codex.model)
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"  # as the file asked
    gemini = scanned("maestro-v1").agents["coder"]
    assert runners.build_argv(gemini, gemini.model)[0] == "gemini"  # never claude --model gemini-


def test_notes_and_skips_are_summarised_per_folder() -> None:
    assert scanned("voltagent").warnings() == [
        f"{display_path(FOLDERS['voltagent'])}: 2 tool names unknown to gsd in 1 file, 1 with "
        "frontmatter that is not valid YAML (read leniently) (see `gsd agents check`)"
    ]
    assert scanned("wshobson").warnings() == [
        f"{display_path(FOLDERS['wshobson'])}: 1 name differs from the file name "
        "(see `gsd agents check`)"
    ]
    broken = scanned("0xfurai")
    assert broken.warnings() == [
        f"{display_path(FOLDERS['0xfurai'])}: 1 of 2 agent files skipped (see `gsd agents check`)"
    ]
    reason = broken.agents.skipped["sqs-expert"]
    assert reason.endswith("sqs-expert.md: frontmatter must start at byte 0, found '---' on line 2")
    assert scanned("maestro").warnings() == scanned("codex").warnings() == []
    mcp = scanned("lst97").agents["frontend-developer"]
    assert all(t.startswith("mcp__") for t in mcp.unknown_tools) and len(mcp.unknown_tools) == 7


def test_plugin_files_outside_agents_are_ignored(tmp_path: Path) -> None:
    plugin = tmp_path / "plugins" / "python-development"
    shutil.copytree(DATA / "wshobson" / "plugins" / "database-design", plugin)
    (plugin / "commands").mkdir()
    (plugin / "commands" / "migrate.md").write_text("---\ndescription: a command\n---\nDo it.\n")
    (plugin / "README.md").write_text("# docs\n")
    found = scan([tmp_path / "plugins"])
    statuses = {f.path.name: f.status for f in found.folders[0].files}
    assert statuses == {"sql-pro.md": "loaded", "migrate.md": "ignored", "README.md": "ignored"}
    assert found.warnings() == []


@pytest.mark.parametrize(
    ("text", "runner", "tier"),
    [
        pytest.param(
            "---\nname: a\nmodel: gemini-2.5-pro\ntools: [read_file]\n---\nx\n",
            "gemini",
            "read-only",
            id="gemini-model-means-gemini",
        ),
        pytest.param(
            "---\nname: a\nkind: local\nrunner: claude\n---\nx\n",
            "claude",
            "full",
            id="runner-wins-over-kind",
        ),
        pytest.param(
            "---\nname: a\ntools: Read, Bash(git diff:*)\n---\nx\n",
            "claude",
            "read+shell",
            id="a-rule-names-its-tool",
        ),
        pytest.param(
            "---\nname: a\ndisallowedTools: Bash\n---\nx\n",
            "claude",
            "read+write",
            id="denied-shell-from-all",
        ),
        pytest.param(
            "---\nname: a\ndisallowedTools: Write, Edit\n---\nx\n",
            "claude",
            "read+shell",
            id="denied-writes-from-all",
        ),
        pytest.param(
            '---\nname: a\ntools: ["*"]\n---\nx\n', "claude", "full", id="gemini-wildcard"
        ),
        pytest.param(
            "---\nname: a\npermissionMode: bypassPermissions\ntools: Read\n---\nx\n",
            "claude",
            "read-only",
            id="a-mode-never-widens",
        ),
    ],
)
def test_dialect_rules(text: str, runner: str, tier: str) -> None:
    agent = parse_agent(text, "a.md", "a")
    assert (agent.runner, agent.tier) == (runner, tier)


@pytest.mark.parametrize(
    ("sandbox", "tier"),
    [
        ("read-only", "read+shell"),
        ("workspace-write", "read+write"),
        ("danger-full-access", "full"),
    ],
)
def test_codex_sandbox_modes(sandbox: str, tier: str) -> None:
    text = f'name = "a"\nsandbox_mode = "{sandbox}"\ndeveloper_instructions = "x"\n'
    agent = parse_codex_agent(text, "a.toml", "a")
    assert (agent.runner, agent.tier, agent.body) == ("codex", tier, "x\n")
    argv = runners.build_argv(agent, None)
    assert argv[argv.index("--sandbox") + 1] == sandbox


def test_a_remote_gemini_agent_is_skipped_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "remote.md").write_text("---\nname: remote\nkind: remote\n---\nx\n")
    found = scan([tmp_path])
    assert "cannot be spawned" in found.folders[0].files[0].reason


def test_agent_model_defaults_follow_claude_code() -> None:
    assert Agent(name="x").tier == "full"  # no tools: all tools
    assert Agent(name="x", tools=[]).tier == "read-only"  # `tools: []`: none


# --- the command line, with a collection dropped into ~/.claude/agents -----------------


@pytest.fixture
def user_collection(git_project) -> Path:
    """VoltAgent's categories and 0xfurai's agents copied into ~/.claude/agents."""
    agents = Path.home() / ".claude" / "agents"
    shutil.copytree(FOLDERS["voltagent"], agents)
    shutil.copytree(FOLDERS["0xfurai"], agents / "0xfurai")
    return agents


def test_agents_list_shows_sources_and_overrides(user_collection, gsd) -> None:
    result = gsd("agents", "list", "--format", "json")
    assert result.code == 0
    rows = {row["name"]: row for row in json.loads(result.out)["agents"]}
    pro = rows["python-pro"]
    assert pro["source"] == "~/.claude/agents/02-language-specialists/python-pro.md"
    assert pro["overrides"] == "(bundled) python-pro.md" and pro["origin"] == "user"
    assert pro["aliases"] == ["voltagent-lang:python-pro"] and pro["tier"] == "full"
    assert rows["kafka-expert"]["aliases"] == ["0xfurai:kafka-expert"]
    assert rows["coder"]["overrides"] == "-"
    assert result.err.splitlines() == [
        "gsd: warning: ~/.claude/agents: 1 of 5 agent files skipped, 2 tool names unknown to "
        "gsd in 1 file, 1 with frontmatter that is not valid YAML (read leniently) "
        "(see `gsd agents check`)"
    ]
    text = gsd("agents", "list").out
    line = next(x for x in text.splitlines() if x.startswith("python-pro "))
    assert line.split()[-2:] == ["(bundled)", "python-pro.md"]


def test_agents_check_names_every_file(user_collection, gsd) -> None:
    result = gsd("agents", "check")
    assert result.code == 1  # a file was skipped
    out = result.out
    assert "~/.claude/agents (user): 4 loaded, 1 skipped, 0 ignored" in out
    assert (
        "  skipped  0xfurai/sqs-expert.md: frontmatter must start at byte 0, found '---' on line 2"
    ) in out
    assert (
        "  loaded   02-language-specialists/python-pro.md: python-pro (also "
        "voltagent-lang:python-pro), full, runner claude, 6 tools, overrides (bundled) "
        "python-pro.md"
    ) in out
    assert "note: tools unknown to gsd (kept, they grant nothing): chrome-mcp, computer-use" in out
    data = json.loads(gsd("agents", "check", "--format", "json").out)
    user = next(f for f in data["folders"] if f["origin"] == "user" and f["exists"])
    assert (user["loaded"], user["skipped"]) == (4, 1)
    (user_collection / "0xfurai" / "sqs-expert.md").unlink()
    assert gsd("agents", "check").code == 0


def test_a_narrower_user_agent_replacing_a_bundled_one_is_said(git_project, gsd) -> None:
    agents = Path.home() / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "python-pro.md").write_text("---\nname: python-pro\ntools: Read, Grep\n---\nx\n")
    err = gsd("agents", "list").err
    assert err == (
        "gsd: warning: ~/.claude/agents: python-pro replaces the bundled full agent "
        "with a read-only one (see `gsd agents check`)\n"
    )


def test_sync_lists_a_shadowed_agent_by_its_alias(git_project, gsd) -> None:
    for ns in ("team-a", "team-b"):
        git_project.write(
            f"agents/{ns}/reviewer.md",
            f"---\nname: reviewer\ndescription: {ns}\ntools: Read\n---\nx\n",
        )
    assert gsd("agents", "sync").code == 0
    roster = (git_project.planning / "available_agents.md").read_text()
    assert "- **reviewer**: team-b" in roster and "- **team-a:reviewer**: team-a" in roster


def test_dry_run_names_the_agent_file_and_a_skipped_one(
    user_collection, gsd, runners_on_path
) -> None:
    project = user_collection.parents[2] / "repo"
    tasks = "\n".join(
        [
            auto_task("Task 1: typed", attrs=' specialist="voltagent-lang:python-pro"'),
            auto_task("Task 2: queues", attrs=' specialist="sqs-expert"'),
            auto_task("Task 3: streams", attrs=' specialist="0xfurai:kafka-expert"'),
        ]
    )
    (project / ".planning" / "available_agents.md").write_text(
        "- **voltagent-lang:python-pro**: x\n- **sqs-expert**: x\n- **0xfurai:kafka-expert**: x\n"
    )
    plan = project / ".planning" / "phases" / "01-alpha" / "01-01-PLAN.md"
    plan.parent.mkdir(parents=True, exist_ok=True)
    from tests.conftest import plan_text

    plan.write_text(plan_text(phase="01-alpha", plan="01", tasks=tasks))
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "plans")
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    typed, queues, streams = json.loads(result.out)["tasks"]
    assert typed["agent"] == "python-pro" and typed["fallback_reason"] is None
    assert typed["agent_source"] == str(
        user_collection / "02-language-specialists" / "python-pro.md"
    )
    assert queues["agent"] == "gsd-executor"
    assert queues["fallback_reason"] == (
        "its agent file was skipped: ~/.claude/agents/0xfurai/sqs-expert.md: frontmatter must "
        "start at byte 0, found '---' on line 2 (see `gsd agents check`)"
    )
    assert streams["agent"] == "kafka-expert" and streams["tier"] == "full"
    text = gsd("execute-phase", "1", "--dry-run").out
    assert "  agent file: ~/.claude/agents/02-language-specialists/python-pro.md" in text
    assert "  agent file: (bundled) gsd-executor.md" in text


def test_the_collections_benchmark_reads_these_files() -> None:
    import subprocess
    import sys

    bench = Path(__file__).parents[1] / "bench" / "agent_collections.py"
    done = subprocess.run(
        [sys.executable, str(bench), *map(str, FOLDERS.values())],
        capture_output=True,
        text=True,
        check=True,
    )
    total = done.stdout.splitlines()[-1].split()
    assert total[:5] == ["total", "16", "15", "1", "0"]  # files, loaded, skipped, ignored


def test_an_alias_runs_the_file_it_names_not_the_one_that_took_its_name(
    user_collection, gsd
) -> None:
    """The roster names `voltagent-lang:python-pro` (the user's file); the project's own
    read-only `python-pro.md` took the plain name. What runs is the file the dry run
    names, with its tier: the user's full-tier agent."""
    from gsd.io.plans.project import Project

    project = user_collection.parents[2] / "repo"
    (project / "agents").mkdir()
    (project / "agents" / "python-pro.md").write_text(
        "---\nname: python-pro\ntools: Read, Grep\n---\nReviews only.\n"
    )
    (project / ".planning").mkdir(exist_ok=True)
    (project / ".planning" / "available_agents.md").write_text(
        "- **voltagent-lang:python-pro**: Python\n"
    )
    plan = project / ".planning/phases/01-alpha/01-01-PLAN.md"
    plan.parent.mkdir(parents=True)
    plan.write_text(plan_text(tasks=auto_task(attrs=' specialist="voltagent-lang:python-pro"')))
    p = Project(project)
    dispatcher, _ = p.dispatcher()
    (dispatch,) = dispatcher.phase(p.phase_graph(p.phase("1")))
    runs = dispatcher.agent_for(dispatch)
    assert (
        dispatch.agent_source
        == runs.source
        == str(user_collection / "02-language-specialists" / "python-pro.md")
    )
    assert runs.tier == dispatch.tier == "full"


def test_a_codex_file_with_a_key_gsd_keeps_for_itself_loads(tmp_path: Path) -> None:
    """`source` and `notes` are gsd's own fields: a TOML agent that has such keys loads
    (before, the clash was a TypeError that ended every command scanning the folder)."""
    from gsd.formats.agents import parse_codex_agent

    text = (
        'name = "reviewer"\ndescription = "Reviews"\nsource = "mine"\nnotes = "x"\n'
        'developer_instructions = "Review it."\n'
    )
    agent = parse_codex_agent(text, str(tmp_path / "reviewer.toml"), "reviewer")
    assert agent.source == str(tmp_path / "reviewer.toml") and agent.runner == "codex"


VOLTAGENT_PRO = (
    "---\nname: python-pro\ndescription: Python expert\n"
    "tools: Read, Write, Edit, Bash, Glob, Grep\n---\nYou are a Python pro.\n"
)


def test_a_namespaced_agent_from_a_subfolder_resolves_after_sync(
    git_project, gsd, runners_on_path
) -> None:
    """`.claude/agents/voltagent-lang/python-pro.md` answers to `voltagent-lang:python-pro`:
    `gsd agents sync` lists the alias, so validate, resolve and the dry run accept it."""
    from gsd.core.resolve import resolve_specialist
    from gsd.formats.planning import roster
    from gsd.io.plans.project import Project

    agent_file = git_project.write(".claude/agents/voltagent-lang/python-pro.md", VOLTAGENT_PRO)
    git_project.plan("01-01", tasks=auto_task(attrs=' specialist="voltagent-lang:python-pro"'))
    assert gsd("agents", "sync").code == 0
    text = (git_project.planning / "available_agents.md").read_text()
    assert "- **python-pro**: Python expert\n" in text
    assert text.endswith("\n- **voltagent-lang:python-pro**: python-pro\n")
    names = roster.parse(text)
    assert "voltagent-lang:python-pro" in names and "The" not in " ".join(names)
    agents, _ = Project(git_project.root).agents()
    resolved = resolve_specialist("voltagent-lang:python-pro", roster=names, agents=agents)
    assert (resolved.agent, resolved.fallback_reason) == ("voltagent-lang:python-pro", None)
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    assert "GSD021" not in gsd("validate").out
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    (task,) = json.loads(result.out)["tasks"]
    assert (task["agent"], task["fallback_reason"]) == ("python-pro", None)
    assert (task["agent_source"], task["tier"]) == (str(agent_file), "full")
