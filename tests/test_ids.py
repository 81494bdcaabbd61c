"""The one grammar of phase numbers, phase folders and plan ids, and `gsd errors` using it."""

from __future__ import annotations

import json

import pytest

from gsd.core import ids
from gsd.formats import errorlog
from tests import test_execute
from tests.conftest import corpus_plans, git, requires_corpus
from tests.test_execute import fail, task

pytestmark = pytest.mark.unit  # `make test-fast` runs these

phase = test_execute.phase  # the fixture: phase 01-alpha, small command agents

# Every spelling of a phase, and its key (README: `1`, `01`, `1.0` and `01-foundation` are
# one phase; `2.1` is `02.1-hotfix`; `12A` is `12A-extra`).
PHASE_KEYS = [
    ("1", (1, "", ())),
    ("01", (1, "", ())),
    ("1.0", (1, "", ())),
    ("01.0.0", (1, "", ())),
    ("01-foundation", (1, "", ())),
    ("1-foundation", (1, "", ())),
    ("CK-01-x", (1, "", ())),  # a project-code prefix
    ("CK-01", (1, "", ())),
    ("2.1", (2, "", (1,))),
    ("02.1", (2, "", (1,))),
    ("02.1-hotfix", (2, "", (1,))),
    ("07.1-voltagent-verification-teams", (7, "", (1,))),  # from the corpus
    ("2.10", (2, "", (10,))),
    ("12A", (12, "A", ())),
    ("12a", (12, "A", ())),
    ("12A-extra", (12, "A", ())),
    ("12A.1", (12, "A", (1,))),
    ("12A.1-x", (12, "A", (1,))),
    ("", None),
    ("foundation", None),
    ("A12", None),
    ("12AB", None),
    ("1.x", None),
    ("1..2", None),
    ("-1", None),
    ("\u0661", None),  # an Arabic-Indic digit: ids are ASCII
    ("\uff11", None),  # a full-width digit
]


@pytest.mark.parametrize(("text", "key"), PHASE_KEYS)
def test_phase_key(text: str, key: ids.PhaseKey | None) -> None:
    assert ids.phase_key(text) == key


def test_phases_sort_as_the_readme_says() -> None:
    shuffled = ["3", "12A.1", "2.2", "12", "02", "2.10", "12A", "2.1"]
    ordered = sorted(shuffled, key=lambda text: ids.phase_key(text) or (0, "", ()))
    assert ordered == ["02", "2.1", "2.2", "2.10", "3", "12", "12A", "12A.1"]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("1", "01", True),
        ("1.0", "01-foundation", True),
        (" 01 ", "1", True),
        ("2.1", "02.1-hotfix", True),
        ("12A", "12A-extra", True),
        ("12a", "12A", True),
        ("12A", "12", False),
        ("12", "12A-extra", False),
        ("12A", "12A.1", False),
        ("2.1", "2.10", False),
        ("2.1", "2", False),
        ("CK-01", "01", True),
        ("misc", "MISC", True),  # no phase number: the same text only
        ("misc", "1", False),
    ],
)
def test_same_phase(a: str, b: str, same: bool) -> None:
    assert ids.same_phase(a, b) is same
    assert ids.same_phase(b, a) is same


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("01-foundation", ids.PhaseName(None, "01", "foundation")),
        ("02.1-hotfix", ids.PhaseName(None, "02.1", "hotfix")),
        ("12A.1-x-y", ids.PhaseName(None, "12A.1", "x-y")),
        ("CK-01-x", ids.PhaseName("CK", "01", "x")),
        ("07", ids.PhaseName(None, "07", None)),
        ("notes", None),
    ],
)
def test_parse_phase_name(text: str, parts: ids.PhaseName | None) -> None:
    assert ids.parse_phase_name(text) == parts


@pytest.mark.parametrize(
    ("text", "is_number"),
    [("1", True), ("1.0", True), ("12a.1", True), ("01-x", False), ("CK-01", False)],
)
def test_is_phase_number(text: str, is_number: bool) -> None:
    assert ids.is_phase_number(text) is is_number


