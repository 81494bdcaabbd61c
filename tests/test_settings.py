"""`.planning/config.json` as one validated model: defaults, unknown keys, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.core.errors import InputError
from gsd.formats import settings
from gsd.formats.settings import InvalidSettings, Settings, key_lines, parse
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def _problem(text: str) -> str:
    with pytest.raises(InvalidSettings) as caught:
        parse(text, "c.json")
    assert len(caught.value.problems) == 1
    assert str(caught.value) == caught.value.problems[0]
    return caught.value.problems[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"mode": 3}',
            'c.json:1: `mode` must be a string such as "interactive" or "yolo", not 3',
            id="mode",
        ),
        pytest.param(
            '{\n "workflow": {\n  "use_worktrees": "yes"\n }\n}',
            'c.json:3: `workflow.use_worktrees` must be true or false, not "yes"',
            id="flag-string",
        ),
        pytest.param(
            '{"sandbox": {"enabled": 1}}',
            "c.json:1: `sandbox.enabled` must be true or false, not 1",
            id="flag-number",
        ),
        pytest.param(
            '{"specialists": {\n"allow_subagents": "no"}}',
            'c.json:2: `specialists.allow_subagents` must be true or false, not "no"',
            id="allow-subagents",
        ),
        pytest.param(
            '{"specialists": {\n"timeout_seconds": null}}',
            "c.json:2: `specialists.timeout_seconds` must be a number >= 0, not null",
            id="seconds-null",
        ),
        pytest.param(
            '{"specialists": {"kill_grace_seconds": -1}}',
            "c.json:1: `specialists.kill_grace_seconds` must be a number >= 0, not -1",
            id="seconds-negative",
        ),
        pytest.param(
            '{"specialists": {"timeout_seconds": true}}',
            "c.json:1: `specialists.timeout_seconds` must be a number >= 0, not true",
            id="seconds-bool",
        ),
        pytest.param(
            '{"specialists": {"max_retries": 2.5}}',
            "c.json:1: `specialists.max_retries` must be a whole number >= 0, not 2.5",
            id="retries-fraction",
        ),
        pytest.param(
            '{"specialists": {"scope": "strict"}}',
            'c.json:1: `specialists.scope` must be "warn" or "fail", not "strict"',
            id="scope",
        ),
        pytest.param(
            '{"parallelization": {"max_concurrent_agents": 0}}',
            "c.json:1: `parallelization.max_concurrent_agents` must be a whole number "
            "of 1 or more, not 0",
            id="agents-zero",
        ),
        pytest.param(
            '{"parallelization": "yes"}',
            'c.json:1: `parallelization` must be an object or true or false, not "yes"',
            id="parallelization-string",
        ),
        pytest.param(
            '{\n\n"git": true}',
            "c.json:3: `git` must be an object, not true",
            id="section-not-object",
        ),
        pytest.param(
            '{"sandbox": {"writable": ".cache"}}',
            'c.json:1: `sandbox.writable` must be a list of paths, e.g. ["~/.cache"], not ".cache"',
            id="writable-string",
        ),
        pytest.param(
            '{"specialists": {"agent_paths": [\n  "ok",\n  7\n]}}',
            "c.json:3: `specialists.agent_paths` must be a list of paths, e.g. "
            '["~/.cache"], not ["ok", 7]',
            id="agent-paths-item-line",
        ),
        pytest.param(
            '{"git": {"commit_docs": "no"}, "git": {"commit_docs": 0}}',
            "c.json:1: `git.commit_docs` must be true or false, not 0",
            id="duplicate-key-last-wins",
        ),
        pytest.param(
            '{"specialists": {"scope": "caf\u00e9"}}',
            'c.json:1: `specialists.scope` must be "warn" or "fail", not "caf\u00e9"',
            id="unicode-shown-as-written",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_file_line_and_key(text: str, message: str) -> None:
    assert _problem(text) == message


def test_every_problem_is_kept_for_doctor_the_first_is_the_message() -> None:
    text = '{\n "mode": 1,\n "git": {"commit_docs": null}\n}'
    with pytest.raises(InvalidSettings) as caught:
        parse(text, "c.json")
    assert caught.value.problems == [
        'c.json:2: `mode` must be a string such as "interactive" or "yolo", not 1',
        "c.json:3: `git.commit_docs` must be true or false, not null",
    ]
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{\n  "mode": \n}\n',
            "c.json:3:1: invalid JSON: Expecting value (fix config.json)",
            id="invalid-json",
        ),
        pytest.param("[1]", "c.json: must hold a JSON object", id="not-an-object"),
    ],
)
def test_text_that_is_no_settings_object(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse(text, "c.json")
    assert str(caught.value) == message


def test_missing_keys_take_the_defaults_and_unknown_keys_are_allowed() -> None:
    loaded = parse('{"depth": "standard", "workflow": {"research": true}, "safety": {"x": 1}}')
    assert loaded.workflow.use_worktrees is True and loaded.specialists.timeout_seconds == 300
    assert loaded.model_extra == {"depth": "standard", "safety": {"x": 1}}
    assert loaded.workflow.model_extra == {"research": True}


@pytest.mark.parametrize("value", [True, False])
def test_parallelization_as_one_flag_is_its_enabled(value: bool) -> None:
    """Older GSD projects write `"parallelization": true`."""
    loaded = parse(json.dumps({"parallelization": value}))
    assert loaded.parallelization.enabled is value
    assert loaded.parallelization.max_concurrent_agents == 3


def test_values_have_their_types() -> None:
    loaded = parse(
        '{"specialists": {"timeout_seconds": 30, "max_retries": 1.0, "agent_paths": ["a"]}, '
        '"parallelization": {"max_concurrent_agents": 2.0}}'
    )
    assert loaded.specialists.timeout_seconds == 30.0
    assert isinstance(loaded.specialists.timeout_seconds, float)
    assert (loaded.specialists.max_retries, loaded.parallelization.max_concurrent_agents) == (1, 2)
    assert isinstance(loaded.specialists.max_retries, int)
    assert loaded.specialists.agent_paths == ["a"]


def test_no_config_json_is_the_defaults(tmp_path: Path) -> None:
    assert settings.load(tmp_path) == Settings()


def test_an_unreadable_config_json_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError, match=r"config\.json: cannot read: "):
        settings.load(tmp_path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("{}", {}, id="empty"),
        pytest.param(
            '{"a": {"b": [1,\n{"c": 2}]}}',
            {("a",): 1, ("a", "b"): 1, ("a", "b", 0): 1, ("a", "b", 1): 2, ("a", "b", 1, "c"): 2},
            id="nested",
        ),
        pytest.param(
            '{"a\\"}": "{[", \n "b" : []}', {('a"}',): 1, ("b",): 2}, id="brackets-in-strings"
        ),
    ],
)
def test_key_lines(text: str, expected: dict[tuple[str | int, ...], int]) -> None:
    assert key_lines(text) == expected


def corpus_configs() -> list[Path]:
    return sorted(CORPUS.rglob("config.json")) if CORPUS.is_dir() else []


@requires_corpus
def test_the_corpus_holds_config_files() -> None:
    assert len(corpus_configs()) >= 8


@requires_corpus
@pytest.mark.parametrize("path", corpus_configs(), ids=lambda p: p.relative_to(CORPUS).parts[0])
def test_every_corpus_config_json_loads(path: Path) -> None:
    """GSD's own config.json holds many keys gsd does not read; every real one loads."""
    loaded = settings.load(path.parent)
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("mode") is not None:
        assert loaded.mode == data["mode"]
    shorthand = data.get("parallelization")
    if isinstance(shorthand, bool):
        assert loaded.parallelization.enabled is shorthand
