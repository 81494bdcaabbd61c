"""Reading `NN-MM-SUMMARY.md` back: where a plan's is (its existence means the plan is
done) and what its frontmatter says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gsd.core.errors import InputError
from gsd.formats import frontmatter

_TOP_KEY_RE = re.compile(r"[A-Za-z0-9_\"'][^:]*:(?:[ \t]|$)")


def parse(text: str, name: str = "SUMMARY.md", *, strict: bool = False) -> dict[str, Any]:
    """The frontmatter of a SUMMARY, every scalar a string; {} when it has none.

    Hand-written summaries are not always valid YAML (an unquoted `: ` in a list
    item). A SUMMARY only records a finished plan, so by default the top-level keys
    that do read are kept and the broken ones dropped; `strict` raises InputError.
    """
    try:
        parts = frontmatter.split(text)
    except frontmatter.FrontmatterError:
        return {}  # older upstream summaries are plain Markdown
    try:
        data, _ = frontmatter.load(parts.yaml_text, parts.yaml_line)
    except frontmatter.FrontmatterError as error:
        if strict:
            raise InputError(f"{name}:{error.line}: {error.message}") from None
        return _salvage(parts.yaml_text)
    return data


def _salvage(yaml_text: str) -> dict[str, Any]:
    """Each top-level key read on its own; the ones that do not read are left out."""
    blocks: list[list[str]] = []
    for line in yaml_text.split("\n"):
        if _TOP_KEY_RE.match(line) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    data: dict[str, Any] = {}
    for block in blocks:
        try:
            part, _ = frontmatter.load("\n".join(block))
        except frontmatter.FrontmatterError:
            continue
        for key, value in part.items():
            data.setdefault(key, value)
    return data


def load(path: Path, *, strict: bool = False) -> dict[str, Any]:
    """`parse` of the file at `path`, with the path in any error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise InputError(f"{path}: cannot read the summary: {error.strerror}") from None
    return parse(text, str(path), strict=strict)


def summary_path(phase_dir_path: Path, plan_id: str) -> Path:
    """Where gsd writes the SUMMARY of `plan_id`."""
    return Path(phase_dir_path) / f"{plan_id}-SUMMARY.md"


def exists(phase_dir_path: Path | str, plan_id: str) -> bool:
    """Whether the plan is done: `{plan_id}-SUMMARY.md` (or `{plan_id}-slug-SUMMARY.md`)."""
    return find(phase_dir_path, plan_id) is not None


def find(phase_dir_path: Path | str, plan_id: str) -> Path | None:
    """The plan's SUMMARY.md in that phase folder: `{plan_id}-SUMMARY.md`, else
    `{plan_id}-slug-SUMMARY.md`; None when the plan is not done."""
    folder = Path(phase_dir_path)
    exact = summary_path(folder, plan_id)
    if exact.is_file():
        return exact
    prefix = f"{plan_id}-"
    for candidate in sorted(folder.glob(f"{_glob_escape(prefix)}*-SUMMARY.md")):
        rest = candidate.name[len(prefix) :]
        if rest[:1].isdigit():
            continue  # `01-02-SUMMARY.md` belongs to plan 01-02, not to plan 01
        if candidate.is_file():
            return candidate
    return None


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)
