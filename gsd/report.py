"""`gsd report`: a run's timeline and its totals per agent and per plan, from the logs
in .planning/logs/ (and an older .planning/execution-log.jsonl)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# events shown as they are in the timeline (`result` rows also feed the totals)
TIMELINE = frozenset({
    "run-start", "wave-start", "spawn", "rollback", "retry", "fallback", "commit", "merge",
    "plan-complete", "checkpoint-paused", "wave-end", "run-end",
})  # fmt: skip


def build(events: Iterable[dict[str, Any]], last_run_only: bool = True) -> dict[str, Any]:
    """Timeline rows and totals; by default only the events of the last run."""
    events = list(events)
    if last_run_only:
        starts = [i for i, e in enumerate(events) if e.get("event") == "run-start"]
        events = events[starts[-1] :] if starts else events
    timeline = []
    agents: dict[str, dict[str, Any]] = {}
    plans: dict[str, dict[str, Any]] = {}
    for e in events:
        kind = e.get("event")
        if kind in TIMELINE:
            timeline.append(_row(e))
        if kind != "result":
            continue
        timeline.append(_row(e))
        for key, table in ((str(e.get("agent", "?")), agents), (str(e.get("plan", "?")), plans)):
            row = table.setdefault(key, _empty())
            row["attempts"] += 1
            row["succeeded"] += bool(e.get("success"))
            row["failed"] += not e.get("success")
            row["seconds"] = round(row["seconds"] + float(e.get("duration_s") or 0), 1)
            for field in ("input_tokens", "output_tokens", "cost_usd"):
                value = e.get(field)
                if isinstance(value, (int, float)):
                    row[field] = round((row[field] or 0) + value, 6)
    retries = sum(1 for e in events if e.get("event") == "retry")
    return {
        "timeline": timeline,
        "retries": retries,
        "per_agent": [{"agent": k, **v} for k, v in agents.items()],
        "per_plan": [{"plan": k, **v} for k, v in plans.items()],
    }


def _empty() -> dict[str, Any]:
    return {"attempts": 0, "succeeded": 0, "failed": 0, "seconds": 0.0,
            "input_tokens": None, "output_tokens": None, "cost_usd": None}  # fmt: skip


def _row(e: dict[str, Any]) -> dict[str, Any]:
    kind = e.get("event")
    what = {
        "result": "ok" if e.get("success") else str(e.get("error_type")),
        "commit": str(e.get("commit") or "")[:7] or "nothing to commit",
        "merge": f"{e.get('branch', '')} {e.get('status', '')}".strip(),
        "wave-start": f"wave {e.get('wave', '')}: {', '.join(map(str, e.get('plans') or []))}",
        "wave-end": f"wave {e.get('wave', '')} done",
    }.get(str(kind), "")
    if kind == "result" and e.get("soft_success"):
        what = "soft success"
    return {
        "time": e.get("ts", ""), "event": kind, "plan": e.get("plan", ""),
        "task": e.get("task", ""), "agent": e.get("agent", ""),
        "seconds": e.get("duration_s", ""), "outcome": what,
    }  # fmt: skip


def render(report: dict[str, Any], fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    from gsd.views import render_rows

    def table(rows: list[dict[str, Any]]) -> str:
        shown = [{k: ("not reported" if v is None else v) for k, v in r.items()} for r in rows]
        return render_rows(shown, fmt, "rows") if shown else "(none)\n"

    heading = "## {}" if fmt == "markdown" else "{}"
    return "\n".join(
        [
            heading.format("Timeline"), "", table(report["timeline"]),
            heading.format(f"Per agent (retries: {report['retries']})"), "",
            table(report["per_agent"]),
            heading.format("Per plan"), "", table(report["per_plan"]),
        ]
    )  # fmt: skip
