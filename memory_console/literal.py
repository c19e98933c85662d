"""Stored text shown literally: control characters made visible, never parsed as markup."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.style import StyleType
    from rich.text import Text

# What a terminal or a reader could take for something other than text: C0 controls, DEL,
# C1 controls (U+009B is a one-byte CSI), the line and paragraph separators, the bidi
# controls that reorder what an operator reads, and lone surrogates (not text at all).
# Zero-width joiners and other format characters stay: emoji and scripts need them.
BEYOND_ASCII = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
CONTROL = re.compile(f"[\x00-\x1f{BEYOND_ASCII}]")
# Newline and tab lay text out; they cannot move the cursor back over it or hide it.
CONTROL_EXCEPT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f{BEYOND_ASCII}]")
# JSON encoders escape C0 inside strings themselves; a raw C0 left is the layout of the JSON.
JSON_HIDDEN = re.compile(f"[{BEYOND_ASCII}]")
ESCAPE_STYLE = "reverse"


def escape(char: str) -> str:
    """`\\x1b`, `\\n`, `\\u202e`, `\\udc80`: how one hidden character is written."""
    return repr(char)[1:-1]


def visible(text: str, *, layout: bool = True) -> str:
    """The text with every hidden character written as its escape. With `layout` newlines
    and tabs stay (multi-line fields); without, they are escaped too (one-line messages)."""
    pattern = CONTROL_EXCEPT_LAYOUT if layout else CONTROL
    return pattern.sub(lambda match: escape(match.group()), text)


def pictured(text: str) -> str:
    """The text with each hidden character drawn as one visible character in its place
    (`␛` for ESC, `␡` for DEL, `�` for the rest): for a field being edited, whose cursor
    counts characters, so escapes several characters long would misplace it."""
    return CONTROL_EXCEPT_LAYOUT.sub(lambda match: picture(match.group()), text)


def picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def literal(text: str, style: StyleType = "", *, layout: bool = True) -> Text:
    """Stored text as a renderable: exactly what is stored, control characters visible, any
    `[markup]` shown as written. The one way stored text becomes a renderable."""
    from rich.text import Text

    pattern = CONTROL_EXCEPT_LAYOUT if layout else CONTROL
    shown = Text(style=style)
    start = 0
    for match in pattern.finditer(text):
        shown.append(text[start : match.start()])
        # Styled apart, so an escape made here is told from a backslash the text holds.
        shown.append(escape(match.group()), style=ESCAPE_STYLE)
        start = match.end()
    shown.append(text[start:])
    return shown


def json_text(
    value: Any, *, indent: int | None = None, default: Callable[[Any], Any] | None = None
) -> str:
    """JSON whose strings hold no hidden character raw (`\\u009b`, `\\u202e`), so a terminal
    never receives one, and which still decodes to the exact stored strings."""
    dumped = json.dumps(value, ensure_ascii=False, indent=indent, default=default)
    # Outside strings JSON has only ASCII punctuation and whitespace, so every hidden
    # character left by the encoder is inside a string, where \\uXXXX is its exact escape.
    return JSON_HIDDEN.sub(lambda match: f"\\u{ord(match.group()):04x}", dumped)
