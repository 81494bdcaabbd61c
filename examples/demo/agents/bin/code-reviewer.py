"""code-reviewer, the demo's read-only reviewer: reviews normalize_name() (plan 01-02 task 2).

It loads src/names.py (without writing bytecode), runs normalize_name() on the edge
cases the plan names, looks each one up in the test table of tests/test_names.py, and
prints its findings and a Task Report. It changes no file: gsd would roll back and
flag any change by a read-only agent as a policy violation.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_work as work  # noqa: E402

# (edge case, input, expected result, does a test row cover it?)
EDGE_CASES = [
    ("tabs", "\tada\t", "Ada", lambda raw: "\t" in raw),
    ("non-breaking spaces", "\u00a0ada\u00a0", "Ada", lambda raw: "\u00a0" in raw),
    ("a name of one letter", "a", "A", lambda raw: len(raw.strip()) == 1),
    ("a non-ASCII name", "élodie", "Élodie", lambda raw: not raw.isascii()),
]


def try_to_keep_notes() -> None:
    """What a careless reviewer does: save its notes beside the code. A read-only agent
    may not write in its worktree, and gsd's sandbox (Landlock, where the kernel has it)
    refuses the write; without one the note is taken back here, so the demo runs the same
    everywhere (gsd would otherwise roll the task back as a policy violation)."""
    notes = work.REPO / "REVIEW-NOTES.md"
    try:
        notes.write_text("normalize_name() reviewed\n", encoding="utf-8")
    except PermissionError as exc:
        work.say(f"tried to save REVIEW-NOTES.md: refused by the sandbox ({exc.strerror})")
        return
    notes.unlink()
    work.say("tried to save REVIEW-NOTES.md: no sandbox here, so the write went through "
             "(and was taken back)")  # fmt: skip


def review() -> int:
    try_to_keep_notes()
    names = work.load_src("names")
    rows = [row[0] for row in work.table_rows("tests/test_names.py", "CASES")]
    defects, untested = [], []
    work.say("review of src/names.py normalize_name() against tests/test_names.py")
    for label, raw, expected, covers in EDGE_CASES:
        try:
            got = names.normalize_name(raw)
        except ValueError as exc:
            got = f"ValueError({exc})"
        verdict = "correct" if got == expected else f"WRONG, expected {expected!r}"
        tested = [r for r in rows if covers(r)]
        coverage = f"tested by row {tested[0]!r}" if tested else "NO test row"
        work.say(f"  {label}: normalize_name({raw!r}) == {got!r}: {verdict}; {coverage}")
        if got != expected:
            defects.append(f"{label}: normalize_name({raw!r}) returns {got!r}, not {expected!r}")
        if not tested:
            untested.append(f"{label} ({raw!r} -> {expected!r})")
    warnings = (
        "; ".join(
            [f"defect in src/names.py: {d}" for d in defects]
            + (
                [
                    f"tests/test_names.py has no CASES row for: {', '.join(untested)}; "
                    "add them in a later task (this review changes no file)"
                ]
                if untested
                else []
            )
        )
        or "none"
    )
    work.say(f"{len(defects)} defect(s), {len(untested)} untested edge case(s)")
    return work.report(
        "success",
        validation="skipped",
        patterns="reviews report findings; fixes go to a task with write access",
        warnings=warnings,
    )


if __name__ == "__main__":
    if (work.PLAN, work.TASK) != ("01-02", "2"):
        sys.exit(
            work.report(
                "failure", errors=f"no review planned for plan {work.PLAN} task {work.TASK}"
            )
        )
    sys.exit(review())
