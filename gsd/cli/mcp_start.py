"""`gsd mcp`'s first answers, before the MCP SDK is imported.

The SDK takes most of a second to import (about 600 modules), and an agent CLI waits
for `initialize` and `tools/list` before it goes on. Both answers depend only on the
SDK's version, gsd's tools and the protocol version the client asks for, so they are
recorded from the SDK itself (`record`, into mcp_answers.json; tests/test_mcp.py checks
them against the installed SDK) and sent byte for byte as the SDK would send them.

Anything else - another request, a notification other than `initialized`, a line that
is not a plain JSON-RPC object, a protocol version or SDK version not recorded - hands
the connection to the SDK's own server: the lines read so far are replayed to it first
(`initialize` too, whose second answer is dropped), so from then on it serves exactly
as if it had read them itself. Standard library only until then (with `--allow-run`,
and gsd's check that the server is no agent's, gsd.cli.mcp_gate: which answers count).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gsd.core.errors import EXIT_OK, UsageError

ANSWERS = Path(__file__).with_name("mcp_answers.json")
# The SDK's packages whose versions the recorded answers belong to.
SDK_DISTRIBUTIONS = ("mcp", "mcp_types")
_CLIENT_INFO = {"name", "version", "title"}
_CAPABILITIES = {"roots", "sampling", "elicitation", "experimental", "tasks"}
PLAIN_ANSWERS, RUN_ANSWERS = "answers", "answers_run"  # `gsd mcp`, `gsd mcp --allow-run`
_END = b"\0gsd-mcp-end\n"  # written by gsd after the SDK's server returned: never JSON


def main(allow_run: bool = False) -> int:
    """`gsd mcp` (`gsd.cli.entry` calls it without Click, as the Click command does).
    With `allow_run` the tools (and the instructions) are those recorded for it, unless
    the server is an agent's (gsd.cli.mcp_gate): then the plain ones."""
    from gsd.cli.mcp_gate import serves_run_tools

    run = serves_run_tools(allow_run)
    answers = recorded(RUN_ANSWERS if run else PLAIN_ANSWERS)  # None: not the SDK's
    if answers is None:
        sdk_serve(allow_run)
    else:  # initialize and tools/list answered at once, the SDK imported after
        serve(answers, lambda: sdk_serve(allow_run))
    return EXIT_OK


def sdk_serve(allow_run: bool = False) -> None:
    """The MCP SDK's server on stdio, until the client leaves."""
    try:
        from gsd.cli.mcp_server import serve as serve_sdk
    except ImportError as exc:  # the SDK missing, or a 1.x one without MCPServer
        if not (exc.name or "").startswith("mcp"):
            raise
        raise UsageError(
            f"gsd mcp needs the MCP Python SDK 2.x ({exc.name} cannot be imported)",
            hint="install it with pip install 'gsd-plans[mcp]'",
        ) from None
    serve_sdk(allow_run)


def installed_version(package: str) -> str | None:
    """The version of the distribution `package` is imported from (its dist-info beside
    it, on the first sys.path entry that has the package), without importing it."""
    for entry in sys.path:
        folder = Path(entry or ".")
        if not (folder / package / "__init__.py").is_file():
            continue
        prefix, suffix = f"{package}-", ".dist-info"
        try:
            names = os.listdir(folder)
        except OSError:
            return None
        found = [
            n[len(prefix) : -len(suffix)]
            for n in names
            if n.startswith(prefix) and n.endswith(suffix)
        ]
        return found[0] if len(found) == 1 else None
    return None


