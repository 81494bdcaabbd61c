"""The safety policy: the baseline, config.json's extra rules, each runner's form of them
and the dry run's policy line. tests/test_clis.py runs the same rules through the real
claude, gemini and codex."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.core.safety.policy import BASELINE, ShellRule, WriteRule, parse_rule, with_extra
from gsd.formats.agents import Agent
from gsd.formats.runners import claude, codex, gemini
from gsd.formats.runners.invocation import build_argv, policy_view, runner_files
from tests.conftest import auto_task, git
from tests.test_runners import TOOLS

pytestmark = pytest.mark.unit  # `make test-fast` runs these

EXTRA = ["shell:npm publish", "write:secrets/**"]


def agent(tier: str, runner: str) -> Agent:
    command = ["true"] if runner == "command" else None
    return Agent(name="p", tools=TOOLS[tier], runner=runner, command=command)  # type: ignore[arg-type]


# --- the baseline and config.json's rules ----------------------------------------------


def test_the_baseline_denies_what_the_issue_names() -> None:
    shell = {rule.words for rule in BASELINE.shell}
    named = [
        "git push",
        "git reset --hard",
        "git clean",
        "git rebase",
        "git filter-branch",
        "git commit --amend",
        "rm -rf /",
        "rm -rf ~",
        "rm -rf ..",
        "rm -fr /",
    ]
    for words in named:
        assert words in shell, words
    assert {rule.glob for rule in BASELINE.write} == {
        ".env*",
        "*.pem",
        "*.key",
        ".git/",
        ".planning/config.json",
    }
    assert all(rule.why for rule in (*BASELINE.shell, *BASELINE.write))


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        pytest.param("shell:npm publish", ShellRule("npm publish"), id="shell"),
        pytest.param("shell:  npm   publish ", ShellRule("npm publish"), id="spaces"),
        pytest.param("shell:curl http*", ShellRule("curl http", open_end=True), id="open-end"),
        pytest.param("shell:npm run test:unit", ShellRule("npm run test:unit"), id="colon"),
        pytest.param("write:secrets/**", WriteRule("secrets/**"), id="write-path"),
        pytest.param("write:*.p12", WriteRule("*.p12"), id="write-name"),
        pytest.param("write:vendor/", WriteRule("vendor/"), id="write-folder"),
    ],
)
def test_extra_rules(text: str, rule: ShellRule | WriteRule) -> None:
    parsed = parse_rule(text)
    assert parsed._replace(why="") == rule
    assert parse_rule(parsed.text()) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "npm publish",
        "shell:",
        "shell:-rf",
        "shell:a,b",
        "shell:x(y)",
        'shell:say "hi"',
        "shell:a * b",
        "shell:a\\b",
        "shell:a\nb",
        "write:",
        "write:/etc/passwd",
        "write:../x",
        "write:a b",
        "exec:ls",
        "Bash(git push:*)",
    ],
)
def test_extra_rules_every_cli_could_not_read_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rule(text)


def test_extra_rules_come_after_the_baseline() -> None:
    policy = with_extra(EXTRA)
    assert policy.shell[: len(BASELINE.shell)] == BASELINE.shell
    assert policy.shell[-1].words == "npm publish" and policy.write[-1].glob == "secrets/**"
    assert policy.extra == 2 and len(policy.texts()) == len(BASELINE.texts()) + 2


# --- each runner's form ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "shell", "write"),
    [
        ("read-only", False, False),
        ("read+shell", True, False),
        ("read+write", False, True),
        ("full", True, True),
    ],
)
def test_claude_deny_list_per_tier(tier: str, shell: bool, write: bool) -> None:
    """A tier without the shell or without write tools has them denied whole already."""
    policy = with_extra(EXTRA)
    for root in (False, True):
        argv = build_argv(agent(tier, "claude"), None, as_root=root, policy=policy)
        deny = argv[argv.index("--disallowedTools") + 1].split(",")
        for rule in (
            "Bash(git push:*)",
            "Bash(rm -rf /*)",
            "Bash(git commit --amend:*)",
            "Bash(npm publish:*)",
        ):
            assert (rule in deny) is shell, rule
        for rule in (
            "Edit(**/.env*)",
            "Edit(**/*.pem)",
            "Edit(**/*.key)",
            "Edit(**/.git)",
            "Edit(**/.git/**)",
            "Edit(.planning/config.json)",
            "Edit(secrets/**)",
        ):
            assert (rule in deny) is write, rule
        assert not any(rule.startswith("Write(") for rule in deny)  # claude ignores them
        assert len(deny) == len(set(deny))


def test_claude_rule_forms() -> None:
    """`Bash(words:*)` for words, `Bash(words*)` when the last word goes on; a name at any
    depth (`**/`), a path relative to the working folder, a folder and all under it."""
    policy = with_extra(
        ["shell:npm publish", "shell:curl http*", "write:*.p12", "write:build/out/"]
    )
    rules = claude.policy_rules(policy, "full")
    assert "Bash(npm publish:*)" in rules and "Bash(curl http*)" in rules
    assert rules[-3:] == ["Edit(**/*.p12)", "Edit(build/out)", "Edit(build/out/**)"]


def test_gemini_policy_file_holds_the_baseline_and_the_extra_rules() -> None:
    tomllib = pytest.importorskip("tomllib")

    policy = with_extra(EXTRA)
    for tier in TOOLS:
        worktree = Path("/w/.git/gsd/worktrees/01-01")
        files = runner_files(
            agent(tier, "gemini"), Path("/r/run"), policy=policy, worktree=worktree
        )
        rules = tomllib.loads(files.files["gemini-policy.toml"])["rule"]
        safety = [r for r in rules if "denyMessage" in r and r["toolName"] != "invoke_agent"]
        prefixes = {r.get("commandPrefix") for r in safety}
        shell, write = tier in ("read+shell", "full"), tier in ("read+write", "full")
        assert ({"git push", "git reset --hard", "npm publish"} <= prefixes) is shell
        paths = [r["argsPattern"] for r in safety if "argsPattern" in r]
        assert (len(paths) == len(policy.write)) is write or not write and not paths
        assert all(r["decision"] == "deny" and r["priority"] == 999 for r in safety)
        assert all(r["denyMessage"].startswith("gsd's safety policy: ") for r in safety)


@pytest.mark.parametrize(
    ("path", "denied"),
    [
        ("src/app.py", False),
        ("/w/.git/gsd/worktrees/01-01/src/app.py", False),
        (".env", True),
        ("config/.env.local", True),
        ("/anywhere/.env", True),
        ("certs/server.pem", True),
        ("id.key", True),
        ("/w/.git/gsd/worktrees/01-01/.env", True),
        (".git/config", True),
        (".git", True),
        ("/w/.git/gsd/worktrees/01-01/.git/HEAD", True),
        ("src/.gitignore", False),
        ("secrets/token", True),
        ("/w/.git/gsd/worktrees/01-01/secrets/a/b", True),
        ("notsecrets/x", False),
        (".planning/config.json", True),
        ("/w/.git/gsd/worktrees/01-01/.planning/config.json", True),
        (".planning/STATE.md", False),
    ],
)
def test_gemini_path_patterns(path: str, denied: bool) -> None:
    """The patterns as gemini applies them (`\\x00"file_path":...\\x00` in its stable
    JSON); Python's re reads these the way JavaScript does. The real engine decides the
    same in tests/test_clis.py."""
    import re

    policy = with_extra(EXTRA)
    matches = gemini.safety_matches(policy, "full", "/w/.git/gsd/worktrees/01-01")
    args = '{\x00"content":"x"\x00,\x00"file_path":' + json.dumps(path) + "\x00}"
    hit = [v for _tool, field, v, _why in matches if field == "argsPattern" and re.search(v, args)]
    assert bool(hit) is denied, hit


def test_gemini_patterns_have_no_quantified_group() -> None:
    """gemini-cli 0.61.0 refuses such a pattern as a possible ReDoS (`isSafeRegExp`)."""
    import re

    nested = re.compile(r"\([^)]*[*+?{].*\)[*+?{]")
    for _tool, _field, value, _why in gemini.safety_matches(with_extra(EXTRA), "full", "/w"):
        assert not nested.search(value), value


def test_codex_pins_the_network_off_where_its_sandbox_writes() -> None:
    for tier in TOOLS:
        argv = build_argv(agent(tier, "codex"), None)
        pinned = "sandbox_workspace_write.network_access=false" in argv
        assert pinned is (codex.SANDBOX[tier] == "workspace-write")


@pytest.mark.parametrize("runner", ["claude", "gemini", "codex", "command"])
def test_policy_view_names_the_mechanism(runner: str) -> None:
    view = policy_view(agent("full", runner), with_extra(EXTRA))
    assert view["baseline"] == len(BASELINE.texts()) and view["extra"] == 2
    assert view["mechanism"]
    if runner == "claude":
        assert "Bash(npm publish:*)" in view["rules"]
    if runner == "gemini":
        assert "commandPrefix = npm publish" in view["rules"]


# --- config.json and the dry run --------------------------------------------------------


@pytest.fixture
def project(git_project, runners_on_path: Path):
    git_project.plan("01-01", tasks=auto_task("Task 1: typed", attrs=' runner="gemini"'))
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return git_project


def test_the_dry_run_shows_the_policy_of_every_task(project, gsd) -> None:
    project.write(".planning/config.json", json.dumps({"policy": {"extra_deny": EXTRA}}))
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    (task,) = json.loads(result.out)["tasks"]
    assert task["policy"]["extra"] == 2 and task["policy_extra"] == EXTRA
    assert "commandPrefix = npm publish" in task["policy"]["rules"]
    text = gsd("execute-phase", "1", "--dry-run")
    line = next(row for row in text.out.splitlines() if row.strip().startswith("policy:"))
    assert "baseline rules + 2 from config.json; gemini --policy file" in line
    assert "commandPrefix = git push" in line


def test_a_bad_extra_rule_is_one_line(project, gsd) -> None:
    project.write(
        ".planning/config.json",
        '{\n  "policy": {\n    "extra_deny": [\n      "shell:npm publish",\n'
        '      "rm -rf"\n    ]\n  }\n}\n',
    )
    result = gsd("execute-phase", "1", "--dry-run")
    assert result.code != 0
    lines = result.err.strip().splitlines()
    assert len([x for x in lines if "extra_deny" in x]) == 1, result.err
    assert "config.json:5: `policy.extra_deny` must be a list of rules" in result.err
    assert "Traceback" not in result.err