@pytest.mark.parametrize(
    ("number", "short"),
    [("01", "1"), ("02.1", "2.1"), ("12A", "12A"), ("010", "10"), ("0", "0"), ("02.01", "2.01")],
)
def test_short_phase_number(number: str, short: str) -> None:
    assert ids.short_phase_number(number) == short


# Plan ids: `{phase number}-{plan number}`, nothing before or after.
PLAN_IDS = [
    ("01-02", True, ("01", "02")),
    ("1-2", True, ("1", "2")),
    ("02.1-01", True, ("02.1", "01")),
    ("07.1-02", True, ("07.1", "02")),  # from the corpus
    ("12A-03", True, ("12A", "03")),
    ("12A.1-01", True, ("12A.1", "01")),
    ("01", False, ("", "01")),
    ("01-", False, ("01", "")),
    ("-02", False, ("", "02")),
    ("01-02-x", False, ("01-02", "x")),
    ("CK-01-02", False, ("CK-01", "02")),
    ("01-02 ", False, ("01", "02 ")),
    ("01-\u00b2", False, ("01", "\u00b2")),  # a superscript two: a digit int() refuses
    ("01-\uff12", False, ("01", "\uff12")),
]


@pytest.mark.parametrize(("text", "valid", "parts"), PLAN_IDS)
def test_plan_ids(text: str, valid: bool, parts: tuple[str, str]) -> None:
    assert ids.is_plan_id(text) is valid
    assert ids.split_plan_id(text) == parts


@pytest.mark.parametrize(
    ("path", "plan_id"),
    [
        ("03-01-auth-PLAN.md", "03-01"),
        ("02.1-01-PLAN.md", "02.1-01"),
        (".planning/phases/12A-extra/12A-03-x-PLAN.md", "12A-03"),
        ("phases\\01-setup\\01-02-PLAN.md", "01-02"),  # a Windows path
        ("CK-01-02-x-PLAN.md", "01-02"),
        (".planning/phases/01-setup/PLAN.md", None),
        ("notes.md", None),
    ],
)
def test_plan_id_from_filename(path: str, plan_id: str | None) -> None:
    assert ids.plan_id_from_filename(path) == plan_id


@pytest.mark.parametrize(
    ("ref", "plan_id"),
    [
        ('"01-01"', "01-01"),
        ("01-01-PLAN.md", "01-01"),
        ("01-foundation/01-01", "01-01"),
        (" 'x' ", "x"),
    ],
)
def test_normalize_plan_ref(ref: str, plan_id: str) -> None:
    assert ids.normalize_plan_ref(ref) == plan_id


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("01-02", "1-2", True),
        ("01-02", "01-2", True),
        ("1.0-2", "01-02", True),
        ("12a-3", "12A-03", True),
        ("02.1-01", "02-01", False),
        ("12A-03", "12-03", False),
        ("01-02", "01-03", False),
        ("01-\u00b2", "01-2", False),
        ("notes", "NOTES", True),
        ("notes", "01-02", False),
    ],
)
def test_same_plan(a: str, b: str, same: bool) -> None:
    assert ids.same_plan(a, b) is same
    assert ids.same_plan(b, a) is same


def test_plans_sort_by_phase_then_number() -> None:
    shuffled = ["12A-01", "02.1-01", "02-10", "x", "12-02", "02-09", "03-01", "01-\u00b2"]
    assert sorted(shuffled, key=ids.plan_sort_key) == [
        "01-\u00b2",
        "02-09",
        "02-10",
        "02.1-01",
        "03-01",
        "12-02",
        "12A-01",
        "x",
    ]


@requires_corpus
def test_every_corpus_plan_has_an_id_of_its_folders_phase() -> None:
    for path in corpus_plans():
        plan_id = ids.plan_id_from_filename(str(path))
        assert plan_id is not None and ids.is_plan_id(plan_id), path
        assert ids.parse_phase_name(path.parent.name) is not None, path
        assert ids.same_phase(path.parent.name, ids.split_plan_id(plan_id)[0]), path


