"""What a snapshot holds, read back: compared with another snapshot or with the work tree
(`diff`, the web page), and written into a work tree (`fork`'s restore, a revert's
`write_paths`). Taking snapshots, and the store they live in, is services/snapshots/workspace.py."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from . import snapshot_rules, workspace


def _tree_of(root: str, git_dir: str, ref: str | None) -> str:
    if ref is None:
        return workspace.current_tree(root, git_dir)
    if not workspace.exists(root, git_dir, ref):
        raise workspace.WorkspaceError(f"snapshot {ref[:12]} is not in {git_dir} (pruned?)")
    return ref + "^{tree}"


def _diff_tree(
    root: str, git_dir: str, a: str, b: str, *options: str, paths: list[str] | None = None
) -> bytes:
    args = ["diff-tree", "-r", "--no-renames", *options, a, b]
    return workspace.git(root, git_dir, args + (["--", *paths] if paths else [])).stdout


def _name_status(output: bytes) -> list[tuple[str, str]]:
    parts = output.split(b"\0")
    return [(parts[i].decode(), os.fsdecode(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]


def changed_paths(root: str, a: str, b: str | None) -> list[tuple[str, str]]:
    """(A|M|D|T, path) from snapshot `a` to snapshot `b` (None: the work tree now)."""
    git_dir = workspace.ensure_repo(root)
    with workspace.Lock(git_dir):
        tree_b = _tree_of(root, git_dir, b)
        output = _diff_tree(
            root, git_dir, _tree_of(root, git_dir, a), tree_b, "-z", "--name-status"
        )
    return _name_status(output)


def _store(root: str, read_only: bool) -> tuple[str, Any]:
    """The snapshot store and the lock to read it under. `read_only`: the store as it is,
    never made (a WorkspaceError without one), read without our lock (its lock file is a
    write; git reads committed objects safely beside a writer)."""
    if not read_only:
        git_dir = workspace.ensure_repo(root)
        return git_dir, workspace.Lock(git_dir)
    git_dir = workspace.snapshot_dir(root)
    if not os.path.isfile(os.path.join(git_dir, "claude-session-ready")):
        raise workspace.WorkspaceError(f"no snapshot store for this project ({git_dir})")
    return git_dir, contextlib.nullcontext()


def unified_diff(
    root: str, a: str, b: str | None, paths: list[str] | None = None, read_only: bool = False
) -> str:
    git_dir, lock = _store(root, read_only and b is not None)
    with lock:
        tree_b = _tree_of(root, git_dir, b)
        output = _diff_tree(
            root, git_dir, _tree_of(root, git_dir, a), tree_b, "-p", "--no-color", paths=paths
        )
    return output.decode("utf-8", "replace")


def diff_stat(root: str, a: str, b: str | None, read_only: bool = False) -> list[dict[str, object]]:
    git_dir, lock = _store(root, read_only and b is not None)
    with lock:
        tree_b = _tree_of(root, git_dir, b)
        output = _diff_tree(root, git_dir, _tree_of(root, git_dir, a), tree_b, "-z", "--numstat")
    out: list[dict[str, object]] = []
    for record in output.split(b"\0"):
        fields = record.split(b"\t", 2)
        if len(fields) != 3:
            continue
        added, deleted, path = fields
        out.append(
            {
                "path": os.fsdecode(path),
                "added": None if added == b"-" else int(added),
                "deleted": None if deleted == b"-" else int(deleted),
            }
        )
    return out


def restore(
    root: str, commit: str, paths: list[str] | None = None, *, work_tree: str | None = None
) -> list[tuple[str, str]]:
    """Make the files of `work_tree` (default: the project) equal to the snapshot's, for
    `paths` (default: all): rewrite what differs, create what is missing, delete what the
    snapshot did not have. Ignored files, files the snapshot rules leave out, `.git` and our
    own files are never touched. A
    symbolic link found where a file goes is replaced, never written through."""
    git_dir = workspace.ensure_repo(root)
    target = os.path.abspath(work_tree or root)
    with workspace.Lock(git_dir):
        if not workspace.exists(root, git_dir, commit):
            raise workspace.WorkspaceError(
                f"snapshot {commit[:12]} is not in the snapshot repository"
            )
        workspace.write_excludes(root, git_dir, [])
        # The target's own files: our stat cache helps only when it is the project itself.
        scratch = workspace.scratch_index(
            git_dir, "restore", seeded=target == os.path.abspath(root)
        )
        try:
            changes = _changes(root, git_dir, target, commit, scratch)
            if paths is not None:
                wanted = [p.rstrip("/") for p in paths]
                changes = [
                    c for c in changes if any(c[1] == w or c[1].startswith(w + "/") for w in wanted)
                ]
            done: list[tuple[str, str]] = []
            to_write = []
            for status, path in changes:
                full = _inside(target, path)
                if status.startswith("A"):  # only in the work tree: the snapshot had no such file
                    if os.path.islink(full) or (os.path.lexists(full) and not os.path.isdir(full)):
                        os.unlink(full)
                        _prune_empty_dirs(target, os.path.dirname(full))
                    done.append(("deleted", path))
                else:
                    if os.path.lexists(full) and (os.path.islink(full) or os.path.isdir(full)):
                        _remove(full)
                    to_write.append(path)
                    done.append(("created" if status.startswith("D") else "restored", path))
            if to_write:
                _checkout(target, git_dir, commit, to_write, scratch)
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)
    return done


def _changes(
    root: str, git_dir: str, target: str, commit: str, scratch: str
) -> list[tuple[str, str]]:
    """How the files of `target` differ from snapshot `commit`, as (status, path): A only on
    disk, D only in the snapshot, M changed. Read through the `scratch` index (the target may
    be a fork), with the snapshot rules; an older snapshot's secret file is left out."""
    workspace.add_all(target, git_dir, scratch)
    now_tree = workspace.git(target, git_dir, ["write-tree"], index=scratch).stdout.decode().strip()
    changes = _name_status(
        _diff_tree(target, git_dir, commit + "^{tree}", now_tree, "-z", "--name-status")
    )
    secret = snapshot_rules.left_out(root, [path for _, path in changes])
    return [c for c in changes if c[1] not in secret]


