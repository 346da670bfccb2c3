"""Stored text made safe to show: the one sanitiser for the CLI and the TUI.

Documents, imported chats, memories and model output are untrusted. Printed raw, an escape
sequence in them clears the screen, retitles the window, writes the clipboard (OSC 52) or hides
a link (OSC 8); a bidi override makes text read differently from what it is. `plain(text)` keeps
newlines and tabs, turns CRLF into a newline, and shows every other control character as a
visible symbol instead of obeying it: C0 controls and DEL as their Unicode control pictures
(ESC → "␛"), C1 controls and bidi overrides/isolates as `\\x9b` / `\\u202e`. Printable text,
CJK and emoji are untouched. Rich and Textual keep ESC in their text objects, so the TUI passes
stored text through here too before wrapping it in `Text`/`Content`.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _table() -> dict[int, str]:
    table = {code: chr(0x2400 + code) for code in range(0x20) if code not in (0x09, 0x0A)}
    table[0x7F] = "\u2421"  # ␡
    table.update({code: f"\\x{code:02x}" for code in range(0x80, 0xA0)})
    table.update({code: f"\\u{code:04x}" for code in _BIDI_CONTROLS})
    return table


_TABLE = _table()


def plain(text: str) -> str:
    """`text` with every control character other than newline and tab made visible."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_TABLE)


# What `plain` would change and JSON may carry raw: C1 controls, DEL, bidi controls, and the lone
# surrogates of a file name that is not UTF-8 (raw, they would make the output invalid UTF-8).
_JSON_ESCAPED = re.compile("[\u007f-\u009f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def json_text(obj: Any) -> str:
    """`obj` as one line of JSON that `plain` leaves unchanged: json.dumps escapes C0 controls,
    the rest become `\\uXXXX` escapes — the same JSON value (json.loads, and os.fsencode for a
    surrogate-escaped file name, give back the original)."""
    text = json.dumps(obj, ensure_ascii=False)
    return _JSON_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