def recorded(key: str = "answers") -> dict[str, dict[str, str]] | None:
    """The recorded answers by protocol version, when they are the installed SDK's and
    this gsd's; None otherwise (then the SDK answers everything, as it always could)."""
    from gsd import __version__

    try:
        data = json.loads(ANSWERS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("gsd") != __version__:
        return None
    if any(installed_version(p) != data.get(p) for p in SDK_DISTRIBUTIONS):
        return None
    answers: dict[str, dict[str, str]] = data.get(key, {})
    return answers


def _plain_id(value: object) -> bool:
    """An id gsd writes back exactly as the SDK would: a whole number or a plain string."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.isascii() and value.isprintable() and '"' not in value


def _message(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC 2.0 message gsd may read itself, or None for the SDK to read."""
    if b"\r" in line.rstrip(b"\r\n"):  # the SDK splits lines at \r too
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if not set(message) <= {"jsonrpc", "id", "method", "params"}:
        return None
    if "id" in message and not _plain_id(message["id"]):
        return None
    return message


def _initialize(message: dict[str, Any], answers: dict[str, dict[str, str]]) -> str | None:
    """The recorded answer to an `initialize` the SDK would accept, else None."""
    params = message.get("params")
    if message.get("method") != "initialize" or "id" not in message:
        return None
    if not isinstance(params, dict) or set(params) != {
        "protocolVersion",
        "capabilities",
        "clientInfo",
    }:
        return None
    info, capabilities = params["clientInfo"], params["capabilities"]
    if not isinstance(info, dict) or not set(info) <= _CLIENT_INFO:
        return None
    if not all(isinstance(info.get(k), str) for k in ("name", "version")):
        return None
    if not all(isinstance(v, str) for v in info.values()):
        return None
    if not isinstance(capabilities, dict) or not set(capabilities) <= _CAPABILITIES:
        return None
    if not all(_flags(v) for v in capabilities.values()):
        return None
    recorded = answers.get(params["protocolVersion"])
    return None if recorded is None else recorded["initialize"]


def _flags(value: object) -> bool:
    """A capability as clients send them: an object of objects and booleans."""
    return isinstance(value, dict) and all(
        isinstance(v, bool) or (isinstance(v, dict) and not v) for v in value.values()
    )


def _answer(message: dict[str, Any], result: str) -> bytes:
    ident = json.dumps(message["id"])
    return f'{{"jsonrpc":"2.0","id":{ident},"result":{result}}}\n'.encode()


def serve(answers: dict[str, dict[str, str]], sdk_serve: Callable[[], None]) -> None:
    """Answer `initialize` and `tools/list` on stdin and stdout from `answers`; hand the
    connection to `sdk_serve` (the SDK's stdio server) at the first other message."""
    read: list[bytes] = []  # what the SDK is to read first, in order
    buffer = b""
    initialize: dict[str, Any] | None = None  # the request answered
    while True:
        newline = buffer.find(b"\n")
        if newline < 0:
            chunk = os.read(0, 65536)
            if not chunk and not buffer:
                return  # the client left: the SDK would have nothing to answer either
            if not chunk:
                break  # a last line without its newline: the SDK's to read
            buffer += chunk
            continue
        line, buffer = buffer[: newline + 1], buffer[newline + 1 :]
        message = _message(line)
        if message is None:
            answer = None
        elif initialize is None:
            answer = _initialize(message, answers)
            initialize = message if answer is not None else None
        elif message == {"jsonrpc": "2.0", "method": "notifications/initialized"}:
            read.append(line)
            continue
        elif _listing(message):
            answer = answers[initialize["params"]["protocolVersion"]]["tools/list"]
        else:
            answer = None
        if answer is None or message is None:
            read.append(line)
            break
        if message is initialize:
            read.append(line)
        _write_all(1, _answer(message, answer))
    sent = None
    if initialize is not None:
        sent = _answer(initialize, answers[initialize["params"]["protocolVersion"]]["initialize"])
    hand_over(b"".join(read) + buffer, sent, sdk_serve)


def _listing(message: dict[str, Any]) -> bool:
    return (
        message.get("method") == "tools/list"
        and "id" in message
        and message.get("params", {}) == {}
    )


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def hand_over(replay: bytes, sent: bytes | None, sdk_serve: Callable[[], None]) -> None:
    """Run `sdk_serve` on pipes: it reads `replay`, then the rest of stdin; what it
    writes goes to stdout, less its answer to the replayed `initialize` (`sent` already
    went: the SDK's own answer is checked against it and dropped)."""
    client_in, client_out = os.dup(0), os.dup(1)
    sdk_in, feed = os.pipe()
    drain, sdk_out = os.pipe()
    os.dup2(sdk_in, 0)
    os.dup2(sdk_out, 1)
    os.close(sdk_in)
    feeder = threading.Thread(target=_feed, args=(replay, client_in, feed), daemon=True)
    relay = threading.Thread(target=_relay, args=(drain, client_out, sent), daemon=True)
    feeder.start()
    relay.start()
    try:
        sdk_serve()
    finally:
        _write_all(sdk_out, _END)
        relay.join()
        os.dup2(client_in, 0)
        os.dup2(client_out, 1)


def _feed(replay: bytes, client_in: int, feed: int) -> None:
    """`replay`, then everything the client sends, into the SDK's stdin; EOF at the end."""
    try:
        _write_all(feed, replay)
        while chunk := os.read(client_in, 65536):
            _write_all(feed, chunk)
    except OSError:
        pass  # the SDK's server is gone
    finally:
        os.close(feed)


def _relay(drain: int, client_out: int, sent: bytes | None) -> None:
    """The SDK's output to the client, less its answer to the replayed `initialize`."""
    pending = b""
    while True:
        chunk = os.read(drain, 65536)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            line += b"\n"
            if line == _END:
                return
            if sent is not None and _same_response(line, sent):
                if line != sent:
                    sys.stderr.write(
                        "gsd mcp: the MCP SDK answered initialize unlike gsd's recorded "
                        "answer (gsd/cli/mcp_answers.json); record it again\n"
                    )
                sent = None
                continue
            _write_all(client_out, line)


def _same_response(line: bytes, sent: bytes) -> bool:
    """Is `line` a response to the request `sent` answered (the same id)?"""
    try:
        got, ours = json.loads(line), json.loads(sent)
    except ValueError:
        return False
    return isinstance(got, dict) and "method" not in got and got.get("id") == ours["id"]


def record() -> dict[str, Any]:
    """What the installed SDK answers to `initialize` and `tools/list` at each protocol
    version of the handshake, from its own server in a child process, without and with
    `--allow-run`: mcp_answers.json.
    (Write it with: python -c 'from gsd.cli import mcp_start; mcp_start.write()'.)"""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from gsd import __version__

    found: dict[str, Any] = {}
    for key, allow_run in ((PLAIN_ANSWERS, False), (RUN_ANSWERS, True)):
        code = f"from gsd.cli.mcp_server import serve; serve({allow_run})"
        found[key] = {v: _record_one(code, v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
    versions = {p: installed_version(p) for p in SDK_DISTRIBUTIONS}
    return {"gsd": __version__, **versions, **found}


def _record_one(code: str, version: str) -> dict[str, str]:
    """The answers of the server `code` starts to `initialize` at `version` and
    `tools/list`; started where no gsd run is live, without an agent's GSD_TASK."""
    import subprocess
    import tempfile

    from gsd.cli.mcp_gate import UNDER_AGENT

    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "gsd-record", "version": "0"},
    }
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    env = {k: v for k, v in os.environ.items() if k != UNDER_AGENT}
    # stdin stays open until both answers are in: at its end the SDK stops answering
    with (
        tempfile.TemporaryDirectory() as nowhere,
        subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=nowhere,
            env=env,
        ) as server,
    ):
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
        server.stdin.flush()
        out = [server.stdout.readline().decode().rstrip("\n") for _ in range(2)]
        server.stdin.close()
    return {"initialize": _result_text(out[0], 0), "tools/list": _result_text(out[1], 1)}


def _result_text(line: str, ident: int) -> str:
    prefix = f'{{"jsonrpc":"2.0","id":{ident},"result":'
    if not (line.startswith(prefix) and line.endswith("}")):
        raise ValueError(f"unexpected answer from the MCP SDK: {line[:200]}")
    return line[len(prefix) : -1]


def write() -> None:
    """Record the answers again into mcp_answers.json (after an SDK or a tool changed)."""
    ANSWERS.write_text(json.dumps(record(), indent=1, ensure_ascii=False) + "\n", "utf-8")
