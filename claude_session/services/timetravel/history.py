"""Who changed which file: the project's snapshots in the order they were taken, and each
change between two of them put down to the recorded steps that happened in between.

A snapshot is taken after every tool call that can change files, at each turn's start and at
each revert, so the change from one snapshot to the next was made by the frames it covers:
a Write, Edit, MultiEdit or NotebookEdit explains the one file it names; any other tool that
can change files (Bash, an MCP tool...) explains whatever changed while it ran; a revert
explains the paths it restored. A change no such frame explains (one captured at a turn's
start, or still in the work tree since the latest snapshot) was made outside the recorded
tool calls: by the user, an editor, another program. That is what `revert` protects, and how
`revert --agent` knows which files an agent changed.

Several frames can share one snapshot (no tool changed files between them), and a failed
capture leaves its frames to the next snapshot: those frames cover the change together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import apsw

from ..snapshots import revert_store

NAMING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
CHANGING_KINDS = frozenset({"tool", "attempt"})
REVERT = "revert"  # who made a change that a revert made
USER = "outside"  # a change no recorded step explains


@dataclass(frozen=True)
class Step:
    """What one frame that can change files did: who, with which tool, naming which files."""

    session_id: str
    frame_no: int
    kind: str
    agent_id: str | None
    tool_name: str | None
    files: tuple[str, ...]

    def explains(self, path: str) -> bool:
        if self.kind == "revert":
            return path in self.files
        if self.kind not in CHANGING_KINDS:
            return False
        if self.tool_name in NAMING_TOOLS:
            return path in self.files
        return True

    @property
    def who(self) -> str:
        return REVERT if self.kind == "revert" else str(self.agent_id or USER)


@dataclass
class Transition:
    """From one snapshot to the next: the frames in between, and what changed."""

    before: str
    after: str
    at: float
    steps: list[Step] = field(default_factory=list)
    changes: list[revert_store.RawChange] = field(default_factory=list)

    def who_changed(self, path: str) -> set[str]:
        """The agents (or `revert`) whose steps explain a change of `path`; {USER} if none."""
        found = {s.who for s in self.steps if s.explains(path)}
        return found or {USER}


def transitions_since(
    conn: apsw.Connection, root: str, commit: str, *, start_at: float | None = None
) -> list[Transition]:
    """Every snapshot-to-snapshot change of the project after snapshot `commit` was taken
    (or after time `start_at`), oldest first, with the frames that cover each."""
    groups = _snapshot_groups(conn)
    start = None
    for n, (group_commit, at, _) in enumerate(groups):
        if group_commit == commit or (start_at is not None and at >= start_at):
            start = n
            break
    if start is None:
        return []
    out = [
        Transition(before, after, at, steps)
        for (before, _, _), (after, at, steps) in zip(
            groups[start:], groups[start + 1 :], strict=False
        )
    ]
    changed = revert_store.steps_changed(root, [(t.before, t.after) for t in out])
    for transition, changes in zip(out, changed, strict=True):
        transition.changes = changes
    return out


def _snapshot_groups(conn: apsw.Connection) -> list[tuple[str, float, list[Step]]]:
    """(commit, captured_at, the steps it covers) of every snapshot still kept, in the order
    they were taken. A frame whose capture failed (or was let go) is covered by the next one."""
    groups: list[tuple[str, float, list[Step]]] = []
    waiting: list[Step] = []
    for session_id, frame_no, status, commit, captured_at, kind, agent, tool, files in conn.execute(
        "SELECT v.session_id, v.frame_no, v.status, v.snapshot_commit, v.captured_at,"
        " f.kind, f.agent_id, f.tool_name, f.files FROM vcs_tags v JOIN frames f"
        " ON f.session_id = v.session_id AND f.frame_no = v.frame_no"
        " WHERE v.status != 'pending' ORDER BY v.requested_at, v.session_id, v.frame_no"
    ):
        waiting.append(
            Step(
                str(session_id),
                int(frame_no),
                str(kind),
                str(agent) if agent is not None else None,
                str(tool) if tool is not None else None,
                _files(files),
            )
        )
        if status != "captured" or not commit:
            continue
        if groups and groups[-1][0] == commit:
            groups[-1][2].extend(waiting)
        else:
            groups.append((str(commit), float(captured_at or 0.0), waiting))
        waiting = []
    return groups


def _files(value: object) -> tuple[str, ...]:
    if not isinstance(value, str) or not value:
        return ()
    try:
        found = json.loads(value)
    except ValueError:
        return ()
    return tuple(str(p) for p in found) if isinstance(found, list) else ()


def changed_outside(
    transitions: list[Transition], latest_to_now: list[revert_store.RawChange], paths: set[str]
) -> set[str]:
    """Which of `paths` were changed, after the first transition began, by anything but a
    recorded tool call or a revert: a user's edit captured by a later snapshot, or one still
    in the work tree (`latest_to_now`: the latest snapshot against the work tree)."""
    found = {c.path for c in latest_to_now if c.path in paths}
    for transition in transitions:
        for change in transition.changes:
            if change.path in paths and USER in transition.who_changed(change.path):
                found.add(change.path)
    return found
