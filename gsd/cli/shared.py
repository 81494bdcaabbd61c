"""What every command module shares: the `--format` option, whole-sentence help, warnings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gsd.core.errors import UsageError

if TYPE_CHECKING:
    from gsd.io.plans.project import Project

F = TypeVar("F", bound=Callable[..., Any])
LIST_FORMATS = ("text", "markdown", "json")
# What each output format is, for the help of every `--format` option.
FORMAT_MEANINGS = {
    "text": "for a terminal",
    "markdown": "for a pull request or an issue",
    "json": "for programs",
    "github": "GitHub Actions annotations",
    "sarif": "SARIF 2.1.0 for code scanning",
    "junit": "JUnit XML for CI test reports",
    "github-matrix": "a GitHub Actions job matrix",
    "mermaid": "a Mermaid flowchart",
    "html": "one self-contained HTML page",
}


def format_option(choices: Sequence[str] = LIST_FORMATS) -> Callable[[F], F]:
    """`--format` with its choices named in its help: `text (for a terminal), json ...`."""
    named = [f"{c} ({FORMAT_MEANINGS[c]})" if c in FORMAT_MEANINGS else c for c in choices]
    words = ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else named[0]
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default="text",
        show_default=True,
        help=f"Output format: {words}.",
    )


def first_sentence(text: str) -> str:
    """A docstring's first sentence, whole: what `gsd --help` shows beside a command
    (Click's own summary cuts it at the terminal's width and adds `...`)."""
    words = text.partition("\n\n")[0].split()
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            return " ".join(words[: i + 1])
    return " ".join(words)


class SummarisedCommand(click.Command):
    """A command listed in `--help` by the whole first sentence of its docstring."""

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help or first_sentence(self.help or "")


class SummarisedGroup(click.Group):
    """A group listed by its first sentence; its commands and subgroups are the same."""

    command_class = SummarisedCommand
    group_class = type  # subgroups are SummarisedGroups too

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help or first_sentence(self.help or "")


def planned_project() -> Project:
    """The project here, for a command that needs its `.planning/` (git alone is not one)."""
    from gsd.core.layout import PLANNING
    from gsd.io.plans.project import NO_PLANNING_HINT, Project, find_root

    project = Project(find_root(Path.cwd()))
    if not project.planning.is_dir():
        raise UsageError(f"no {PLANNING}/ in {project.root}", hint=NO_PLANNING_HINT)
    return project


def warn(warnings: list[str]) -> None:
    """Each warning on stderr, one line each: `gsd: warning: ...`."""
    for warning in warnings:
        click.echo(f"gsd: warning: {warning}", err=True)
