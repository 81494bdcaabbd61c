"""One model server, many agents: each conversation gets the scenario of its route.

`ModelServer(scenario)` answers every agent loop from one Scenario (the single-agent
use, unchanged). `ModelServer(Script(...))` serves several agents at once (an author
on claude, a reviewer on codex, a proposal, a challenge ...), on one port for all three
protocols:

    from tests.modelserver.scenario import Scenario, answer, review_report, write ...
    script = Script(  # the narrower route first (see "Writing patterns" below)
        route("reviewer", r"### Review Report", answer(review_report("changes", "a.txt:1 no")),
              answer(review_report("approve")), cli="codex"),
        route("author", r"ROUTE-author", Scenario((write("a.txt", "hi"),), task_report()),
              Scenario((write("a.txt", "hi, you"),), task_report())),  # its retry
    )
    with ModelServer(script) as server:
        ...  # point every CLI at server.url (anthropic/responses/gemini.configure)
        assert server.misses == []
        [first, second] = server.calls("reviewer")  # each call's logged requests
        asked = server.prompts("reviewer")  # what each call was asked (its opening)

How a request finds its scenario. A request of an agent loop belongs to a conversation
identified by its opening: the text of the messages before the model's first answer
(the prompt the CLI opened with; wire.Opening). A request in which the model has not
answered yet starts a new conversation, a *call*: the first route (in order) whose
`cli` fits (empty: any CLI) and whose `pattern` (a regular expression, `re.search`ed in
the system prompt and the opening, so `(?s)` and `(?i)` work) matches takes it; its
Nth call gets its Nth scenario. Every later request of that conversation (the same
opening on the same CLI) gets the same scenario, its turn counted from the conversation
as in the single-scenario use. A call no route takes gets `Script.default`; without
one, and for a route's call past its last scenario, the server answers HTTP 400 with
a one-line reason that is also kept in `server.misses` (a test asserts it is empty):
a script that ran out is a failure, never a silent answer. Side requests (titles,
classifiers, token counts) need no scenario and never count as a call. A scenario's
`ending` plays a model that fails: `error` (HTTP 400 at its last turn: the CLI exits
with an error) or `hang` (never answered: the CLI runs into gsd's timeout).

Calls are counted in the order their first requests reach the server: agents that run
one after another (tasks of one plan, a reviewer after its author) get their scenarios
in that order; agents that run side by side should match different routes.

Writing patterns. gsd's prompt holds the task it runs (its name, its action: a marker
such as `ROUTE-greeter` in the action is the simplest key), its persona and, for a
retry, what went wrong; a prompt about another task can hold that task's text too (a
reviewer's prompt holds the task and diff it reviews, a retry's the findings). So put
the narrower route first (the reviewer's, matching what only its prompt holds, such as
the Review Report format it is asked for, before the author's), or bind a route to its
CLI with `cli=`. `server.prompts(route)` shows what each call was actually asked.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from tests.modelserver.scenario import Scenario
from tests.modelserver.wire import Opening

CLIS = ("claude", "codex", "gemini")


@dataclass(frozen=True)
class Route:
    """Conversations whose opening matches `pattern`, on `cli` (empty: any), get
    `scenarios` in turn: the first such call the first, the second the second ..."""

    name: str
    pattern: str
    scenarios: tuple[Scenario, ...]
    cli: str = ""

    def takes(self, cli: str, found: Opening) -> bool:
        return self.cli in ("", cli) and re.search(self.pattern, found.text) is not None


def route(name: str, pattern: str, *scenarios: Scenario, cli: str = "") -> Route:
    if cli not in ("", *CLIS):
        raise ValueError(f"route {name!r}: no CLI {cli!r}; one of {', '.join(CLIS)}")
    re.compile(pattern)  # a bad pattern fails where the script is written
    return Route(name, pattern, scenarios, cli)


@dataclass(frozen=True)
class Script:
    """The routes, tried in order, and the scenario of a call none takes (None: a miss)."""

    routes: tuple[Route, ...]
    default: Scenario | None = None

    def __init__(self, *routes: Route, default: Scenario | None = None) -> None:
        names = [r.name for r in routes]
        if len(set(names)) != len(names):
            raise ValueError(f"two routes share a name: {names}")
        object.__setattr__(self, "routes", routes)
        object.__setattr__(self, "default", default)


@dataclass(frozen=True)
class Chosen:
    """A conversation's scenario: its route ("" for the default) and which call of it
    (0 for the first); `scenario` None with `miss` saying why none."""

    route: str
    call: int
    scenario: Scenario | None
    miss: str = ""


class Router:
    """A Script's state: how many calls each route took, each conversation's choice."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._taken: dict[str, int] = {}
        self._open: dict[tuple[str, str], Chosen] = {}
        self._lock = threading.Lock()

    def choose(self, cli: str, found: Opening) -> Chosen:
        with self._lock:
            if not found.fresh:
                known = self._open.get((cli, found.key))
                if known is not None:
                    return known
                return Chosen("", 0, None, f"{cli}: a conversation that never started here")
            chosen = self._start(cli, found)
            if chosen.scenario is not None:  # the latest call with this opening wins
                self._open[(cli, found.key)] = chosen
            return chosen

    def _start(self, cli: str, found: Opening) -> Chosen:
        for each in self.script.routes:
            if each.takes(cli, found):
                call = self._taken.get(each.name, 0)
                self._taken[each.name] = call + 1
                if call < len(each.scenarios):
                    return Chosen(each.name, call, each.scenarios[call])
                return Chosen(
                    each.name,
                    call,
                    None,
                    f"route {each.name!r} has {len(each.scenarios)} scenario(s); "
                    f"this is its call {call + 1} ({cli})",
                )
        if self.script.default is not None:
            return Chosen("", self._count_default(), self.script.default)
        opened = " ".join(found.prompt.split())[:120]
        return Chosen(
            "", 0, None, f"{cli}: no route matches the call whose prompt begins {opened!r}"
        )

    def _count_default(self) -> int:
        call = self._taken.get("", 0)
        self._taken[""] = call + 1
        return call
