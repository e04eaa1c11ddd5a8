"""The one place a revert changes the user's files, and what it checks first.

`screen` turns the paths that differ between a snapshot and the work tree into changes a
revert may make, and names the ones it must leave as they are: anything in or at a nested
repository (a folder with its own `.git`, a gitlink, a submodule, a worktree), and anything
on disk that no snapshot captured (ignored, unreadable, not a regular file, or a folder
holding such files). A file over the snapshot size cap is kept: the revert's safety snapshot
takes it whatever its size.

`apply` makes the changes: deletions first (never recursive, never through a symbolic link),
then the files written from the snapshot by git, then modes and folders. `manifest` records
the type and mode of every path a revert touches and of the folders above them, so that an
undo puts back what git does not record (exact modes, empty folders).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..snapshots import revert_store, workspace

NESTED = "a nested repository: left as it is"
NOT_CAPTURED = "not in any snapshot (ignored, unreadable or not a regular file): left as it is"
# What is on disk where the snapshot has a file, that a revert never opens, removes or writes.
FIFO = "a FIFO (named pipe) is there: not restored, never opened; left as it is"
SOCKET = "a socket is there: not restored, never opened; left as it is"
DEVICE = "a device file is there: not restored, never opened; left as it is"
UNREADABLE = "a file no one could read is there: not restored; left as it is"


@dataclass
class Change:
    """One path a revert changes: `restore` (rewrite), `create` or `delete`; `source` is
    the snapshot commit whose version the path gets (for a deletion: one without it)."""

    action: str
    path: str
    source: str
    large: bool = False  # over the size cap: only the revert's safety snapshot holds it
    conflict: bool = False  # `revert --agent`: someone else changed it too

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"action": self.action, "path": self.path}
        if self.large:
            out["large"] = True
        if self.conflict:
            out["conflict"] = True
        return out


def _ancestors(path: str) -> list[str]:
    """`a/b/c` -> [`a`, `a/b`] (relative folders above the path, outermost first)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


