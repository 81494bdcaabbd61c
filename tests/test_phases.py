"""Phase directories: numbering, sort order and resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.core.errors import UsageError
from gsd.io.plans.phases import list_phases, phase_key, plan_sort_key, resolve_phase

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_sort_order() -> None:
    names = ["3-c", "2.2-b", "12A.1-x", "12-x", "2-a", "2.1-hot", "12A-x", "CK-04-pre"]
    ordered = sorted(names, key=lambda n: phase_key(n) or (0, "", ()))
    assert ordered == ["2-a", "2.1-hot", "2.2-b", "3-c", "CK-04-pre", "12-x", "12A-x", "12A.1-x"]


@pytest.fixture
def planning(tmp_path: Path) -> Path:
    for name in ["01-foundation", "02-api", "02.1-hotfix", "12A-extra", "notes", "CK-03-coded"]:
        (tmp_path / "phases" / name).mkdir(parents=True)
    (tmp_path / "phases" / "04-file").write_text("not a directory")
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        pytest.param("1", "01-foundation", id="bare"),
        pytest.param("01", "01-foundation", id="padded"),
        pytest.param("1.0", "01-foundation", id="decimal-zero"),
        pytest.param("2", "02-api", id="two"),
        pytest.param("2.1", "02.1-hotfix", id="decimal"),
        pytest.param("02.1", "02.1-hotfix", id="padded-decimal"),
        pytest.param("12a", "12A-extra", id="letter"),
        pytest.param("3", "CK-03-coded", id="prefixed"),
        pytest.param("02-api", "02-api", id="directory-name"),
    ],
)
def test_resolve(planning: Path, spec: str, name: str) -> None:
    assert resolve_phase(planning, spec).name == name


def test_list_skips_non_phase_entries(planning: Path) -> None:
    assert [p.name for p in list_phases(planning)] == [
        "01-foundation",
        "02-api",
        "02.1-hotfix",
        "CK-03-coded",
        "12A-extra",
    ]


@pytest.mark.parametrize("spec", ["7", "x", "2.3"])
def test_unknown_phase_is_a_usage_error_listing_phases(planning: Path, spec: str) -> None:
    with pytest.raises(UsageError, match="01-foundation"):
        resolve_phase(planning, spec)


def test_plan_sort_key_is_numeric() -> None:
    ids = ["02-10", "02.1-01", "02-09", "10-01", "02-01"]
    assert sorted(ids, key=plan_sort_key) == ["02-01", "02-09", "02-10", "02.1-01", "10-01"]


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        pytest.param("CK-03", "CK-03-coded", id="prefixed-number"),
        pytest.param("ck-3", "CK-03-coded", id="prefixed-number-lowercase"),
        pytest.param("CK-03-coded", "CK-03-coded", id="prefixed-directory-name"),
        pytest.param("02.1-hotfix", "02.1-hotfix", id="decimal-directory-name"),
        pytest.param("12A-extra/", "12A-extra", id="trailing-slash"),
        pytest.param("phases/02-api", "02-api", id="a-path"),
        pytest.param("1-foundation", "01-foundation", id="unpadded-with-its-slug"),
        pytest.param("2.1.0-hotfix", "02.1-hotfix", id="decimal-zero-with-its-slug"),
    ],
)
def test_resolve_more_spellings(planning: Path, spec: str, name: str) -> None:
    assert resolve_phase(planning, spec).name == name


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param("01-nope", id="wrong-slug"),
        pytest.param("02-foundation", id="slug-of-another-phase"),
        pytest.param("1-api", id="unpadded-slug-of-another-phase"),
        pytest.param("02.1-api", id="decimal-wrong-slug"),
        pytest.param("XX-03", id="wrong-prefix"),
        pytest.param("CK-03-nope", id="prefixed-wrong-slug"),
    ],
)
def test_a_slug_must_name_a_directory(planning: Path, spec: str) -> None:
    with pytest.raises(UsageError) as raised:
        resolve_phase(planning, spec)
    close = {"02-foundation": "01-foundation", "02.1-api": "02-api"}.get(spec)
    hint = (
        f"did you mean {close}?"
        if close
        else ("name a phase by its number (01) or its folder (01-foundation)")
    )  # a slug a letter or two off a folder's name names the folder
    assert str(raised.value) == (
        f"no phase {spec!r} under {planning / 'phases'} (phases: 01-foundation, 02-api, "
        f"02.1-hotfix, CK-03-coded, 12A-extra) ({hint})"
    )


def test_no_phase_folders_and_no_planning_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no \.planning/ in .*\(run gsd init"):
        resolve_phase(tmp_path / ".planning", "1")
    (tmp_path / ".planning" / "phases").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"has no phase folders \(add one such as"):
        resolve_phase(tmp_path / ".planning", "1")


def test_a_long_list_of_phases_is_cut(tmp_path: Path) -> None:
    for number in range(1, 16):
        (tmp_path / "phases" / f"{number:02d}-p").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"12-p and 3 more\)"):
        resolve_phase(tmp_path, "01-nope")


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["execute-phase", "01-nope"], id="execute-phase"),
        pytest.param(["execute-phase", "01-nope", "--dry-run"], id="dry-run"),
        pytest.param(["waves", "01-nope"], id="waves"),
        pytest.param(["show", "01-nope"], id="show"),
        pytest.param(["validate", "--phase", "01-nope"], id="validate"),
        pytest.param(["errors", "--phase", "01-nope"], id="errors"),
    ],
)
def test_every_command_refuses_a_wrong_slug(project, gsd, command: list[str]) -> None:
    project.plan("01-01", phase_dir="01-setup")
    project.plan("02-01", phase_dir="02-api")
    result = gsd(*command)
    assert result.code == 2, result.out
    assert result.out == ""
    assert result.err.startswith("gsd: error: no phase '01-nope' under ")
    assert "(phases: 01-setup, 02-api)" in result.err
    assert "name a phase by its number (01) or its folder (01-setup)" in result.err


def test_the_right_slug_and_the_number_still_work(project, gsd) -> None:
    project.plan("01-01", phase_dir="01-setup")
    for spec in ("1", "01", "1.0", "01-setup"):
        result = gsd("waves", spec)
        assert result.code == 0, result.err
        assert result.out.startswith("Phase 01-setup: 1 plan in 1 wave\n")
        assert gsd("errors", "--phase", spec).code == 0
