"""Recorded text made safe for a terminal (standard library only).

Everything recorded came from tools, files and models: an agent type or a path can hold ESC,
OSC 8 links, BEL, C1 controls, carriage returns or bidirectional overrides that would drive the
reader's terminal. Every text the CLI prints (tables, lines, the restored context, a
memory export in Markdown) and the status line (which cannot import rich or click) show such
characters escaped through `escape_controls`; every JSON it prints through `escape_json`.
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


def escape_json(text: str) -> str:
    """JSON text (`json.dumps(..., ensure_ascii=False)`, which escapes C0 but leaves DEL, C1
    and the bidirectional marks raw) with those as `\\uXXXX` escapes too: they can only stand
    inside a string, where the escape reads back as the same character."""
    return "".join(f"\\u{ord(c):04x}" if ord(c) >= 0x7F and is_control(c) else c for c in text)
