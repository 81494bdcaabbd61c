"""A scripted model server on 127.0.0.1: the real claude, codex and gemini CLIs talk to it
as they would to their providers, and it answers from a Scenario.

Stdlib only. Each request is logged (path, JSON body, the usage the reply reported) so a
test can read the tool results a CLI sent back and the tokens it was told it used.
Which turn of the scenario to answer is read from the conversation the CLI sends (how
many tool calls it already holds), so retries and side requests never shift it.

One scenario serves every agent loop; a Script (tests/modelserver/routes.py, which says
how) gives each conversation its own, so agents on several CLIs share one server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.modelserver import anthropic, gemini, responses
from tests.modelserver.routes import Chosen, Router, Script
from tests.modelserver.scenario import Scenario
from tests.modelserver.wire import Opening, Reply


@dataclass
class Logged:
    method: str
    path: str
    body: Any
    usage: tuple[int, int] | None
    turn: int | None  # the scenario turn answered; None: a side request
    route: str | None = None  # a Script's route that answered ("" its default)
    call: int | None = None  # which call of that route (0: its first)


class ModelServer:
    """`with ModelServer(scenario) as server:` serves on `server.url` until the block ends;
    `ModelServer(Script(...))` gives each conversation the scenario of its route."""

    def __init__(self, scenario: Scenario | Script) -> None:
        self.script = scenario if isinstance(scenario, Script) else Script(default=scenario)
        self.scenario = self.script.default  # the single-scenario use's
        self.router = Router(self.script)
        self.misses: list[str] = []  # why a call got no scenario (one line each)
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # a hung reply lets go
        self._httpd.shutdown()
        self._httpd.server_close()

    def record(self, entry: Logged) -> None:
        with self._lock:
            self.log.append(entry)

    def tokens(self) -> tuple[int, int]:
        """Input and output tokens of every reply that reported usage."""
        with self._lock:
            used = [e.usage for e in self.log if e.usage is not None]
        return sum(u[0] for u in used), sum(u[1] for u in used)

    def turns(self) -> int:
        """How many scenario turns were answered (the highest turn + 1)."""
        with self._lock:
            done = [e.turn for e in self.log if e.turn is not None]
        return max(done) + 1 if done else 0

    def calls(self, route: str) -> list[list[Logged]]:
        """The logged requests of each call a route answered, its first call first."""
        with self._lock:
            mine = [e for e in self.log if e.route == route and e.call is not None]
        count = max((e.call or 0 for e in mine), default=-1) + 1
        return [[e for e in mine if e.call == n] for n in range(count)]

    def prompts(self, route: str) -> list[str]:
        """What each call a route answered was asked, its first call first: its system
        prompt and its opening messages (the prompt gsd gave the agent)."""
        found = [conversation(call[0].path, call[0].body)[1] for call in self.calls(route)]
        return [opened.text if opened else "" for opened in found]

    def answer(self, method: str, path: str, body: Any) -> Reply:
        return self._answer(method, path, body)[0]

    def _answer(self, method: str, path: str, body: Any) -> tuple[Reply, Chosen | None]:
        cli, found = conversation(path, body)
        if not cli:
            return Reply(body={}, status=200 if method == "HEAD" else 404), None
        chosen = self._choose(cli, found)
        return self._reply(chosen, lambda scenario: _REPLY[cli](path, body, scenario))

    def _choose(self, cli: str, found: Opening | None) -> Chosen | None:
        """The scenario of this request's conversation; None for a side request (or
        with one scenario for all: nothing to choose)."""
        if found is None or not self.script.routes:
            return None
        chosen = self.router.choose(cli, found)
        if chosen.scenario is None:
            with self._lock:
                self.misses.append(chosen.miss)
        return chosen

    def _reply(
        self, chosen: Chosen | None, build: Callable[[Scenario], Reply]
    ) -> tuple[Reply, Chosen | None]:
        """The reply of the chosen scenario (with nothing chosen, the one scenario's; a
        side request uses none), its last turn ended as the scenario says; or an HTTP
        400 saying why no scenario was left."""
        if chosen is not None and chosen.scenario is None:
            return _error(400, chosen.miss), chosen
        scenario = chosen.scenario if chosen else (self.script.default or _SIDE)
        reply = build(scenario)
        if not reply.final or scenario.ending == "answer":
            return reply, chosen
        if scenario.ending == "hang":  # held until the server closes
            return replace(_error(503, "the scripted model hung", reply.turn), held=True), chosen
        return _error(400, "the scripted model refuses (its ending: error)", reply.turn), chosen


def _error(status: int, message: str, turn: int | None = None) -> Reply:
    """An HTTP error in the shape the three APIs share enough of (a type, a message)."""
    error = {"type": "invalid_request_error", "code": status, "message": message}
    return Reply(body={"type": "error", "error": error}, status=status, turn=turn)


_SIDE = Scenario((), "ok")
_REPLY: dict[str, Callable[[str, Any, Scenario], Reply]] = {
    "claude": lambda path, body, scenario: anthropic.reply(body, scenario),
    "codex": lambda path, body, scenario: responses.reply(body, scenario),
    "gemini": gemini.reply,
}


def conversation(path: str, body: Any) -> tuple[str, Opening | None]:
    """The CLI whose protocol `path` is ("" for none) and the agent loop conversation
    the request belongs to (None for a side request)."""
    if path.startswith("/v1/messages"):
        return "claude", anthropic.conversation(body)
    if path.startswith("/v1/responses"):
        return "codex", responses.conversation(body)
    if path.startswith("/v1beta/models/"):
        return "gemini", gemini.conversation(path, body)
    return "", None


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # the log is server.log

        def do_HEAD(self) -> None:  # noqa: N802
            self._serve("HEAD")

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            reply, chosen = server._answer(method, self.path, body)
            route, call = (chosen.route, chosen.call) if chosen else (None, None)
            server.record(Logged(method, self.path, body, reply.usage, reply.turn, route, call))
            if reply.held:
                server._closing.wait()
            try:
                self._send(method, reply)
            except OSError:  # the CLI is gone (gsd stopped it): nobody to answer
                self.close_connection = True

        def _send(self, method: str, reply: Reply) -> None:
            if reply.body is not None or not reply.events:
                data = json.dumps(reply.body or {}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(data)
                return
            # an SSE reply; `Connection: close` or claude waits after its first tool call
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in reply.events:
                head = f"event: {name}\n" if name else ""
                self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler
