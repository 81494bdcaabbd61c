"""Split and read YAML frontmatter with an all-strings loader, line numbers kept."""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import cache
from typing import Any, NamedTuple

from gsd.formats import simpleyaml

# A closing fence line, with the newline before it: searched from the end of line 1, as
# `^(?:---|\.\.\.)[ \t]*$` in multi-line mode would be (a literal start is found faster).
_CLOSING_RE = re.compile(r"\n(?:---|\.\.\.)[ \t]*(?=\n|\Z)")

# A document that expands to more values than this is refused: it is either an
# alias bomb or not a plan's frontmatter. Real plans hold a few hundred.
MAX_VALUES = 100_000

# The file line of the first YAML line: the opening fence must be line 1.
YAML_LINE = 2


class FrontmatterError(Exception):
    """Frontmatter missing or unreadable; `line` is 1-based in the file."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class Split(NamedTuple):
    """A document cut at its frontmatter fences."""

    yaml_text: str
    body: str
    body_line: int  # file line of the first body line
    body_offset: int  # offset of the body in `text`
    text: str  # the whole document, normalised: what the offsets index

    @property
    def yaml_line(self) -> int:
        """Not a field: YAML_LINE, always (summary.py passes it on to `load`)."""
        return YAML_LINE


def normalize(text: str) -> str:
    """A document as gsd reads it: a UTF-8 BOM dropped, CRLF line ends as LF (SPEC 2)."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def split(text: str) -> Split:
    """Cut `---\\n yaml \\n---\\n body` from the normalised text; the opening fence
    must be at byte 0 (after a BOM)."""
    text = normalize(text)
    if not text.startswith("---"):
        stripped = text.lstrip()
        if stripped.startswith("---"):
            line = text[: len(text) - len(stripped)].count("\n") + 1
            raise FrontmatterError(
                f"frontmatter must start at byte 0, found '---' on line {line}", line
            )
        raise FrontmatterError("no frontmatter: the file must start with a '---' line")
    first_nl = text.find("\n")
    if first_nl < 0 or text[3:first_nl].strip():
        raise FrontmatterError("frontmatter opening '---' must be alone on line 1")
    closing = _CLOSING_RE.search(text, first_nl)
    if closing is None:
        raise FrontmatterError("frontmatter is not closed: add a '---' line after it", 1)
    fence = closing.start() + 1  # the fence line's first character
    end = text.find("\n", closing.end())
    body_offset = len(text) if end < 0 else end + 1
    return Split(
        yaml_text=text[first_nl + 1 : fence],
        body=text[body_offset:],
        body_line=text.count("\n", 0, fence) + 2,
        body_offset=body_offset,
        text=text,
    )


def load(yaml_text: str, first_line: int = YAML_LINE) -> tuple[dict[str, Any], dict[str, int]]:
    """Parse frontmatter to strings, lists and dicts; return it with each key's line.

    Every scalar stays a string (`plan: 01` is "01", dates stay text): fields
    are coerced by the code that reads them, as upstream does. The plain YAML of
    real frontmatter is read by `simpleyaml`; anything else goes to PyYAML.
    """
    try:
        data, lines = simpleyaml.load(yaml_text)
    except simpleyaml.Unsupported:
        return _load_with_pyyaml(yaml_text, first_line)
    return data, {key: first_line + line for key, line in lines.items()}


def _load_with_pyyaml(yaml_text: str, first_line: int) -> tuple[dict[str, Any], dict[str, int]]:
    import yaml  # only for frontmatter simpleyaml does not read: keeps the hook path light

    # libyaml is ~10x faster; PyYAML built without it gives the same nodes
    loader: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    try:
        node = yaml.compose(yaml_text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + (mark.line if mark else 0)
        raise FrontmatterError(f"invalid YAML: {exc.problem or exc.context}", line) from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {exc}", first_line) from None
    if node is None:
        return {}, {}
    if not isinstance(node, yaml.MappingNode):
        raise FrontmatterError("frontmatter must be a mapping of `key: value` lines", first_line)
    if _expanded_size(node, {}) > MAX_VALUES:
        raise FrontmatterError(
            f"frontmatter expands to more than {MAX_VALUES} values (a YAML alias bomb?)",
            first_line,
        )
    data: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        key = _to_python(key_node)
        key = key if isinstance(key, str) else str(key)
        data[key] = _to_python(value_node)
        lines.setdefault(key, first_line + key_node.start_mark.line)
    return data, lines


def _expanded_size(node: Any, sizes: dict[int, int]) -> int:
    """How many values the node stands for once aliases are expanded (memoised)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_VALUES + 1  # a recursive alias counts as too big
    total = 1
    kind = type(node).__name__
    if kind == "SequenceNode":
        for item in node.value:
            total += _expanded_size(item, sizes)
            if total > MAX_VALUES:
                break
    elif kind == "MappingNode":
        for key, value in node.value:
            total += _expanded_size(key, sizes) + _expanded_size(value, sizes)
            if total > MAX_VALUES:
                break
    sizes[id(node)] = total
    return total


def _to_python(node: Any) -> Any:
    kind = type(node).__name__
    if kind == "ScalarNode":
        return node.value
    if kind == "SequenceNode":
        return [_to_python(item) for item in node.value]
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = _to_python(key_node)
        result[key if isinstance(key, str) else str(key)] = _to_python(value_node)
    return result


@cache
def _key_line() -> re.Pattern[str]:
    return re.compile(r"^([A-Za-z_][\w-]*):(?:[ \t]+(.*?))?[ \t]*$")


@cache
def _item_line() -> re.Pattern[str]:
    return re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$")


def lenient_frontmatter(yaml_text: str, keys: Collection[str]) -> dict[str, Any]:
    """Frontmatter read line by line, as real agent files are written but YAML rejects
    (VoltAgent's `description: ... Triggers on: 'GDPR'`, contains-studio's descriptions
    running on over unindented `user: "..."` lines): one of `keys` at the start of a line
    starts a field, `  - x` lines make a list, any other line continues the value."""
    data: dict[str, Any] = {}
    key = ""
    for line in yaml_text.split("\n"):
        match = _key_line().match(line)
        item = _item_line().match(line)
        if match and match[1] in keys:
            key = match[1]
            data[key] = _unquote(match[2] or "")
        elif item and key and isinstance(data.get(key), (list, str)) and not data[key]:
            data[key] = [*(data[key] or []), _unquote(item[1])]
        elif item and key and isinstance(data.get(key), list):
            data[key].append(_unquote(item[1]))
        elif key and isinstance(data.get(key), str):
            data[key] = f"{data[key]}\n{line}".strip("\n")
    return data


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
