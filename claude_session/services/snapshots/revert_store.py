"""What a revert reads from and writes with the snapshot store (services/snapshots/workspace.py):
the tree of the work tree as a capture would take it, the raw differences between trees
(modes included: a gitlink is a nested repository), the changes from one snapshot to the next
for the whole history in one git process, and the safety snapshot taken before a revert (the
files are written back by snapshot_files.write_paths). Only services/timetravel/revert.py and
services/timetravel/history.py use it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from . import workspace

ABSENT = "000000"
SYMLINK = "120000"
GITLINK = "160000"  # a nested repository: git records only its checked-out commit


@dataclass(frozen=True)
class RawChange:
    """One path that differs between two trees, with its mode and blob on each side
    (`ABSENT` where a side has no such path)."""

    path: str
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str


def _raw(output: bytes) -> list[RawChange]:
    parts = output.split(b"\0")
    out = []
    i = 0
    while i < len(parts) - 1:
        head = parts[i]
        if not head.startswith(b":"):
            i += 1
            continue
        old_mode, new_mode, old_blob, new_blob, _ = head[1:].decode().split(" ")
        out.append(RawChange(os.fsdecode(parts[i + 1]), old_mode, new_mode, old_blob, new_blob))
        i += 2
    return out


def current_tree(root: str, max_file_bytes: int) -> str:
    """The tree a capture would take of the work tree now (files over the cap left out, as a
    capture leaves them), through a throwaway index: ours stays as it was."""
    git_dir = workspace.ensure_repo(root)
    with workspace.Lock(git_dir):
        return workspace.current_tree(root, git_dir, max_file_bytes)


def raw_changes(root: str, a: str, b: str, paths: list[str] | None = None) -> list[RawChange]:
    """The paths that differ from tree-ish `a` to tree-ish `b`, limited to `paths` (taken
    literally: no glob, any byte) when given."""
    git_dir = workspace.ensure_repo(root)
    out: list[RawChange] = []
    chunks = [None] if paths is None else [paths[i : i + 400] for i in range(0, len(paths), 400)]
    for chunk in chunks:
        if chunk == []:
            continue
        args = ["--literal-pathspecs", "diff-tree", "-r", "-z", "--raw", "--no-renames", a, b]
        out += _raw(workspace.git(root, git_dir, args + (["--", *chunk] if chunk else [])).stdout)
    return out


def tree_paths(root: str, commit: str, under: list[str] | None = None) -> list[str]:
    """Every file and link path in snapshot `commit` (gitlinks left out), those at or under
    `under` only when given."""
    git_dir = workspace.ensure_repo(root)
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    out = []
    for entry in workspace.git(root, git_dir, args).stdout.split(b"\0"):
        head, tab, name = entry.partition(b"\t")
        if not tab or head.startswith(GITLINK.encode()):
            continue
        path = os.fsdecode(name)
        if under is None or any(path == w or path.startswith(w + "/") for w in under):
            out.append(path)
    return out


def steps_changed(root: str, pairs: list[tuple[str, str]]) -> list[list[RawChange]]:
    """For each (before, after) pair of snapshot commits, what changed: one git process for
    all of them (`diff-tree --stdin`), however long the history."""
    if not pairs:
        return []
    git_dir = workspace.ensure_repo(root)
    # A line "X Y" is the diff from Y to X; --always prints X's id even for an empty diff,
    # which marks where each pair's changes begin.
    lines = "".join(f"{after} {before}\n" for before, after in pairs).encode()
    args = ["diff-tree", "--stdin", "--always", "-r", "-z", "--raw", "--no-renames"]
    output = workspace.git(root, git_dir, args, stdin=lines).stdout
    blocks: list[list[RawChange]] = []
    parts = output.split(b"\0")
    i = 0
    while i < len(parts):
        token = parts[i]
        if token.startswith(b":") and blocks and i + 1 < len(parts):
            old_mode, new_mode, old_blob, new_blob, _ = token[1:].decode().split(" ")
            path = os.fsdecode(parts[i + 1])
            blocks[-1].append(RawChange(path, old_mode, new_mode, old_blob, new_blob))
            i += 2
            continue
        if len(token.strip()) == 40:
            blocks.append([])
        i += 1
    if len(blocks) != len(pairs):
        raise workspace.WorkspaceError(
            f"git diff-tree gave {len(blocks)} answers for {len(pairs)} steps"
        )
    return blocks


def tree_of_commit(root: str, commit: str) -> str:
    git_dir = workspace.ensure_repo(root)
    if not workspace.exists(root, git_dir, commit):
        raise workspace.WorkspaceError(f"snapshot {commit[:12]} is not in the snapshot repository")
    return workspace.git(root, git_dir, ["rev-parse", commit + "^{tree}"]).stdout.decode().strip()


def safety_capture(
    root: str, *, label: str, max_file_bytes: int, include: list[str]
) -> workspace.Capture:
    """The snapshot a revert takes before it changes anything: like `capture`, plus the
    files in `include` whatever their size (the revert will touch them, so undo needs them).
    Taken through a throwaway index, so our index never holds a file over the cap."""
    started = time.perf_counter()
    try:
        git_dir = workspace.ensure_repo(root)
        with workspace.Lock(git_dir):
            scratch = workspace.scratch_index(git_dir, "safety", seeded=True)
            try:
                made = workspace.capture_locked(
                    root,
                    git_dir,
                    label=label,
                    max_file_bytes=max_file_bytes,
                    index=scratch,
                    include=include,
                )
            finally:
                if os.path.exists(scratch):
                    os.unlink(scratch)
    except OSError as exc:
        raise workspace.store_error(exc) from exc
    return workspace.Capture(made.commit, made.tree, made.files, time.perf_counter() - started, [])
