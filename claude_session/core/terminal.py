"""Recorded text made safe for a terminal (standard library only).

Everything recorded came from tools, files and models: an agent type or a path can hold ESC,
OSC 8 links, BEL, C1 controls, carriage returns or bidirectional overrides that would drive the
reader's terminal. The CLI's tables and the status line (which cannot import rich or click)
both show such characters escaped, through this one function.
"""


def is_control(c: str) -> bool:
    """C0, DEL, C1, and the bidirectional marks and overrides that reorder what is shown."""
    code = ord(c)
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
        or code in (0x200E, 0x200F, 0x061C)
    )


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\r`, `\\u202e`)."""
    if text.isprintable():  # none of them (each is Cc or Cf, never printable): the usual case
        return text
    out = []
    for c in text:
        if c == "\n" and keep_newlines:
            out.append(c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t" if not keep_newlines else "    ")
        elif c == "\r":
            out.append("\\r")
        elif is_control(c):
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)
