"""Plan-first gates' decisions (issue 24): which task is gated, what its proposal is
called, what a change outside the approved proposal is. No I/O.

A task is gated when it says `plan-first="true"` (`"false"` opts it out), or when
config.json's `gates.plan_first` picks it as `review.when` picks a reviewed task
(`gsd.core.verdict.review.picks`, the one matcher).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from gsd.core.models import Plan
from gsd.core.safety import enforce, planguard
from gsd.core.verdict.review import picks

ATTRIBUTE = "plan-first"
VALUES = ("true", "false")
PROPOSAL_FAILED = "proposal-failed"  # step 1 wrote no usable proposal, or changed a file
SCOPE_VIOLATION = "scope-violation"  # step 3 changed a file outside the proposal's Files


def gated(
    attribute: str | None,
    when: Mapping[str, Sequence[str]] | None,
    *,
    specialist: str | None,
    files: Sequence[str],
    plan_domains: Sequence[str] = (),
) -> bool:
    """Whether a task runs plan-first: its own `plan-first=` first, else config's
    `gates.plan_first` (`when`: None when config gates nothing)."""
    if attribute is not None and attribute.strip().lower() in VALUES:
        return attribute.strip().lower() == "true"
    return when is not None and picks(when, specialist, files, plan_domains)


def domains_of(plan: Plan) -> list[str]:
    """The plan's own domains (its `domain` and `subsystem` fields), as a review reads them."""
    found = [plan.frontmatter.get(key) for key in ("domain", "subsystem")]
    return [d for d in found if isinstance(d, str)]


def proposal_name(plan_id: str, task: int) -> str:
    """`01-02-T3-PROPOSAL.md`: the proposal's file in the plan's phase folder."""
    return f"{plan_id}-T{task}-PROPOSAL.md"


def proposal_file(plan: Plan, task: int) -> str:
    """The proposal's path as git names it, beside the plan's file (its phase folder)."""
    return posixpath.join(posixpath.dirname(plan.path), proposal_name(plan.id, task))


def outside_proposal(changed: Iterable[str], files: Iterable[str]) -> list[str]:
    """The paths the work changed that no entry (path, folder or glob) of the approved
    proposal's Files covers; gsd's own bookkeeping in `.planning/` is not the agent's
    scope to keep (its own rules guard it)."""
    patterns = [planguard.normal_entry(f) for f in files if f.strip()]
    return [
        p
        for p in sorted(set(changed))
        if not enforce.in_scope(p, patterns) and not planguard.in_planning(p)
    ]
