"""Text that is safe to show on a terminal: the one place that makes foreign text inert.

Recorded lines, log lines, ids and trainee names come from files other people wrote. A
terminal acts on control characters (ESC starts CSI/OSC sequences that retitle the window,
write the clipboard or make links; BEL, CR and backspace hide text), so every one of them
is shown visibly instead, the way `cat -v` shows them: ESC as ^[, BEL as ^G, DEL as ^?, C1
controls and bidirectional overrides as <U+XXXX>. Newlines (and tabs, inside lines) stay.
"""

from __future__ import annotations

import io
import re
import reprlib

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode controls that reorder
# or hide text (bidi embeddings/overrides/isolates, zero-width marks, line/paragraph separators).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_UNSAFE_IN_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n]")
EXCERPT_CHARS = 60


def _visible(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"<U+{code:04X}>"


def inert(text: str) -> str:
    """`text` with every control character shown visibly; newlines and tabs kept."""
    return _UNSAFE.sub(_visible, text)


def inert_line(text: str) -> str:
    """One line of `text`: newlines shown as ^J too, so it cannot start a line of its own."""
    return _UNSAFE_IN_LINE.sub(_visible, text)


_SHORT = reprlib.Repr()
_SHORT.maxstring = EXCERPT_CHARS
_SHORT.maxother = EXCERPT_CHARS
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 4
_SHORT.maxlevel = 2


def excerpt(value) -> str:
    """A short, inert repr of any value, for an error message: never the whole of a big one."""
    return inert_line(_SHORT.repr(value))


class InertStream(io.TextIOBase):
    """A text stream that passes everything written through `inert` to the stream it wraps:
    installed over stdout and stderr, no foreign text reaches the terminal raw."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped

    def write(self, text: str) -> int:
        self.wrapped.write(inert(text))
        return len(text)

    def flush(self) -> None:
        self.wrapped.flush()

    def isatty(self) -> bool:
        return self.wrapped.isatty()

    def fileno(self) -> int:
        return self.wrapped.fileno()

    @property
    def encoding(self):
        return getattr(self.wrapped, "encoding", "utf-8")

    @property
    def buffer(self):
        # Bytes written straight to the buffer bypass `inert`; faultlab writes only text.
        return self.wrapped.buffer

    def writable(self) -> bool:
        return True


def guard_terminal() -> None:
    """From now on, everything this process writes to stdout and stderr is made inert."""
    import sys

    if not isinstance(sys.stdout, InertStream):
        sys.stdout = InertStream(sys.stdout)
    if not isinstance(sys.stderr, InertStream):
        sys.stderr = InertStream(sys.stderr)
