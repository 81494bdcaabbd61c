"""Anthropic's Messages API as claude-code 2.1.330 uses it: `POST /v1/messages?beta=true`,
answered as SSE (message_start, content_block_start/delta/stop, message_delta with the
usage, message_stop)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.modelserver.scenario import Scenario, Step
from tests.modelserver.wire import Opening, Reply, absolute, cwd_in, opening, text_of


def calls(step: Step, cwd: str, offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls (name, input) that carry out `step` with claude's own tools."""
    path = absolute(cwd, step.path)
    if step.kind == "write":
        return [("Write", {"file_path": path, "content": step.content})]
    if step.kind == "edit":  # claude's Edit refuses a file it has not Read first
        edit = {"file_path": path, "old_string": step.old, "new_string": step.content}
        return [("Read", {"file_path": path}), ("Edit", edit)]
    if step.kind == "read":
        return [("Read", {"file_path": path})]
    if step.kind == "shell":
        return [("Bash", {"command": step.command, "description": "run a command"})]
    if step.kind == "delegate":
        agent = "Agent" if "Agent" in offered else "Task"
        ask = {
            "description": "sub task",
            "prompt": step.content,
            "subagent_type": "general-purpose",
        }
        return [(agent, ask)]
    # claude offers MCP tools behind ToolSearch: the model loads the tool, then calls it
    # (always both, so the script does not change once the tool is loaded)
    name = f"mcp__gsd__{step.tool}"
    load = {"query": f"select:{name}", "max_results": 5}
    return [*([("ToolSearch", load)] if "ToolSearch" in offered else []), (name, dict(step.args))]


def conversation(body: Any) -> Opening | None:
    """The agent loop's conversation this request belongs to; None for a side request."""
    if not isinstance(body, dict) or not _agent_loop(body):
        return None
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    return opening(messages, lambda m: m.get("role") == "assistant", body.get("system"))


def _agent_loop(body: dict[str, Any]) -> bool:
    """A title, a quota probe offer no tool of the agent's: not the agent loop."""
    tools = {t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)}
    return bool({"Read", "Bash", "Write"} & tools)


def reply(body: Any, scenario: Scenario) -> Reply:
    if not isinstance(body, dict):
        return Reply(body={"error": "no body"}, status=400)
    tools = {t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)}
    messages = body.get("messages") or []
    if not _agent_loop(body):
        return Reply(
            events=_message([("text", "ok")], "end_turn", (0, 0), "msg_side"), usage=(0, 0)
        )
    cwd = cwd_in(text_of(body.get("system"))) or cwd_in(text_of(messages))
    script = [c for step in scenario.steps for c in calls(step, cwd, tools)]
    turn = sum(
        _tool_uses(m) for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
    )
    if turn < len(script):
        name, args = script[turn]
        blocks = [("tool_use", {"id": f"toolu_{turn:04d}", "name": name, "input": args})]
        stop = "tool_use"
    else:
        blocks, stop = [("text", scenario.final)], "end_turn"
    events = _message(blocks, stop, scenario.usage, f"msg_{turn:04d}")
    return Reply(events=events, usage=scenario.usage, turn=turn, final=turn >= len(script))


def _tool_uses(message: dict[str, Any]) -> int:
    """How many tool calls an assistant message holds (claude joins the messages of one
    id, so a turn is a tool call, not a message)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")


def _message(blocks: list[tuple[str, Any]], stop: str, usage: tuple[int, int], ident: str) -> list:
    start = {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": 0},
    }
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, (kind, value) in enumerate(blocks):
        if kind == "text":
            block: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": value}
        else:
            block = {"type": "tool_use", "id": value["id"], "name": value["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(value["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    end = {"stop_reason": stop, "stop_sequence": None}
    events += [
        (
            "message_delta",
            {"type": "message_delta", "delta": end, "usage": {"output_tokens": usage[1]}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def tool_results(log_bodies: list[Any]) -> dict[str, str]:
    """tool_use id -> the text of the tool_result the CLI sent back for it."""
    found: dict[str, str] = {}
    for body in log_bodies:
        for message in (body or {}).get("messages", []) if isinstance(body, dict) else []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found[str(block.get("tool_use_id"))] = text_of(block.get("content"))
    return found


def configure(home: Path, url: str) -> dict[str, str]:
    """claude needs only its base URL and a key; nothing under HOME."""
    return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-scripted"}


def command_results(bodies: list[Any]) -> dict[str, str]:
    """Each Bash command the model asked for -> the tool result claude sent back."""
    asked: dict[str, str] = {}
    for body in bodies:
        for message in body.get("messages", []) if isinstance(body, dict) else []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_use"
                    and block.get("name") == "Bash"
                ):
                    asked[str(block.get("id"))] = str((block.get("input") or {}).get("command"))
    results = tool_results(bodies)
    return {command: results.get(ident, "") for ident, command in asked.items()}
