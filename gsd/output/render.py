"""Diagnostics as text, JSON, GitHub annotations, SARIF 2.1.0 and JUnit XML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsd import __version__
from gsd.core.models import Diagnostic
from gsd.core.words import plural
from gsd.formats.diagnostics import diagnostic_line

if TYPE_CHECKING:
    from gsd.core.rules import Report

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(report: Report) -> str:
    lines = [diagnostic_line(d) for d in report.diagnostics]
    return "\n".join(lines) + ("\n" if lines else "")


def summary(report: Report) -> str:
    return (
        f"{plural(report.errors, 'error')}, {plural(report.warnings, 'warning')} "
        f"in {plural(report.files, 'file')}"
    )


def as_json(report: Report) -> str:
    import json

    return json.dumps(report.to_dict(), indent=2) + "\n"


def github(report: Report) -> str:
    """GitHub Actions workflow commands: one `::error file=..,line=..::msg` per finding."""
    out = []
    for d in report.diagnostics:
        props = ",".join(
            (
                f"file={_gh_property(d.path)}",
                f"line={d.line}",
                f"col={d.col}",
                f"title={d.code}",
            )
        )
        out.append(f"::{d.severity} {props}::{_gh_data(f'{d.code} {d.message}')}")
    return "\n".join(out) + ("\n" if out else "")


def _gh_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(value: str) -> str:
    return _gh_data(value).replace(":", "%3A").replace(",", "%2C")


def sarif(report: Report) -> str:
    import json

    from gsd.core.rules import RULES

    rules = [
        {
            "id": code,
            "name": code,
            "shortDescription": {"text": RULES[code].summary},
            "defaultConfiguration": {"level": RULES[code].severity},
        }
        for code in RULES
    ]
    index = {code: i for i, code in enumerate(RULES)}
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gsd",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": [_sarif_result(d, index) for d in report.diagnostics],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _sarif_result(d: Diagnostic, index: dict[str, int]) -> dict[str, object]:
    return {
        "ruleId": d.code,
        "ruleIndex": index.get(d.code, 0),
        "level": d.severity,
        "message": {"text": d.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": d.path, "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": d.line, "startColumn": d.col},
                }
            }
        ],
    }


def junit(report: Report) -> str:
    """JUnit XML, a test case per plan file checked: failed with its errors (the first as
    the message, all of them as the text), its warnings as its output. lxml is imported
    here, never on the hook's own path."""
    from gsd.formats.junit import Case, Failure, Suite, document

    found: dict[str, list[Diagnostic]] = {path: [] for path in sorted(report.paths)}
    for d in report.diagnostics:
        found.setdefault(d.path, []).append(d)
    cases = []
    for path, diagnostics in found.items():
        errors = [d for d in diagnostics if d.severity == "error"]
        warnings = [d for d in diagnostics if d.severity != "error"]
        failure = None
        if errors:
            more = f" (and {plural(len(errors) - 1, 'more error')})" if len(errors) > 1 else ""
            message = f"{errors[0].code} {errors[0].message}{more}"
            failure = Failure(message, errors[0].code, _lines(errors))
        cases.append(Case(path, "gsd validate", failure, output=_lines(warnings)))
    return document("gsd validate", [Suite("gsd validate", cases)])


def _lines(diagnostics: list[Diagnostic]) -> str:
    return "".join(diagnostic_line(d) + "\n" for d in diagnostics)


# `gsd validate --format`'s choices, in order: the Click option and the hook path's own
# parser (gsd.cli.lint) read them here, so this module stays light (rules load when used;
# lxml only inside `junit`).
FORMATS = {"text": text, "json": as_json, "github": github, "sarif": sarif, "junit": junit}


def rules_table() -> list[dict[str, str]]:
    from gsd.core.rules import RULES

    return [{"code": c, "severity": r.severity, "summary": r.summary} for c, r in RULES.items()]