class _Disk:
    """lstat and `.git` look-ups of the work tree, each made once."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") or "/"
        self._stat: dict[str, os.stat_result | None] = {}

    def lstat(self, path: str) -> os.stat_result | None:
        if path not in self._stat:
            try:
                self._stat[path] = os.lstat(os.path.join(self.root, path))
            except OSError:
                self._stat[path] = None
        return self._stat[path]

    def nested_repository(self, path: str) -> str | None:
        """The folder at or above `path` (inside the project) that has a `.git` of its own."""
        for folder in [*_ancestors(path), path]:
            found = self.lstat(folder)
            is_folder = found is not None and stat.S_ISDIR(found.st_mode)
            if is_folder and self.lstat(folder + "/.git") is not None:
                return folder
        return None


def screen(
    root: str,
    wanted: Iterable[tuple[str, revert_store.RawChange]],
    max_file_bytes: int,
) -> tuple[list[Change], list[tuple[str, str]]]:
    """(changes, left): what a revert may do to reach each (source, raw change: source's side
    old, the work tree's side new), and the paths it leaves, with why."""
    disk = _Disk(root)
    changes: list[Change] = []
    left: list[tuple[str, str]] = []
    creates: list[tuple[str, str]] = []
    for source, raw in wanted:
        path = raw.path
        if revert_store.GITLINK in (raw.old_mode, raw.new_mode):
            left.append((path, NESTED))
            continue
        nested = disk.nested_repository(path)
        if nested is not None:
            why = NESTED if nested == path else f"inside the nested repository {nested}/: left"
            left.append((path, why))
        elif raw.new_mode == revert_store.ABSENT:
            creates.append((source, path))
        elif not _is_as_captured(disk.root, path, disk.lstat(path), raw.new_mode):
            # a fifo where git kept the file it knew...
            left.append((path, special(disk.lstat(path)) or NOT_CAPTURED))
        else:
            action = "delete" if raw.old_mode == revert_store.ABSENT else "restore"
            changes.append(Change(action, path, source))
    deleted = {c.path for c in changes if c.action == "delete"}
    folders: list[Change] = []  # a folder on disk where the snapshot has a file
    for source, path in creates:
        blocker = _blocked_by(disk, path)
        if blocker is not None and blocker not in deleted:
            left.append((path, f"{blocker} is in the way and no snapshot has it: left"))
            continue
        found = None if blocker is not None else disk.lstat(path)
        if found is None:
            changes.append(Change("create", path, source))
        elif stat.S_ISREG(found.st_mode) and found.st_size > max_file_bytes:
            if os.access(os.path.join(disk.root, path), os.R_OK):
                changes.append(Change("restore", path, source, large=True))
            else:
                left.append((path, NOT_CAPTURED))
        elif stat.S_ISDIR(found.st_mode):
            folders.append(Change("create", path, source))
        else:
            left.append((path, special(found) or NOT_CAPTURED))
    for change in folders:
        if _only_deleted_below(disk.root, change.path, deleted):
            changes.append(change)
        else:
            left.append((change.path, f"the folder {change.path}/ holds files no snapshot has"))
    return sorted(changes, key=lambda c: c.path), sorted(left)


def special(found: os.stat_result | None) -> str | None:
    """Why the thing on disk (its lstat: never an open, a FIFO would block) is one a revert
    never writes over: a FIFO, a socket, a device. None: anything else."""
    mode = 0 if found is None else found.st_mode
    if stat.S_ISFIFO(mode):
        return FIFO
    if stat.S_ISSOCK(mode):
        return SOCKET
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return DEVICE
    return None


def unrestorable(root: str, path: str, found: os.stat_result) -> str | None:
    """`special`, or a file no one can read (git kept its old entry: whether it differs
    cannot be told). None: a file, link or folder a revert can handle."""
    if stat.S_ISREG(found.st_mode) and not os.access(os.path.join(root, path), os.R_OK):
        return UNREADABLE
    return special(found)


def unchanged_but_unrestorable(
    root: str, paths: Iterable[str], skip: set[str]
) -> list[tuple[str, str]]:
    """(path, why) for each of `paths` (ones the snapshot has) not in `skip` that is on disk
    as something a revert leaves (`unrestorable`). git keeps a tracked file's entry when a
    FIFO or socket takes its place, so the snapshots show no change there: without this
    look at the disk the plan would skip such a path without a word."""
    disk = _Disk(root)
    out = []
    for path in paths:
        if path in skip:
            continue
        found = disk.lstat(path)
        why = unrestorable(disk.root, path, found) if found is not None else None
        if why is not None:
            out.append((path, why))
    return out


def _is_as_captured(root: str, path: str, found: os.stat_result | None, mode: str) -> bool:
    """Whether the thing on disk is what the snapshot could have taken: a link where it has a
    link, a file we can read where it has a file. git keeps its old entry for a file it could
    not read, so the snapshots' word alone is not enough."""
    if found is None:
        return False
    if mode == revert_store.SYMLINK:
        return stat.S_ISLNK(found.st_mode)
    return stat.S_ISREG(found.st_mode) and os.access(os.path.join(root, path), os.R_OK)


def _only_deleted_below(root: str, folder: str, deleted: set[str]) -> bool:
    """Whether everything under `folder` on disk is a file the revert deletes anyway."""
    top = os.path.join(root, folder)
    for dirpath, dirnames, filenames in os.walk(top):
        if ".git" in dirnames or ".git" in filenames:
            return False
        relative = os.path.relpath(dirpath, root)
        for name in filenames:
            if f"{relative}/{name}" not in deleted:
                return False
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)) and f"{relative}/{name}" not in deleted:
                return False
    return True


def _blocked_by(disk: _Disk, path: str) -> str | None:
    """The outermost folder above `path` that is on disk as something else (a file, a link):
    writing `path` means removing it first, so the revert must be deleting it anyway."""
    for folder in _ancestors(path):
        found = disk.lstat(folder)
        if found is None:
            return None
        if not stat.S_ISDIR(found.st_mode):
            return folder
    return None


# --- the manifest: what git does not record ---------------------------------------------------


def manifest(root: str, paths: Iterable[str]) -> dict[str, list[object]]:
    """Type ("f", "l", "d", "-" for absent, "o" other) and mode of each path and of every
    folder above it, as they are now."""
    out: dict[str, list[object]] = {}
    for path in paths:
        for item in [*_ancestors(path), path]:
            if item in out:
                continue
            try:
                found = os.lstat(os.path.join(root, item))
            except OSError:
                out[item] = ["-", 0]
                continue
            mode = found.st_mode
            kind = (
                "l"
                if stat.S_ISLNK(mode)
                else "d"
                if stat.S_ISDIR(mode)
                else "f"
                if stat.S_ISREG(mode)
                else "o"
            )
            out[item] = [kind, stat.S_IMODE(mode)]
    return out


