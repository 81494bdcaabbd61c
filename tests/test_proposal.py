"""The Proposal format, the `gates` settings and plan-first decisions (issue 24), as
units: what is read, what is refused and why, and what is gated."""

from __future__ import annotations

import pytest

from gsd.core.errors import InputError
from gsd.core.models import Plan, Task
from gsd.core.verdict import planfirst
from gsd.formats import settings
from gsd.formats.agents import Agent
from gsd.formats.proposal import Proposal, parse_proposal, render

pytestmark = pytest.mark.unit  # `make test-fast` runs these

GOOD = """Let me look first.

### Proposal
- Files:
  - `src/auth/login.py`: check the token's expiry
  - src/auth/*.py: tidy the imports
- Plan: add the check, then its test,
  in that order.
- Risks: none
"""


def test_a_proposal_is_read_with_its_files_plan_and_risks() -> None:
    said = parse_proposal(GOOD)
    assert said == Proposal(
        files=(
            ("src/auth/login.py", "check the token's expiry"),
            ("src/auth/*.py", "tidy the imports"),
        ),
        plan="add the check, then its test, in that order.",
        risks="none",
    )


def test_the_last_proposal_wins_and_a_quoted_format_is_not_read() -> None:
    quoted = "### Proposal\n- Files:\n  - `path/or/glob`: what\n- Plan: x\n\n"
    said = parse_proposal(quoted + GOOD)
    assert not isinstance(said, str) and said.paths == ("src/auth/login.py", "src/auth/*.py")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("I just did it.", "no `### Proposal` heading in the agent's answer (1 line; the last"),
        ("### Proposal\n- Plan: x\n", "the Proposal has no `- Files:` field"),
        ("### Proposal\n- Files: none\n- Plan: x\n", "lists no file"),
        ("### Proposal\n- Files:\n  - `a.py`: x\n", "the Proposal has no `- Plan:` paragraph"),
        ("### Proposal\n- Files:\n  - `/etc/passwd`: x\n- Plan: x\n", "is absolute"),
        ("### Proposal\n- Files:\n  - `../up.py`: x\n- Plan: x\n", "leaves the repository"),
    ],
)
def test_an_unusable_proposal_says_why(text: str, why: str) -> None:
    said = parse_proposal(text)
    assert isinstance(said, str) and why in said


def test_the_committed_file_reads_back_and_holds_agent_text_harmless() -> None:
    plan = Plan(".planning/phases/01-x/01-02-PLAN.md")
    plan.frontmatter = {"phase": "01-x", "plan": "02"}
    task = Task(index=3, type="auto", attrs={}, line=9, children=[])
    agent = Agent(name="sec", description="d", runner="claude", body="")
    hostile = "### Proposal\n- Files:\n  - `src/a.py`: why\x1b]0;owned\x07\n- Plan: ```evil\n"
    said = parse_proposal(hostile)
    assert not isinstance(said, str) and said.files == (("src/a.py", "why^[]0;owned^G"),)
    text = render(said, plan, task, agent)
    assert "\x1b" not in text and "\x07" not in text
    assert "gsd approve 01-02 --task 3" in text
    again = parse_proposal(text)
    assert again == said


def test_gates_settings_defaults_true_and_lists() -> None:
    assert settings.parse("{}").gates.when() is None
    assert settings.parse('{"gates": {"plan_first": true}}').gates.when() == {
        "domains": ("security", "database", "authentication")
    }
    picked = settings.parse('{"gates": {"plan_first": {"paths": ["db/*"]}, "approver": "lead"}}')
    assert picked.gates.when() == {"paths": ["db/*"]} and picked.gates.approver == "lead"


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ('{"gates": {"plan_first": {"domain": ["x"]}}}', "(did you mean domains?)"),
        ('{"gates": {"plan_first": "yes"}}', "`gates.plan_first` must be true, false"),
        ('{"gates": {"approver": "a b"}}', '`gates.approver` must be "human" or an agent'),
        ('{"gates": {"runner": "claud"}}', "(did you mean claude?)"),
    ],
)
def test_gates_settings_errors_are_one_line(config: str, said: str) -> None:
    with pytest.raises(InputError) as caught:
        settings.parse(config, "c.json")
    assert said in str(caught.value) and str(caught.value).startswith("c.json:1: `gates.")


def test_what_is_gated() -> None:
    defaults = settings.parse('{"gates": {"plan_first": true}}').gates.when()
    kw = {"files": ["src/a.py"]}
    assert planfirst.gated("true", None, specialist="x", **kw)
    assert not planfirst.gated(None, None, specialist="security-auditor", **kw)
    assert planfirst.gated(None, defaults, specialist="security-auditor", **kw)
    assert planfirst.gated(None, defaults, specialist="x", plan_domains=["database"], **kw)
    assert not planfirst.gated("false", defaults, specialist="security-auditor", **kw)
    assert not planfirst.gated(None, defaults, specialist="python-pro", **kw)


def test_outside_the_proposal() -> None:
    files = ["src/auth/*.py", "docs/", "`README.md`"]
    changed = ["src/auth/a.py", "docs/x/y.md", "README.md", "src/db.py", ".planning/logs/a.jsonl"]
    assert planfirst.outside_proposal(changed, files) == ["src/db.py"]
    assert planfirst.proposal_name("01-02", 3) == "01-02-T3-PROPOSAL.md"
