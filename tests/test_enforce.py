"""Enforcement decisions: tier, scope, protected paths, refs, .git internals."""

from __future__ import annotations

import pytest

from gsd.core.safety.enforce import check, in_scope, is_protected

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("tier", "changed", "scope", "kinds"),
    [
        pytest.param("read-only", [], "warn", [], id="read-only-clean"),
        pytest.param("read-only", ["src/a.py"], "warn", [("tier", True)], id="read-only-wrote"),
        pytest.param("read+shell", ["out.txt"], "fail", [("tier", True)], id="shell-wrote"),
        pytest.param("full", ["src/a.py"], "warn", [], id="in-scope"),
        pytest.param(
            "full", ["src/a.py", "docs/x.md"], "warn", [("scope", False)], id="outside-warn"
        ),
        pytest.param("full", ["docs/x.md"], "fail", [("scope", True)], id="outside-fail"),
        # a .planning/ path is never a mere scope deviation: protected, or .planning's own
        pytest.param(
            "full",
            ["src/a.py", ".planning/config.json"],
            "warn",
            [("protected", True)],
            id="config-json",
        ),
        pytest.param(
            "full", ["src/a.py", ".planning/STATE.md"], "warn", [("planning", True)], id="planning"
        ),
        pytest.param(
            "read+write",
            ["src/.env.local", "certs/server.pem", "id.key"],
            "warn",
            [("protected", True), ("scope", False)],
            id="secrets",
        ),
    ],
)
def test_check(tier: str, changed: list[str], scope: str, kinds: list[tuple[str, bool]]) -> None:
    found = check(tier=tier, changed=changed, allowed=["src/a.py", "tests/"], scope=scope)
    assert [(v.kind, v.fatal) for v in found] == kinds


def test_refs_and_git_internals_are_fatal() -> None:
    found = check(
        tier="full",
        changed=[],
        allowed=[],
        scope="warn",
        changed_refs=["tag v1 deleted"],
        git_internals_changed=["hooks/pre-commit"],
    )
    assert [(v.kind, v.fatal) for v in found] == [("git-internals", True), ("refs", True)]
    assert found[0].detail == "changed .git/ (hooks/pre-commit); put back"
    assert "tag v1 deleted" in found[1].detail


@pytest.mark.parametrize(
    ("path", "allowed", "expected"),
    [
        pytest.param("src/a.py", ["src/a.py"], True, id="exact"),
        pytest.param("src/a/b.py", ["src/"], True, id="folder"),
        pytest.param("src/a/b.py", ["src"], True, id="folder-no-slash"),
        pytest.param("srcx/b.py", ["src"], False, id="not-a-prefix-match"),
        pytest.param("tests/test_a.py", ["tests/test_*.py"], True, id="glob"),
        pytest.param("src/a.py", [], False, id="nothing-allowed"),
    ],
)
def test_in_scope(path: str, allowed: list[str], expected: bool) -> None:
    assert in_scope(path, allowed) is expected


def test_files_entries_are_read_as_authors_write_them() -> None:
    found = check(
        tier="full",
        changed=["src/a.py", "src/b.py"],
        scope="fail",
        allowed=["`./src/a.py`", "src/b.py (new)"],
    )
    assert found == []


def test_protected() -> None:
    assert is_protected(".planning/config.json") and is_protected("deep/dir/.env")
    assert not is_protected(".planning/STATE.md") and not is_protected("src/env.py")


def test_index_flags_and_ignored_protected_files_are_fatal() -> None:
    found = check(
        tier="read-only",
        changed=[],
        allowed=[],
        scope="warn",
        flags=["skip-worktree on .planning/config.json"],
        ignored_protected=[".env"],
    )
    assert [(v.kind, v.fatal) for v in found] == [("protected", True), ("index-flags", True)]
    assert found[0].detail == "changed protected .env (ignored by git)"
    assert "skip-worktree on .planning/config.json" in found[1].detail