# --- making the changes -----------------------------------------------------------------------


def _full(root: str, path: str) -> str:
    """The path on disk, refused when it is outside the project or any folder on the way is a
    symbolic link (a delete or write there would land somewhere else)."""
    full = os.path.normpath(os.path.join(root, path))
    base = root.rstrip("/") + "/"
    if not full.startswith(base):
        raise workspace.WorkspaceError(f"refusing {path!r}: outside the project")
    real_root = os.path.realpath(root)
    parent = os.path.dirname(full)
    expected = os.path.normpath(os.path.join(real_root, os.path.relpath(parent, root)))
    if os.path.realpath(parent) != expected:
        raise workspace.WorkspaceError(f"refusing {path!r}: a folder above it is a link")
    return full


def apply(
    root: str,
    changes: list[Change],
    write: Callable[[str, list[str]], None],
    before: dict[str, list[object]],
    restore_modes: dict[str, list[object]] | None = None,
) -> list[tuple[str, str]]:
    """Make `changes` in the project; `write(commit, paths)` writes files from a snapshot.
    `before` is the manifest taken just now (modes kept where git's mode agrees);
    `restore_modes`, an undo's manifest: the modes and folders to put back."""
    done: list[tuple[str, str]] = []
    emptied: set[str] = set()
    for change in sorted(changes, key=lambda c: c.path.count("/"), reverse=True):
        if change.action != "delete":
            continue
        full = _full(root, change.path)
        if os.path.lexists(full) and (os.path.islink(full) or not os.path.isdir(full)):
            os.unlink(full)
        emptied.update(_ancestors(change.path))
        done.append(("deleted", change.path))
    _remove_empty(root, emptied)
    for change in changes:  # a folder where the snapshot has a file: emptied above
        full = os.path.join(root, change.path)
        if change.action == "create" and os.path.isdir(full) and not os.path.islink(full):
            _full(root, change.path)
            os.rmdir(full)  # never recursive: screen() saw only deleted files below it
    by_source: dict[str, list[str]] = {}
    for change in changes:
        if change.action != "delete":
            _full(root, change.path)
            by_source.setdefault(change.source, []).append(change.path)
            done.append(("created" if change.action == "create" else "restored", change.path))
    for source, paths in by_source.items():
        write(source, paths)
    for path in (p for paths in by_source.values() for p in paths):
        _keep_mode(root, path, before.get(path))
    if restore_modes is not None:
        _put_back(root, restore_modes)
    return sorted(done, key=lambda d: d[1])


def _remove_empty(root: str, folders: set[str]) -> None:
    """Folders left empty by the deletions go, deepest first (git records no folders; an
    undo puts back any that were there, from its manifest)."""
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        full = os.path.join(root, folder)
        try:
            if not os.path.islink(full):
                os.rmdir(full)
        except OSError:
            pass


def _keep_mode(root: str, path: str, before: list[object] | None) -> None:
    """A rewritten file keeps its own permissions when git's mode (executable or not) agrees
    with them: git records only 644 or 755."""
    if not before or before[0] != "f":
        return
    full = os.path.join(root, path)
    try:
        now = os.lstat(full)
    except OSError:
        return
    old = int(before[1])  # type: ignore[call-overload]
    if stat.S_ISREG(now.st_mode) and bool(old & 0o100) == bool(now.st_mode & 0o100):
        os.chmod(full, old)


def _put_back(root: str, modes: dict[str, list[object]]) -> None:
    """An undo: folders that were there come back, ones that were not go if empty; files
    and folders get their modes back."""
    for path in sorted(modes, key=lambda p: p.count("/")):
        kind, mode = modes[path][0], int(modes[path][1])  # type: ignore[call-overload]
        full = os.path.join(root, path)
        if kind == "d":
            if not os.path.lexists(full):
                os.mkdir(full)
            if os.path.isdir(full) and not os.path.islink(full):
                os.chmod(full, mode)
        elif kind == "f" and os.path.isfile(full) and not os.path.islink(full):
            os.chmod(full, mode)
    for path in sorted(modes, key=lambda p: p.count("/"), reverse=True):
        full = os.path.join(root, path)
        if modes[path][0] == "-" and os.path.isdir(full) and not os.path.islink(full):
            try:
                os.rmdir(full)
            except OSError:
                pass
