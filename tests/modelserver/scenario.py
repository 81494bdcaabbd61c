"""What the scripted model does: a list of steps, each one tool call, then a final text.

A step is abstract (write a file, edit one, run a shell command, call an MCP tool); each
wire protocol turns it into the tool call its CLI offers (claude's `Write`, codex's
`apply_patch` or shell, gemini's `write_file`), using the tool names the CLI sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """One thing the model asks its CLI to do."""

    kind: str  # write | edit | read | shell | mcp | delegate
    path: str = ""  # write, edit, read: relative to the agent's working folder
    content: str = ""  # write: the whole file; edit: the new text
    old: str = ""  # edit: the text replaced
    command: str = ""  # shell: one command line
    tool: str = ""  # mcp: the tool's name on gsd's server (`progress`)
    args: dict[str, object] = field(default_factory=dict)  # mcp: its arguments


def write(path: str, content: str) -> Step:
    return Step("write", path=path, content=content)


def edit(path: str, old: str, new: str) -> Step:
    return Step("edit", path=path, old=old, content=new)


def read(path: str) -> Step:
    """Read a file with the CLI's own reading tool (claude's Read, gemini's read_file,
    codex's shell `cat`): what a read-only agent does."""
    return Step("read", path=path)


def shell(command: str) -> Step:
    return Step("shell", command=command)


def mcp(tool: str, **args: object) -> Step:
    return Step("mcp", tool=tool, args=dict(args))


def delegate(prompt: str) -> Step:
    """Ask the CLI's sub-agent tool (claude's Task/Agent) to run `prompt`."""
    return Step("delegate", content=prompt)


@dataclass(frozen=True)
class Scenario:
    """The steps, one a turn, then `final` (a Task Report) as the last turn's text.

    `usage` is what each turn reports: (input tokens, output tokens); the server logs
    every figure it sends so a test can compare them with gsd's records.

    `ending` is how the last turn ends: `answer` gives `final`; `hang` never answers
    (the request is held until the server closes: the CLI runs into its timeout, the
    steps' work left in its tree); `error` answers HTTP 400 (the provider refuses: the
    CLI exits with an error, a crash as gsd sees it)."""

    steps: tuple[Step, ...]
    final: str
    usage: tuple[int, int] = (1000, 50)
    ending: str = "answer"  # answer | hang | error

    def __post_init__(self) -> None:
        if self.ending not in ENDINGS:
            raise ValueError(f"ending {self.ending!r}: one of {', '.join(ENDINGS)}")


ENDINGS = ("answer", "hang", "error")


def task_report(
    created: tuple[str, ...] = (), modified: tuple[str, ...] = (), status: str = "success"
) -> str:
    """A complete Task Report and its marker, as workflows/task-report.md asks for."""
    marker = "## TASK COMPLETE" if status == "success" else f"## FAILED: status {status}"
    return "\n".join(
        [
            "Done.",
            "",
            "### Task Report",
            f"- Status: {status}",
            f"- Files Created: {', '.join(created) or 'none'}",
            f"- Files Modified: {', '.join(modified) or 'none'}",
            "- Files Deleted: none",
            "- Validation: skipped",
            "- Errors: none",
            "### Downstream Context",
            "- Key Interfaces Introduced: none",
            "- Patterns Established: none",
            "- Warnings: none",
            marker,
        ]
    )


def answer(text: str, usage: tuple[int, int] = (1000, 50), ending: str = "answer") -> Scenario:
    """A model that calls no tool and answers `text` (a reviewer, a proposal), or ends
    as `ending` says (Scenario)."""
    return Scenario((), text, usage, ending)


def review_report(verdict: str, *findings: str) -> str:
    """A Review Report as issue 24 names it (gsd.formats.reviewreport's format):
    `approve`, `changes` or `reject`, and its findings (`path:line: what`), one a line;
    none: `- Findings: none`."""
    listed = ["- Findings:", *(f"  - {finding}" for finding in findings)]
    lines = listed if findings else ["- Findings: none"]
    return "\n".join(["Reviewed.", "", "### Review Report", f"- Verdict: {verdict}", *lines])
