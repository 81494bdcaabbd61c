"""OpenAI's Responses API as codex 0.169.0 uses it: `POST /v1/responses` with the
conversation in `input`, answered as SSE (response.created, response.output_item.added
and .done per item, response.completed with the usage).

Codex offers its shell as `exec_command` (`{"cmd": ...}`), `apply_patch` only for models
whose metadata asks for it (never for the unknown model a test names: writes and edits
then go through the shell), an MCP server's tools as functions in a namespace
`mcp__<server>` (called with `"namespace": "mcp__gsd", "name": "status"`; a flat
`mcp__gsd__status` is "unsupported call"), and sub-agents as `spawn_agent` in the
`multi_agent_v1` namespace. A function call's result comes back as a
`function_call_output` item with the same `call_id`.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from tests.modelserver.scenario import Scenario, Step
from tests.modelserver.wire import Opening, Reply, absolute, cwd_in, opening, text_of

PROVIDER = "gsdtest"
KEY_VARIABLE = "GSDTEST_API_KEY"
MODEL = "gsd-test-model"

# A file edit without apply_patch: one replacement, the way `sed` cannot do safely.
_EDIT = (
    "import pathlib,sys; p=pathlib.Path(sys.argv[1]); "
    "p.write_text(p.read_text().replace(sys.argv[2], sys.argv[3], 1))"
)


def configure(home: Path, url: str) -> dict[str, str]:
    """Point codex at `url` (the server's root): `$CODEX_HOME/config.toml` under `home`
    naming a provider with the Responses wire API; returns the variables to add."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model_provider = "{PROVIDER}"\n'
        f'model = "{MODEL}"\n'
        "\n"
        f"[model_providers.{PROVIDER}]\n"
        'name = "gsd test server"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    return {"HOME": str(home), "CODEX_HOME": str(codex_home), KEY_VARIABLE: "sk-test"}


def _names(tools: list[Any], namespace: str = "") -> set[str]:
    """The tools offered, a namespace's as `namespace.tool` (`mcp__gsd.status`)."""
    found: set[str] = set()
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        name = str(tool.get("name", ""))
        found.add(f"{namespace}.{name}" if namespace else name)
        found |= _names(tool.get("tools") or [], name)
    return found


def _shell(command: str) -> tuple[str, dict[str, Any]]:
    return ("exec_command", {"cmd": command, "login": False, "yield_time_ms": 30000})


def calls(step: Step, cwd: str, offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The function calls (name, arguments) that carry out `step` with codex's tools."""
    path = absolute(cwd, step.path)
    if step.kind == "write":
        folder = shlex.quote(str(Path(path).parent))
        body = shlex.quote(step.content)
        return [_shell(f"mkdir -p {folder} && printf '%s' {body} > {shlex.quote(path)}")]
    if step.kind == "edit":
        argv = ["python3", "-c", _EDIT, path, step.old, step.content]
        return [_shell(shlex.join(argv))]
    if step.kind == "read":
        return [_shell(f"cat {shlex.quote(path)}")]
    if step.kind == "shell":
        return [_shell(step.command)]
    if step.kind == "delegate":
        return [("multi_agent_v1.spawn_agent", {"message": step.content})]
    name = next((t for t in offered if t.startswith("mcp__") and t.endswith(f".{step.tool}")), "")
    return [(name or f"mcp__gsd.{step.tool}", dict(step.args))]


def conversation(body: Any) -> Opening | None:
    """The agent loop's conversation this request belongs to; None for a side request
    (a title, a compaction: no shell offered)."""
    if not isinstance(body, dict) or "exec_command" not in _names(body.get("tools") or []):
        return None
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    return opening(items, _answered, body.get("instructions"))


def _answered(item: dict[str, Any]) -> bool:
    """The model's own item: a call, its reasoning, an assistant message."""
    return item.get("role") == "assistant" or item.get("type") in (
        "function_call",
        "custom_tool_call",
        "reasoning",
    )


def reply(body: Any, scenario: Scenario) -> Reply:
    if not isinstance(body, dict):
        return Reply(body={"error": "no body"}, status=400)
    tools = _names(body.get("tools") or [])
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    if "exec_command" not in tools:  # a title, a compaction: not the agent loop
        return Reply(events=_response([], (0, 0), "resp_side"), usage=(0, 0))
    cwd = cwd_in(text_of(items))
    script = [c for step in scenario.steps for c in calls(step, cwd, tools)]
    turn = sum(1 for i in items if i.get("type") in ("function_call", "custom_tool_call"))
    if turn < len(script):
        name, args = script[turn]
        namespace, _, short = name.rpartition(".")
        call: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{turn:04d}",
            "call_id": f"call_{turn:04d}",
            "name": short,
            "arguments": json.dumps(args),
        }
        if namespace:
            call["namespace"] = namespace
        output = [call]
    else:
        output = [
            {
                "type": "message",
                "id": f"msg_{turn:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": scenario.final, "annotations": []}],
            }
        ]
    return Reply(
        events=_response(output, scenario.usage, f"resp_{turn:04d}"),
        usage=scenario.usage,
        turn=turn,
        final=turn >= len(script),
    )


def _response(output: list[dict[str, Any]], usage: tuple[int, int], ident: str) -> list:
    if not output:
        output = [
            {
                "type": "message",
                "id": f"msg_{ident}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ]
    head = {"id": ident, "object": "response", "status": "in_progress", "output": []}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": head})
    ]
    for index, item in enumerate(output):
        for kind in ("response.output_item.added", "response.output_item.done"):
            events.append((kind, {"type": kind, "output_index": index, "item": item}))
    done = {
        **head,
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return events


def tool_results(log_bodies: list[Any]) -> dict[str, str]:
    """call_id -> the output codex sent back for that function call."""
    found: dict[str, str] = {}
    for body in log_bodies:
        items = body.get("input") if isinstance(body, dict) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") in (
                "function_call_output",
                "custom_tool_call_output",
            ):
                found[str(item.get("call_id"))] = text_of(item.get("output"))
    return found


def command_results(bodies: list[Any]) -> dict[str, str]:
    """Each shell command the model asked for (`exec_command`'s `cmd`) -> the output
    codex sent back for it."""
    asked: dict[str, str] = {}
    for body in bodies:
        items = body.get("input") if isinstance(body, dict) else None
        for item in items if isinstance(items, list) else []:
            if (
                isinstance(item, dict)
                and item.get("type") == "function_call"
                and item.get("name") == "exec_command"
            ):
                try:
                    args = json.loads(item.get("arguments") or "{}")
                except ValueError:
                    continue
                asked[str(item.get("call_id"))] = str(args.get("cmd"))
    results = tool_results(bodies)
    return {command: results.get(ident, "") for ident, command in asked.items()}
