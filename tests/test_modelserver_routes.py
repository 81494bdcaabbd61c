"""The scripted model server's routes (tests/modelserver/routes.py), over real HTTP with
requests shaped as each CLI sends them: which conversation gets which scenario, in
which order, and what a call no scenario is left for gets (an error, never an answer)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, answer, review_report, task_report, write
from tests.modelserver.server import ModelServer

pytestmark = pytest.mark.unit  # `make test-fast` runs these

CLAUDE_TOOLS = [{"name": "Read"}, {"name": "Bash"}, {"name": "Write"}]


def post(
    server: ModelServer, path: str, body: dict[str, Any], timeout: float = 10
) -> tuple[int, str]:
    request = urllib.request.Request(
        server.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def claude(prompt: str, *later: dict[str, Any], moved: bool = False) -> dict[str, Any]:
    """A claude request: the prompt, then `later` messages; `moved` puts the
    cache marker claude moves between requests on the prompt's block."""
    block: dict[str, Any] = {"type": "text", "text": f"Working directory: /w\n{prompt}"}
    if moved:
        block["cache_control"] = {"type": "ephemeral"}
    first = {"role": "user", "content": [block]}
    return {"system": "You are claude.", "tools": CLAUDE_TOOLS, "messages": [first, *later]}


def turn(ident: str) -> list[dict[str, Any]]:
    """The assistant's tool call `ident` and the user's result for it."""
    use = {"type": "tool_use", "id": ident, "name": "Write", "input": {}}
    result = {"type": "tool_result", "tool_use_id": ident, "content": "ok"}
    return [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]


def codex(prompt: str) -> dict[str, Any]:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}
    return {"instructions": "You are codex.", "tools": [{"name": "exec_command"}], "input": [item]}


def gemini(prompt: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}


GEMINI = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
AUTHOR = Scenario((write("a.txt", "a\n"),), task_report(created=("a.txt",)))


def test_each_call_of_a_route_gets_its_next_scenario_and_then_an_error() -> None:
    changes = review_report("changes", "a.txt:1 too short")
    script = Script(
        route("critic", "ROUTE-critic", answer(changes), answer(review_report("approve")))
    )
    with ModelServer(script) as server:
        first = post(server, "/v1/messages", claude("ROUTE-critic review"))
        second = post(server, "/v1/messages", claude("ROUTE-critic review"))
        third = post(server, "/v1/messages", claude("ROUTE-critic review"))
    assert first[0] == 200 and "Verdict: changes" in first[1] and "a.txt:1 too short" in first[1]
    assert second[0] == 200 and "Verdict: approve" in second[1]
    assert third[0] == 400
    miss = "route 'critic' has 2 scenario(s); this is its call 3 (claude)"
    assert server.misses == [miss] and miss in third[1]
    assert [len(call) for call in server.calls("critic")] == [1, 1, 1]


def test_a_conversation_keeps_its_scenario_through_its_turns() -> None:
    """Two conversations interleaved: each later request finds its own by its opening,
    though claude moved its cache marker onto the prompt meanwhile."""
    other = Scenario((write("b.txt", "b\n"), write("c.txt", "c\n")), task_report())
    script = Script(route("a", "ROUTE-a", AUTHOR), route("b", "ROUTE-b", other))
    with ModelServer(script) as server:
        a0 = post(server, "/v1/messages", claude("ROUTE-a go"))
        b0 = post(server, "/v1/messages", claude("ROUTE-b go"))
        a1 = post(server, "/v1/messages", claude("ROUTE-a go", *turn("t0"), moved=True))
        b1 = post(server, "/v1/messages", claude("ROUTE-b go", *turn("t0"), moved=True))
    assert "/w/a.txt" in a0[1] and "/w/b.txt" in b0[1]
    assert "TASK COMPLETE" in a1[1]  # a's one step done: its report
    assert "/w/c.txt" in b1[1]  # b's second step
    assert server.misses == []
    assert [[e.turn for e in call] for call in server.calls("a")] == [[0, 1]]
    assert [[e.turn for e in call] for call in server.calls("b")] == [[0, 1]]
    assert server.prompts("a") == ["You are claude.\nWorking directory: /w\nROUTE-a go"]


