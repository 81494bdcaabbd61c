"""A plan's must_haves as checks, and each check decided on file text (no I/O).

The semantics are upstream's (get-shit-done 1.50.0, get-shit-done/bin/lib/verify.cjs:
`cmdVerifyArtifacts`, `cmdVerifyKeyLinks`, `cmdVerifyReferences`): an artifact's file must
exist; `min_lines` counts `text.split("\\n")` (a final newline counts as a line, as there);
`contains` and each of `exports` must occur as written (a substring, not a regex); a key
link's `pattern` is a regex searched in its `from` file, then in its `to` file, and with
no pattern the `from` file must mention `to`; an `@` reference with a `/` in it must name a
file. Two differences, each because upstream drops something the plan declares: a plain
string artifact that is a path (`artifacts: [output.txt]`, upstream's own fixture) must
exist, where upstream skips every string; and `not_contains` (one corpus plan has it)
must not occur.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal, NamedTuple

Status = Literal["pass", "fail", "skip"]
Kind = Literal["artifact", "key_link", "reference"]

# upstream's `/@([^\s\n,)]+\/[^\s\n,)]+)/g` (a path with a `/` in it, after an `@`), but
# quotes and backticks end it too: `@router.get("/")` and `-F file=@/tmp/a.vtt"` name no file
REFERENCE_RE = re.compile(r"@([^\s,)\"'`]+/[^\s,)\"'`]+)")


class Artifact(NamedTuple):
    """A file the plan promises, and what it must hold."""

    path: str
    contains: tuple[str, ...] = ()  # each must occur (a YAML list is searched item by item)
    not_contains: tuple[str, ...] = ()  # none may occur
    min_lines: int | None = None
    exports: tuple[str, ...] = ()


class KeyLink(NamedTuple):
    """`from` must reach `to`: `pattern` found in either, or `from` naming `to`."""

    source: str
    target: str
    pattern: str | None = None
    via: str = ""


class Check(NamedTuple):
    """One verdict: what was checked, pass, fail or skip, and why."""

    kind: Kind
    subject: str
    status: Status
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == "fail"


class Declared(NamedTuple):
    """What must_haves declare that can be checked, and what cannot (as skipped checks)."""

    artifacts: list[Artifact]
    key_links: list[KeyLink]
    skipped: list[Check]


def declared(must_haves: object) -> Declared:
    """The artifacts and key links of a plan's `must_haves` (as gsd's frontmatter reader
    gives it: strings, lists and dicts); entries that say nothing checkable are skipped."""
    result = Declared([], [], [])
    if not isinstance(must_haves, dict):
        return result
    for number, item in enumerate(_items(must_haves, "artifacts"), 1):
        artifact = _artifact(item)
        if isinstance(artifact, Artifact):
            result.artifacts.append(artifact)
        else:
            result.skipped.append(Check("artifact", f"entry {number}", "skip", artifact))
    for number, item in enumerate(_items(must_haves, "key_links"), 1):
        link = _key_link(item)
        if isinstance(link, KeyLink):
            result.key_links.append(link)
        else:
            result.skipped.append(Check("key_link", f"entry {number}", "skip", link))
    return result


def _items(must_haves: dict[str, object], key: str) -> list[object]:
    value = must_haves.get(key)
    return value if isinstance(value, list) else []


def _artifact(item: object) -> Artifact | str:
    """The artifact, or why it cannot be checked."""
    if isinstance(item, str):
        path = item.strip()
        if not path or any(c.isspace() for c in path):
            return f"{item!r} is a description, not a path: nothing to check"
        return Artifact(path)
    if not isinstance(item, dict):
        return "neither a path nor a mapping"
    given = item.get("path")
    if not isinstance(given, str) or not given.strip():
        return "no path"
    min_lines = item.get("min_lines")
    if min_lines is not None:
        text = str(min_lines).strip()
        if not text.isdigit():
            return f"min_lines is {min_lines!r}, not a whole number"
    exports = item.get("exports")
    named = exports if isinstance(exports, list) else [] if exports in (None, "") else [exports]
    return Artifact(
        given.strip(),
        contains=_texts(item.get("contains")),
        not_contains=_texts(item.get("not_contains")),
        min_lines=int(str(min_lines).strip()) if min_lines is not None else None,
        exports=tuple(str(e) for e in named if str(e)),
    )


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _texts(value: object) -> tuple[str, ...]:
    """`contains: "## A"` or `contains: ["## A", "## B"]`: the strings, each on its own
    (a list was searched as its Python text, `"['## A', '## B']"`)."""
    given = value if isinstance(value, list) else [value]
    return tuple(text for text in map(_text, given) if text is not None)


def _key_link(item: object) -> KeyLink | str:
    if not isinstance(item, dict):
        return "not a mapping with from and to"
    source, target = item.get("from"), item.get("to")
    if not isinstance(source, str) or not source.strip():
        return "no from"
    pattern = _text(item.get("pattern"))
    if pattern is None and not (isinstance(target, str) and target.strip()):
        return "no to and no pattern: nothing to check"
    via = item.get("via")
    return KeyLink(
        source.strip(),
        target.strip() if isinstance(target, str) else "",
        pattern,
        via if isinstance(via, str) else "",
    )


def line_count(text: str) -> int:
    """Lines as upstream counts them: `text.split("\\n").length`."""
    return text.count("\n") + 1


def check_artifact(artifact: Artifact, text: str | None) -> Check:
    """The artifact against its file's text (None: no such file)."""
    if text is None:
        return Check("artifact", artifact.path, "fail", "file not found")
    issues = list(_artifact_issues(artifact, text))
    if issues:
        return Check("artifact", artifact.path, "fail", "; ".join(issues))
    return Check("artifact", artifact.path, "pass", _artifact_summary(artifact, text))


