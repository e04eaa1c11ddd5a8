"""Git state for a context snapshot: branch, HEAD, changed files.

Called only at PreCompact, outside the write transaction, with a timeout: a hook that ran git
on every event would pay ~5 ms and risk hanging on a locked index.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

GIT_TIMEOUT_SECONDS = 3.0


def capture(root: str) -> dict[str, Any]:
    from ..core import usergit

    args = ["status", "--porcelain=v2", "--branch", "--untracked-files=normal"]
    code, out, err = usergit.run(root, args, timeout=GIT_TIMEOUT_SECONDS)
    if code != 0:  # git's error, or usergit's for a missing git or a timeout
        from ..core.redact import redact

        # Redacted whole before the cut (a remote's URL may carry a token).
        message = redact(err).strip().splitlines()
        return {"error": message[0][:200] if message else f"git exited {code}"}
    return parse_status(out)


def parse_status(text: str) -> dict[str, Any]:
    """Parse `git status --porcelain=v2 --branch` output."""
    state: dict[str, Any] = {"branch": None, "head": None, "changed": []}
    for line in text.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.split(" ", 2)[2]
            state["head"] = None if oid == "(initial)" else oid[:12]
        elif line.startswith("# branch.head "):
            head = line.split(" ", 2)[2]
            state["branch"] = None if head == "(detached)" else head
        elif line.startswith("1 "):
            parts = line.split(" ", 8)
            state["changed"].append(f"{parts[1].replace('.', '')} {parts[8]}")
        elif line.startswith("2 "):
            parts = line.split(" ", 9)
            state["changed"].append(f"{parts[1].replace('.', '')} {parts[9].split(chr(9))[0]}")
        elif line.startswith("u "):
            state["changed"].append(f"U {line.split(' ', 10)[10]}")
        elif line.startswith("? "):
            state["changed"].append(f"?? {line[2:]}")
    return state