def test_a_route_for_one_cli_leaves_the_others_calls_to_the_next_route() -> None:
    script = Script(
        route("on-codex", "ROUTE", answer("from the codex route"), cli="codex"),
        route("anyone", "ROUTE", answer("from any"), answer("from any again")),
    )
    with ModelServer(script) as server:
        by_codex = post(server, "/v1/responses", codex("ROUTE x"))
        by_gemini = post(server, GEMINI, gemini("ROUTE x"))
        by_claude = post(server, "/v1/messages", claude("ROUTE x"))
    assert "from the codex route" in by_codex[1]
    assert "from any" in by_gemini[1] and "again" not in by_gemini[1]
    assert "from any again" in by_claude[1]
    assert [len(c) for c in server.calls("on-codex")] == [1]
    assert [len(c) for c in server.calls("anyone")] == [1, 1]


def test_side_requests_are_no_call_and_an_unmatched_call_is_an_error() -> None:
    with ModelServer(Script(route("a", "ROUTE-a", AUTHOR))) as server:
        title = post(server, "/v1/messages", {"messages": [{"role": "user", "content": "ROUTE-a"}]})
        count = post(server, GEMINI.replace("streamGenerateContent?alt=sse", "countTokens"), {})
        lost = post(server, GEMINI, gemini("no marker here"))
        author = post(server, "/v1/messages", claude("ROUTE-a go"))
    assert title[0] == 200 and count[0] == 200 and author[0] == 200
    assert lost[0] == 400
    assert server.misses == [
        "gemini: no route matches the call whose prompt begins 'no marker here'"
    ]
    assert [len(c) for c in server.calls("a")] == [1]  # the title took none of its calls


def test_a_default_answers_what_no_route_takes() -> None:
    with ModelServer(Script(route("a", "ROUTE-a", AUTHOR), default=answer("default"))) as server:
        first = post(server, "/v1/responses", codex("something else"))
        second = post(server, "/v1/responses", codex("and another"))
    assert "default" in first[1] and "default" in second[1]
    assert server.misses == [] and [len(c) for c in server.calls("")] == [1, 1]


def test_one_scenario_answers_everything_as_before() -> None:
    with ModelServer(AUTHOR) as server:
        a = post(server, "/v1/messages", claude("anything"))
        b = post(server, "/v1/messages", claude("anything else"))
    assert "/w/a.txt" in a[1] and "/w/a.txt" in b[1]
    assert server.scenario == AUTHOR and server.misses == []
    assert [(e.route, e.call, e.turn) for e in server.log] == [(None, None, 0)] * 2


def test_a_script_written_wrong_fails_where_it_is_written() -> None:
    with pytest.raises(ValueError, match="no CLI 'clause'"):
        route("a", "x", AUTHOR, cli="clause")
    with pytest.raises(ValueError, match="two routes share a name"):
        Script(route("a", "x", AUTHOR), route("a", "y", AUTHOR))


def test_a_scenario_may_end_in_an_error() -> None:
    refuses = Scenario((write("a.txt", "a\n"),), task_report(), ending="error")
    with ModelServer(Script(route("a", "ROUTE-a", refuses))) as server:
        step = post(server, "/v1/responses", codex("ROUTE-a go"))
        ended = post(server, "/v1/responses", {**codex("ROUTE-a go"), "input": codex_turn()})
    assert step[0] == 200 and "exec_command" in step[1]
    assert ended[0] == 400 and "the scripted model refuses" in ended[1]
    assert [e.turn for e in server.log] == [0, 1]


def test_a_scenario_may_never_answer_and_a_bad_ending_is_refused() -> None:
    with ModelServer(Scenario((), "never said", ending="hang")) as server:
        with pytest.raises(TimeoutError):
            post(server, GEMINI, gemini("anything"), timeout=0.3)
        assert [(e.path, e.turn) for e in server.log] == [(GEMINI, 0)]  # logged, held
    with pytest.raises(ValueError, match="ending 'crash': one of answer, hang, error"):
        Scenario((), "x", ending="crash")


def codex_turn() -> list[dict[str, Any]]:
    """codex's opening, its call of the first step and the call's output."""
    call = {"type": "function_call", "call_id": "call_0000", "name": "exec_command"}
    output = {"type": "function_call_output", "call_id": "call_0000", "output": "ok"}
    return [*codex("ROUTE-a go")["input"], call, output]


def test_a_scripted_review_report_is_what_gsds_review_gate_reads() -> None:
    from gsd.formats.reviewreport import parse_review

    changes = parse_review(review_report("changes", "src/a.py:3: no test", "src/b.py:1: typo"))
    assert not isinstance(changes, str), changes
    assert (changes.verdict, changes.findings) == (
        "changes",
        ("src/a.py:3: no test", "src/b.py:1: typo"),
    )
    approve = parse_review(review_report("approve"))
    assert not isinstance(approve, str), approve
    assert (approve.verdict, approve.findings) == ("approve", ())
