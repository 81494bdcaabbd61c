"""The Gemini API as gemini-cli 0.61.0 uses it.

`POST /v1beta/models/M:streamGenerateContent?alt=sse`: the agent loop, answered as SSE
`data:` chunks of GenerateContentResponse (one `functionCall` part or the final text,
`finishReason`, `usageMetadata`). `POST .../M:generateContent`: the CLI's side calls
(the router's classifier, the next-speaker and loop checks), each asking for JSON by a
`responseJsonSchema`: answered with an object that fits the schema and usage (0, 0).
`POST .../M:countTokens`: a count. The turn is the number of `functionCall` parts
already in `contents`, so retries never shift it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.modelserver.scenario import Scenario, Step
from tests.modelserver.wire import Opening, Reply, absolute, cwd_in, opening, text_of

# What gemini-cli's side calls are answered (their schemas, in its bundle): the
# classifier picks "flash" (or a low complexity score), the next speaker is the user,
# a loop check is sure there is no loop.
_CHOICES = {"model_choice": "flash", "next_speaker": "user"}
_NUMBERS = {"complexity_score": 10, "unproductive_state_confidence": 0.0}


def configure(home: Path, url: str) -> dict[str, str]:
    """Point gemini at `url` with a throwaway `home`: the API-key auth chosen in
    `~/.gemini/settings.json` (without it headless gemini exits 41; what else the file
    holds is kept), the base URL and a key in the environment."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    kept = json.loads(settings.read_text()) if settings.is_file() else {}  # mcpServers...
    kept["security"] = {**kept.get("security", {}), "auth": {"selectedType": "gemini-api-key"}}
    settings.write_text(json.dumps(kept))
    return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "test-key"}


def calls(step: Step, cwd: str, offered: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The function calls (name, args) that carry out `step` with gemini's own tools."""
    path = absolute(cwd, step.path)
    if step.kind == "write":
        return [("write_file", {"file_path": path, "content": step.content})]
    if step.kind == "edit":
        change = {"file_path": path, "old_string": step.old, "new_string": step.content}
        return [("replace", {**change, "instruction": "make the change"})]
    if step.kind == "read":
        return [("read_file", {"file_path": path})]
    if step.kind == "shell":
        return [("run_shell_command", {"command": step.command})]
    if step.kind == "delegate":  # 0.61.0: one `invoke_agent` tool names the sub-agent
        return [("invoke_agent", {"agent_name": "generalist", "prompt": step.content})]
    return [(mcp_name(step.tool, offered), dict(step.args))]


def mcp_name(tool: str, offered: set[str]) -> str:
    """The name gemini gave an MCP tool (`mcp_<server>_<tool>` in 0.61.0, the bare name
    in older versions): the offered name ending in the tool's, else the bare one."""
    found = [t for t in sorted(offered) if t == tool or t.endswith(f"_{tool}")]
    return found[0] if found else tool


def conversation(path: str, body: Any) -> Opening | None:
    """The agent loop's conversation this request belongs to; None for a side request
    (the classifier, the next-speaker and loop checks, a count)."""
    if not isinstance(body, dict) or ":streamGenerateContent" not in path:
        return None
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    return opening(contents, lambda c: c.get("role") == "model", body.get("systemInstruction"))


def reply(path: str, body: Any, scenario: Scenario) -> Reply:
    if not isinstance(body, dict):
        return Reply(body={"error": {"code": 400, "message": "no body"}}, status=400)
    if ":countTokens" in path:
        return Reply(body={"totalTokens": len(json.dumps(body)) // 4})
    if ":streamGenerateContent" not in path:
        return _side(body)
    offered = {
        f.get("name", "")
        for tool in body.get("tools") or []
        for f in (tool.get("functionDeclarations") or [] if isinstance(tool, dict) else [])
        if isinstance(f, dict)
    }
    contents = body.get("contents") or []
    cwd = _workspace(text_of(contents)) or cwd_in(text_of(body.get("systemInstruction")))
    script = [c for step in scenario.steps for c in calls(step, cwd, offered)]
    turn = sum(len(_calls_in(c)) for c in contents if isinstance(c, dict))
    if turn < len(script):
        name, args = script[turn]
        part: dict[str, Any] = {
            "functionCall": {"name": name, "args": args, "id": f"call_{turn:04d}"}
        }
    else:
        part = {"text": scenario.final}
    chunk = _response([part], scenario.usage)
    final = turn >= len(script)
    return Reply(events=[(None, chunk)], usage=scenario.usage, turn=turn, final=final)


# gemini-cli 0.61.0's session context: "- **Workspace Directories:**\n  - /x"
_WORKSPACE_RE = re.compile(r"Workspace Directories:\*\*\n\s*- (\S+)")


def _workspace(text: str) -> str:
    match = _WORKSPACE_RE.search(text)
    return match.group(1) if match else cwd_in(text)


def _side(body: dict[str, Any]) -> Reply:
    config = body.get("generationConfig")
    schema = config.get("responseJsonSchema") if isinstance(config, dict) else None
    answer = json.dumps(_fit(schema)) if isinstance(schema, dict) else "ok"
    return Reply(body=_response([{"text": answer}], (0, 0)), usage=(0, 0))


def _fit(schema: dict[str, Any]) -> dict[str, Any]:
    """An object with every property `schema` names: the side call's expected answer."""
    found: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kind = str(spec.get("type", "")).lower() if isinstance(spec, dict) else ""
        if name in _CHOICES:
            found[name] = _CHOICES[name]
        elif name in _NUMBERS or kind in ("number", "integer"):
            found[name] = _NUMBERS.get(name, 0)
        elif kind == "boolean":
            found[name] = False
        elif kind == "array":
            found[name] = []
        else:
            found[name] = "ok"
    return found


def _response(parts: list[dict[str, Any]], usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": usage[0] + usage[1],
        },
        "modelVersion": "gemini-2.5-flash",
    }


def _calls_in(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts") if content.get("role") == "model" else None
    return [p["functionCall"] for p in parts or [] if isinstance(p, dict) and "functionCall" in p]


def tool_results(bodies: list[Any]) -> dict[str, str]:
    """Call id (`call_0000` is the scenario's first call) -> the functionResponse gemini
    sent back for it, its `response` object as JSON text."""
    found: dict[str, str] = {}
    for part in _parts(bodies):
        answer = part.get("functionResponse")
        if isinstance(answer, dict):
            found[str(answer.get("id"))] = json.dumps(answer.get("response"))
    return found


def command_results(bodies: list[Any]) -> dict[str, str]:
    """Each run_shell_command the model asked for -> the functionResponse sent back."""
    asked: dict[str, str] = {}
    for part in _parts(bodies):
        call = part.get("functionCall")
        if isinstance(call, dict) and call.get("name") == "run_shell_command":
            asked[str(call.get("id"))] = str((call.get("args") or {}).get("command"))
    results = tool_results(bodies)
    return {command: results.get(ident, "") for ident, command in asked.items()}


def _parts(bodies: list[Any]) -> list[dict[str, Any]]:
    """Every part of every content of the agent loop's requests."""
    found: list[dict[str, Any]] = []
    for body in bodies:
        contents = body.get("contents") if isinstance(body, dict) else None
        for content in contents if isinstance(contents, list) else []:
            parts = content.get("parts") if isinstance(content, dict) else None
            found += [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    return found
