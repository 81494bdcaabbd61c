"""Text an agent wrote made harmless to print: every control character and every invisible
direction change shown as visible characters, the way `cat -v` shows them.

A terminal obeys escape sequences wherever they come from: an agent's Task Report or
stderr could retitle the window (OSC 0/2), clear the screen and draw a fake result (CSI
2J), switch to the alternate screen (CSI ?1049h), set the clipboard (OSC 52), overwrite
a line with a bare carriage return, ring the bell, or reorder what a person reads with a
bidi override. `visible` turns each of those characters into plain text:

- C0 controls and DEL as `cat -v` writes them: ESC as `^[`, CR as `^M`, BEL as `^G`,
  DEL as `^?`; newline and tab are kept only where a block of lines is printed on
  purpose (`lines=True`), and CR LF is then a newline;
- C1 controls (U+0080-U+009F; a terminal reads U+009B as CSI) as `cat -v` writes their
  byte: `M-^[`;
- the bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the line
  and paragraph separators (U+2028, U+2029) as `\\u202e`.

Everything else (accents, CJK, emoji) is left as it is. One pass of `str.translate`: a
line of a log costs well under a microsecond more.
"""

from __future__ import annotations

_NEWLINE, _TAB = 0x0A, 0x09
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029)


def _caret(code: int) -> str:
    return "^?" if code == 0x7F else "^" + chr(code + 0x40)


def _table(keep: tuple[int, ...]) -> dict[int, str]:
    table = {code: _caret(code) for code in (*range(0x20), 0x7F) if code not in keep}
    table.update({code: "M-" + _caret(code - 0x80) for code in range(0x80, 0xA0)})
    table.update({code: f"\\u{code:04x}" for code in _BIDI})
    return table


_ONE_LINE = _table(())
_LINES = _table((_NEWLINE, _TAB))
_UNSAFE = frozenset(_ONE_LINE)


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every control and bidi character shown as text (`^[`, `M-^[`, `\\u202e`).
    With `lines`, newlines and tabs stay (a block printed on purpose), CR LF included."""
    if lines:
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        return text.translate(_LINES)
    return text.translate(_ONE_LINE)


def is_safe(text: str) -> bool:
    """Whether `text` holds no control or bidi character at all (newlines included)."""
    return _UNSAFE.isdisjoint(map(ord, text))
