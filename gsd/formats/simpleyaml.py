"""A fast reader for the plain YAML subset plan frontmatter uses, all values strings.

It understands block mappings and sequences, `[a, b]` flow lists, `{}`, plain and
quoted scalars and comments, and gives exactly what PyYAML's BaseLoader gives for
them (a test holds it to that over every real frontmatter). Anything else (anchors,
tags, block scalars, multi-line scalars, escapes, flow mappings) raises Unsupported
and the caller falls back to PyYAML; so does anything PyYAML would reject.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

# A plain key: starts with a letter, digit or `_`, holds no `:` or `#`.
_KEY_RE = re.compile(r"([A-Za-z0-9_][^:#\t]*?)[ ]*:(?:[ ]+(.*))?$")
_RESERVED_START = frozenset("&*!|>%@`{?:,]}#")
_DOUBLE_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')


@cache
def _single_re() -> re.Pattern[str]:
    return re.compile(r"'((?:[^']|'')*)'")


_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}


@cache
def _escape_re() -> re.Pattern[str]:
    return re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")


Line = tuple[int, int, str]  # (0-based line, indent, content without indent)


class Unsupported(Exception):
    """The text uses YAML this reader does not handle; use PyYAML."""


def load(text: str) -> tuple[dict[str, Any], dict[str, int]]:
    """The top-level mapping and the 0-based line of each of its keys."""
    lines: list[Line] = []
    for number, raw in enumerate(text.split("\n")):
        content = raw.lstrip(" ")
        if not content or content[0] == "#":
            continue
        if content[0] == "\t":
            raise Unsupported("tab indentation")
        lines.append((number, len(raw) - len(content), content.rstrip()))
    if not lines:
        return {}, {}
    if lines[0][1] != 0:
        raise Unsupported("indented first line")
    lines.append((-1, -1, ""))  # a sentinel: every block ends before it
    reader = _Reader(lines)
    data, key_lines = reader.mapping(0)
    if reader.pos != len(lines) - 1:
        raise Unsupported("trailing content")
    return data, key_lines


class _Reader:
    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.pos = 0

    def block(self, indent: int) -> Any:
        content = self.lines[self.pos][2]
        if _is_item(content):
            return self.sequence(indent)
        if _KEY_RE.match(content):
            return self.mapping(indent)[0]
        self.pos += 1  # a lone scalar or flow list on the line below its key
        if self.lines[self.pos][1] >= indent:
            raise Unsupported("multi-line scalar")
        return scalar_or_flow(content)

    def mapping(self, indent: int) -> tuple[dict[str, Any], dict[str, int]]:
        lines = self.lines
        data: dict[str, Any] = {}
        key_lines: dict[str, int] = {}
        pos = self.pos  # kept in a local, written back around the nested blocks
        number, line_indent, content = lines[pos]
        while line_indent == indent:
            match = _KEY_RE.match(content)
            if match is None:
                raise Unsupported(f"not a `key: value` line: {content!r}")
            key, inline = match.groups()
            pos += 1
            if key not in key_lines:
                key_lines[key] = number
            next_indent = lines[pos][1]
            if inline and inline[0] != "#" and inline.strip():
                data[key] = inline if _plain(inline) else scalar_or_flow(inline)
                if next_indent > indent:
                    raise Unsupported("multi-line scalar")
            elif next_indent > indent:
                self.pos = pos
                data[key] = self.block(next_indent)
                pos = self.pos
            elif next_indent == indent and _is_item(lines[pos][2]):
                self.pos = pos
                data[key] = self.sequence(indent)  # `key:\n- a` at the key's own indent
                pos = self.pos
            else:
                data[key] = ""  # an empty value: BaseLoader's null is ""
            number, line_indent, content = lines[pos]
        self.pos = pos
        if line_indent > indent:
            raise Unsupported("unexpected indentation")
        return data, key_lines

    def sequence(self, indent: int) -> list[Any]:
        lines = self.lines
        items: list[Any] = []
        number, line_indent, content = lines[self.pos]
        while line_indent == indent and (content == "-" or content.startswith("- ")):
            rest = content[1:]
            stripped = rest.lstrip(" ")
            if stripped and stripped[0] in "\"'":  # the common `- "text"`: no item, no key
                self.pos += 1
                items.append(scalar_or_flow(stripped))
                if lines[self.pos][1] > indent:
                    raise Unsupported("multi-line sequence item")
            elif not stripped:
                self.pos += 1
                next_indent = lines[self.pos][1]
                items.append(self.block(next_indent) if next_indent > indent else "")
            elif _is_item(stripped):
                raise Unsupported("nested inline sequence")
            elif _KEY_RE.match(stripped):
                # `- key: value` starts a mapping whose keys sit after the dash
                item_indent = indent + 1 + len(rest) - len(stripped)
                lines[self.pos] = (number, item_indent, stripped)
                items.append(self.mapping(item_indent)[0])
            else:
                self.pos += 1
                items.append(scalar_or_flow(stripped))
                if lines[self.pos][1] > indent:
                    raise Unsupported("multi-line sequence item")
            number, line_indent, content = lines[self.pos]
        return items


def _is_item(content: str) -> bool:
    return content == "-" or content.startswith("- ")


_SIMPLE_PLAIN_RE = re.compile(r"[A-Za-z0-9_./][^:#\t]*")
_plain = _SIMPLE_PLAIN_RE.fullmatch


def _quoted(text: str) -> str | None:
    """`"text"` or `'text'` holding no other quote and no escape: its text (None: not
    so simple; `_scalar` reads it)."""
    quote = text[0]
    if text[-1] == quote and text.count(quote) == 2 and "\\" not in text:
        return text[1:-1]
    return None


def scalar_or_flow(text: str) -> Any:
    if _plain(text):
        return text  # the common case: a plain scalar with nothing to interpret
    if text[0] in "\"'":
        quoted = _quoted(text)
        if quoted is not None:
            return quoted
    if text.startswith("["):
        return _flow_list(text)
    if text.startswith("{"):
        if re.fullmatch(r"\{[ ]*\}(?:[ ]+#.*)?", text):
            return {}
        raise Unsupported("flow mapping")
    value, rest = _scalar(text)
    if rest.strip() and not rest.startswith((" #", "\t#")):
        raise Unsupported("text after a quoted scalar")
    return value


def _scalar(text: str) -> tuple[str, str]:
    """One scalar at the start of `text`, and what follows it."""
    if text.startswith('"'):
        match = _DOUBLE_RE.match(text)
        if match is None:
            raise Unsupported("unclosed double-quoted scalar")
        inner = match.group(1)
        value = _escape_re().sub(_unescape, inner) if "\\" in inner else inner
        return value, text[match.end() :]
    if text.startswith("'"):
        match = _single_re().match(text)
        if match is None:
            raise Unsupported("unclosed single-quoted scalar")
        return match.group(1).replace("''", "'"), text[match.end() :]
    _check_plain(text)
    cut = text.find(" #")
    value = (text if cut < 0 else text[:cut]).rstrip()
    if ": " in value or value.endswith(":") or "\t" in value:
        raise Unsupported("plain scalar with ': ' or a tab")
    return value, ""


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))
    if code not in _ESCAPES:
        raise Unsupported(f"escape \\{code}")
    return _ESCAPES[code]


def _check_plain(text: str) -> None:
    if text[0] in _RESERVED_START or text.startswith(("- ", "-\t")) or text == "-":
        raise Unsupported(f"plain scalar starting with {text[0]!r}")


def _flow_list(text: str) -> list[str]:
    """`[a, "b", 'c']`: a one-line flow sequence of scalars."""
    items: list[str] = []
    pos = 1
    while True:
        while text.startswith(" ", pos):
            pos += 1
        if text.startswith("]", pos):
            break
        if pos >= len(text):
            raise Unsupported("unclosed flow sequence")
        if text[pos] in "\"'":
            value, _ = _scalar(text[pos:])
            match = (_DOUBLE_RE if text[pos] == '"' else _single_re()).match(text, pos)
            assert match is not None
            pos = match.end()
        else:
            end = pos
            while end < len(text) and text[end] not in ",]":
                end += 1
            value = text[pos:end].rstrip(" ")
            if not value or any(c in value for c in "[{}#") or ": " in value or value[-1] == ":":
                raise Unsupported("flow item that is not a plain string")
            _check_plain(value)
            pos = end
        items.append(value)
        while text.startswith(" ", pos):
            pos += 1
        if text.startswith(",", pos):
            pos += 1
        elif not text.startswith("]", pos):
            raise Unsupported("flow sequence item")
    tail = text[pos + 1 :].strip()
    if tail and not tail.startswith("#"):
        raise Unsupported("flow sequence with trailing text")
    return items
