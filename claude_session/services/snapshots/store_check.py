"""`doctor`'s rows for a project's snapshot store (services/snapshots/workspace.py): its size,
what killed processes left there (removed with snapshot_store.heal, only if the store's lock
is free at once), and, when asked, `git fsck --connectivity-only`."""

from __future__ import annotations

import os

from ...core.figures import plural
from . import snapshot_store, workspace


def check(root: str, *, fsck: bool = False) -> list[tuple[str, bool, str]]:
    """`doctor`'s rows (name, ok, detail) for the project's snapshot store: its size; what was
    repaired, only if the store's lock is free at once (a running capture is neither waited
    for nor disturbed); with `fsck`, `git fsck --connectivity-only` (it only reads)."""
    git_dir = workspace.snapshot_dir(root)
    if not os.path.isfile(os.path.join(git_dir, "claude-session-ready")):
        return [("snapshot store", True, f"{git_dir}: none yet (the first snapshot makes it)")]
    try:
        size = workspace.size_bytes(root) / 1e6
        rows = [
            (
                "snapshot store",
                True,
                f"{git_dir}: {size:.1f} MB, {plural(len(workspace.refs(root)), 'snapshot')}",
            )
        ]
        try:
            with workspace.Lock(git_dir, wait=0.0):
                removed = snapshot_store.heal(git_dir, root, thorough=True, who="doctor")
        except workspace.WorkspaceError:  # held: a capture (or a restore) runs right now
            rows.append(("snapshot store repairs", True, "a capture is running: not checked"))
        else:
            done = "removed " + "; ".join(removed) if removed else "no stale locks or quarantines"
            rows.append(("snapshot store repairs", True, done))
        if fsck:
            rows.append(_fsck(git_dir))
    except (workspace.WorkspaceError, OSError) as exc:
        return [("snapshot store", False, f"{git_dir}: {exc}")]
    return rows


def _fsck(git_dir: str) -> tuple[str, bool, str]:
    args = ["fsck", "--connectivity-only", "--no-progress", "--no-dangling"]
    done = workspace.git(None, git_dir, args, work_tree=False, check=False)
    lines = (done.stdout + done.stderr).decode("utf-8", "replace").splitlines()
    problems = [line for line in lines if line.strip() and not line.startswith("notice:")]
    if done.returncode == 0 and not problems:
        return ("snapshot store fsck", True, "git fsck --connectivity-only: no problems")
    shown = "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else "")
    return ("snapshot store fsck", False, f"exit {done.returncode}: {shown}"[:600])