def _artifact_issues(artifact: Artifact, text: str) -> Iterator[str]:
    if artifact.min_lines is not None and line_count(text) < artifact.min_lines:
        yield f"only {line_count(text)} lines, need {artifact.min_lines}"
    yield from (f"does not contain {s!r}" for s in artifact.contains if s not in text)
    yield from (f"contains {s!r}, which it must not" for s in artifact.not_contains if s in text)
    yield from (f"no export {name!r}" for name in artifact.exports if name not in text)


def _artifact_summary(artifact: Artifact, text: str) -> str:
    parts = ["exists"]
    if artifact.min_lines is not None:
        parts.append(f"{line_count(text)} lines >= {artifact.min_lines}")
    if artifact.contains:
        parts.append(f"contains {', '.join(map(repr, artifact.contains))}")
    if artifact.not_contains:
        parts.append(f"lacks {', '.join(map(repr, artifact.not_contains))}")
    if artifact.exports:
        parts.append(f"exports {', '.join(artifact.exports)}")
    return ", ".join(parts)


def link_subject(link: KeyLink) -> str:
    return f"{link.source} -> {link.target}" if link.target else link.source


def check_key_link(link: KeyLink, source: str | None, target: str | None) -> Check:
    """The link against the text of its `from` and `to` files (None: no such file)."""
    subject = link_subject(link)
    if source is None:
        return Check("key_link", subject, "fail", f"{link.source} not found")
    if link.pattern is None:
        if link.target in source:
            return Check("key_link", subject, "pass", f"{link.source} names {link.target}")
        return Check("key_link", subject, "fail", f"{link.source} does not name {link.target}")
    try:
        regex = re.compile(link.pattern)
    except re.error as exc:
        return Check("key_link", subject, "fail", f"pattern '{link.pattern}' is no regex: {exc}")
    shown = f"pattern '{link.pattern}'"
    for name, text in ((link.source, source), (link.target, target)):
        if text is not None and regex.search(text):
            return Check("key_link", subject, "pass", f"{shown} found in {name}")
    return Check("key_link", subject, "fail", f"{shown} found in neither file")


def references(text: str) -> list[str]:
    """The `@path/with/slash` references in a plan's text, once each, in order."""
    return list(dict.fromkeys(m.group(1) for m in REFERENCE_RE.finditer(text)))


def check_reference(reference: str, exists: bool | None) -> Check:
    """A reference and whether its file exists (None: outside the project, not looked at)."""
    if exists is None:
        note = "outside the project: not looked at (verification.outside_references: skip)"
        return Check("reference", reference, "skip", note)
    if exists:
        return Check("reference", reference, "pass", "found")
    return Check("reference", reference, "fail", "not found")
