"""Phase directories: numbering, sort order and resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.errors import UsageError
from gsd.phases import list_phases, phase_key, plan_sort_key, resolve_phase


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
        "01-foundation", "02-api", "02.1-hotfix", "CK-03-coded", "12A-extra",
    ]  # fmt: skip


@pytest.mark.parametrize("spec", ["7", "x", "2.3"])
def test_unknown_phase_is_a_usage_error_listing_phases(planning: Path, spec: str) -> None:
    with pytest.raises(UsageError, match="01-foundation"):
        resolve_phase(planning, spec)


def test_plan_sort_key_is_numeric() -> None:
    ids = ["02-10", "02.1-01", "02-09", "10-01", "02-01"]
    assert sorted(ids, key=plan_sort_key) == ["02-01", "02-09", "02-10", "02.1-01", "10-01"]
