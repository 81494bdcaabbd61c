"""The rules of `gsd validate`. Each is declared (code, severity, summary, docs) beside the
function that checks it, in the module of its kind: planrules (one plan), phaserules (the
plans of a phase), filerules (the files beside them), select (which are reported, and the
inline suppression). Importing the package loads them all, so RULES is whole."""

from __future__ import annotations

from gsd.core.rules import filerules, phaserules, planrules, select
from gsd.core.rules.registry import RULES, Facts, Report, Rule, diag, escalate, in_code_order

in_code_order()

__all__ = [
    "RULES",
    "Facts",
    "Report",
    "Rule",
    "diag",
    "escalate",
    "filerules",
    "phaserules",
    "planrules",
    "select",
]
