"""Text from Claude, tools and clients on a terminal: shown as written, never obeyed.

Every rich output of happy (`happy watch`, the remote-mode screen) builds its lines here: a rich
string is markup (`[/]` raises, `[red]` styles), so such text only ever enters rich as a `Text`;
and a terminal obeys its escape sequences (colours, cursor moves, a new window title), so their
control characters are shown as symbols instead. rich loads only with the first rich line:
`visible` alone serves plain stderr lines too (remote mode without a terminal).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# C0 but tab and newline, DEL, C1.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character replaced by a visible stand-in: its Unicode control
    picture (ESC as ␛), or for C1 its escape (`\\x9b`). A CRLF line end is a line end."""
    return _CONTROLS.sub(_stand_in, text.replace("\r\n", "\n"))


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else f"\\x{code:02x}"


def as_text(text: str, style: str = "") -> Text:
    """Untrusted `text` as a rich `Text`: never parsed as markup, control characters visible."""
    from rich.text import Text

    return Text(visible(text), style=style)


def plain_console(**options: Any) -> Console:
    """A Console that reads no markup, emoji codes or highlights in what it prints: even a plain
    string given to it by mistake is shown as written."""
    from rich.console import Console

    return Console(markup=False, emoji=False, highlight=False, **options)
