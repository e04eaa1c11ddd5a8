"""Recorded text quoted to a model or an agent, through one function (standard library only:
hooks call it).

Everything recorded came from tools, files, prompts and models, and whoever wrote it may have
meant it for the model: a task description holding our own closing delimiter, new lines with a
heading of their own, "SYSTEM OVERRIDE" orders, terminal escapes, bidirectional overrides that
make one name display as another. Every message that puts recorded text before a model (what
SessionStart restores, the memories given, conflict warnings, the ladder's guidance, the MCP
server's answers) quotes each recorded piece with `for_model`: it is then one line of at most
`cap` characters that cannot open or close a delimiter of ours nor carry a control character.
"""

from .terminal import is_control

CAP = 300
ELLIPSIS = "…"


def for_model(text: object, cap: int = CAP) -> str:
    """`text` as one inert line: runs of white space (new lines included) become one space,
    control and bidirectional characters their escapes (`\\x1b`, `\\u202e`), `&`, `<` and `>`
    the entities `&amp;` `&lt;` `&gt;` (no tag of ours can be opened or closed), and at most
    `cap` characters, the cut marked with an ellipsis."""
    # str.split() breaks at every line break Unicode knows (\x85, \u2028, \x1c...) too.
    flat = " ".join(("" if text is None else str(text)).split())
    if not flat.isprintable():
        flat = "".join(
            (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if is_control(c) else c
            for c in flat
        )
    quoted = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if len(quoted) > cap:
        cut = quoted[: max(0, cap - 1)]
        amp = cut.rfind("&")
        if amp >= 0 and ";" not in cut[amp:]:
            cut = cut[:amp]  # never half an entity
        quoted = cut + ELLIPSIS
    return quoted