# ------------------------------------------------ gsd errors, on the logs of real runs


@pytest.fixture
def failed(phase, gsd, tmp_path):
    """Plans 01-01, 02.1-01, 12-01 and 12A-01 each failed in a real run: the first two for
    good (their records in the run's phase log), 12-01 and 12A-01 once, then done (their
    records in the plan's own log, `.planning/logs/{plan}.jsonl`)."""
    for plan_id, folder in [
        ("02.1-01", "02.1-hotfix"),
        ("12-01", "12-main"),
        ("12A-01", "12A-extra"),
    ]:
        phase.plan(
            plan_id,
            tasks=task(plan_id, 1),
            phase_dir=folder,
            files_modified=f"[src/t{plan_id}_1.py]",
        )
    git(phase.root, "add", "-A")
    git(phase.root, "commit", "-q", "-m", "more phases")
    for number, plan_id, mode, code in [
        ("1", "01-01", "exit", 1),
        ("2.1", "02.1-01", "exit", 1),
        ("12", "12-01", "rate-limit-once", 0),
        ("12A", "12A-01", "rate-limit-once", 0),
    ]:
        fail(tmp_path, plan_id, 1, mode)
        result = gsd("execute-phase", number)
        assert result.code == code, result.err
    logs = phase.root / ".planning" / "logs"
    for plan_id in ("12-01", "12A-01"):
        records, _ = errorlog.read(logs / f"{plan_id}.jsonl")
        assert [(r.phase, r.plan) for r in records] == [tuple(plan_id.split("-"))]
    return phase


def shown(gsd, *args: str) -> list[str]:
    """The plans (`{phase}-{plan}`) whose failures `gsd errors ARGS` lists."""
    result = gsd("errors", *args, "--format", "json")
    assert result.code == 0, result.err
    return sorted({f"{e['phase']}-{e['plan']}" for e in json.loads(result.out)["errors"]})


# Each filter, and the plans whose failures it lists: one real run serves the whole table.
ERRORS_SHOWN = [
    ((), ["01-01", "02.1-01", "12-01", "12A-01"]),
    (("--phase", "12A"), ["12A-01"]),
    (("--phase", "12a"), ["12A-01"]),
    (("--phase", "12A-extra"), ["12A-01"]),
    (("--phase", "12"), ["12-01"]),
    (("--phase", "1.0"), ["01-01"]),
    (("--phase", "1"), ["01-01"]),
    (("--phase", "01-alpha"), ["01-01"]),
    (("--phase", "2.1"), ["02.1-01"]),
    (("--phase", "02.1-hotfix"), ["02.1-01"]),
    (("--phase", "CK-01"), ["01-01"]),  # a project code and a number: no folder's name
    (("--plan", "12A-01"), ["12A-01"]),
    (("--plan", "12-1"), ["12-01"]),
    (("--plan", "1.0-01"), ["01-01"]),
    (("--plan", "2.1-1"), ["02.1-01"]),
    (("--plan", "01"), ["01-01", "02.1-01", "12-01", "12A-01"]),
    (("--phase", "12A", "--plan", "01"), ["12A-01"]),
]


def test_errors_names_phases_and_plans_as_every_command_does(failed, gsd) -> None:
    got = {args: shown(gsd, *args) for args, _ in ERRORS_SHOWN}
    assert got == dict(ERRORS_SHOWN)

    refused = gsd("errors", "--phase", "12A-nope")  # a folder's name must be a folder's
    assert refused.code == 2 and refused.err.startswith("gsd: error: no phase '12A-nope'")
    refused = gsd("errors", "--phase", "2")  # no phase 2 (2.1 is another): as every command
    assert refused.code == 2 and refused.err.startswith("gsd: error: no phase '2'")