def differences(root: str, commit: str, work_tree: str) -> list[tuple[str, str]]:
    """How the files of `work_tree` (a fork made from snapshot `commit`) differ from it now:
    what `restore` would undo there. Reads only."""
    git_dir = workspace.ensure_repo(root)
    target = os.path.abspath(work_tree)
    with workspace.Lock(git_dir):
        if not workspace.exists(root, git_dir, commit):
            raise workspace.WorkspaceError(
                f"snapshot {commit[:12]} is not in the snapshot repository"
            )
        workspace.write_excludes(root, git_dir, [])
        scratch = workspace.scratch_index(git_dir, "compare", seeded=False)
        try:
            return _changes(root, git_dir, target, commit, scratch)
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)


def write_paths(root: str, commit: str, paths: list[str]) -> None:
    """Write `paths` as snapshot `commit` has them (files, executables, links as links),
    through a throwaway index; nothing else is touched (what a revert writes)."""
    git_dir = workspace.ensure_repo(root)
    with workspace.Lock(git_dir):
        scratch = workspace.scratch_index(git_dir, "write", seeded=False)
        try:
            _checkout(root, git_dir, commit, paths, scratch)
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)


def _checkout(target: str, git_dir: str, commit: str, paths: list[str], index: str) -> None:
    workspace.git(target, git_dir, ["read-tree", commit + "^{tree}"], index=index)
    workspace.git(
        target,
        git_dir,
        ["checkout-index", "-f", "-z", "--stdin"],
        index=index,
        stdin=b"\0".join(os.fsencode(p) for p in paths) + b"\0",
    )


def _inside(root: str, path: str) -> str:
    full = os.path.normpath(os.path.join(root, path))
    if not full.startswith(root.rstrip("/") + "/"):
        raise workspace.WorkspaceError(f"refusing {path!r}: outside the work tree")
    return full


def _remove(path: str) -> None:
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if os.path.islink(child):
                os.unlink(child)
            else:
                os.rmdir(child)
    os.rmdir(path)


def _prune_empty_dirs(root: str, folder: str) -> None:
    """Folders left empty by deleting a created file go too (git records no empty folders)."""
    while folder.startswith(root.rstrip("/") + "/"):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)
