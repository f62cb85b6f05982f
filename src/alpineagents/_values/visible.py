"""Text for a terminal: control characters made visible, so that text from a model, a tool or a store can never
move the cursor, erase or rewrite lines, ring the bell, open a link (OSC 8) or change the window title.

`visible` is the one rule; the Terminal writes everything through it and the command line prints through it.
"""

from __future__ import annotations

import re

__all__ = ["json_visible", "visible"]

_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""The characters a terminal acts on instead of showing: C0 controls but tab and newline (ESC, BEL, CR, backspace,
...), DEL, the C1 controls (U+0080 to U+009F, which include an 8-bit CSI) and the marks that reorder text (bidi
overrides and isolates)."""

_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str) -> str:
    """`text` with each character a terminal would act on written as its escape, as Python writes it (ESC is
    `\\x1b`, CR `\\r`, U+202E `\\u202e`); tabs and newlines stay. Text without such characters is returned as it is.

    Example:
        `visible("ok\\x1b[2Kfake")` gives `'ok\\\\x1b[2Kfake'`, which a terminal prints as `ok\\x1b[2Kfake`.
    """
    return text if _HIDDEN.search(text) is None else _HIDDEN.sub(_shown, text)


def json_visible(text: str) -> str:
    """JSON text with the characters `visible` shows written as `\\uXXXX` escapes: the same JSON value, safe to
    print (JSON escapes the C0 controls itself, but leaves DEL, the C1 controls and the bidi marks raw)."""
    return text if _HIDDEN.search(text) is None else _HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
