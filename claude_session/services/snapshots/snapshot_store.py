"""Upkeep of a snapshot store (services/snapshots/workspace.py): what killed processes left there is
removed, and each capture's writes are staged in a quarantine (`doctor`'s look at the store:
store_check.py).

Every git command of ours that writes to a store runs under workspace's `Lock` (an flock on a
file beside it). So while we hold that lock, a git lock file in the store (`index.lock`,
`refs/.../x.lock`) can only have been left by a process that was killed (kill -9, the OOM
killer, a reboot); git never removes it itself, and refuses every later command that needs it.
`heal` removes those, and the scratch index files and quarantine folders of processes that
are gone, and logs what it removed.

A capture (`Quarantine`) writes its objects into a fresh folder of its own
(`objects/incoming-<pid>-<random>`, the store's objects still readable as an alternate) and
its index into a copy (`index.new.<pid>`). Only once the commit exists are the new objects
moved into the store, then the ref updated, then the copy renamed over the index. A capture
that fails (a full disk) takes its folder and copy away: the store is as it was before, not
left with half-written objects or an index that names objects the store lacks.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from ...core import log

GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")
QUARANTINE_PREFIX = "incoming-"
# Git moves a pack's files in this order (tmp-objdir.c): its .idx last, once the pack is there.
PACK_ORDER = (".keep", ".pack", ".rev", ".idx")


def pid_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, killed but not yet reaped, does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _scratch_pid(name: str) -> int | None:
    """The pid in a scratch index's name (`index.<purpose>.<pid>`), else None."""
    if not name.startswith("index.") or name.endswith(".lock"):
        return None
    last = name.rsplit(".", 1)[-1]
    return int(last) if last.isdigit() else None


def _quarantine_pid(name: str) -> int | None:
    """The pid in a quarantine folder's name (`incoming-<pid>-<random>`), else None."""
    if not name.startswith(QUARANTINE_PREFIX):
        return None
    pid = name[len(QUARANTINE_PREFIX) :].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def heal(
    git_dir: str, root: str | None = None, *, thorough: bool = False, who: str = "capture"
) -> list[str]:
    """Remove what killed processes left in the store; one phrase per thing removed (each
    also logged as a WARNING for `root`). The caller must hold the store's lock.

    The store's top folder and `objects/` are always looked at (two directory reads); the
    `refs/` tree only when `thorough` or when something was found there (a killed capture
    leaves its quarantine folder, so a lock it left in `refs/` is looked for too)."""
    removed: list[str] = []
    try:
        names = sorted(os.listdir(git_dir))
    except OSError:
        return removed
    for name in names:
        path = os.path.join(git_dir, name)
        if name in GIT_LOCKS or (name.startswith("index.") and name.endswith(".lock")):
            who_left = "a capture" if name.startswith("index") else "a git command"
            _remove(path, f"a stale {name} left by {who_left} that was killed", removed)
        else:
            pid = _scratch_pid(name)
            if pid is not None and not pid_alive(pid):
                _remove(path, f"the index copy {name} of a process that is gone", removed)
    objects = os.path.join(git_dir, "objects")
    try:
        folders = sorted(os.listdir(objects))
    except OSError:
        folders = []
    for name in folders:
        pid = _quarantine_pid(name)
        if pid is not None and not pid_alive(pid):
            what = f"the quarantine objects/{name} of a capture that was killed"
            _remove(os.path.join(objects, name), what, removed)
    if thorough or removed:
        refs = os.path.join(git_dir, "refs")
        for dirpath, _, filenames in os.walk(refs):
            for name in sorted(filenames):
                if name.endswith(".lock"):
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, git_dir)
                    _remove(path, f"a stale {rel} left by a git command that was killed", removed)
    for what in removed:
        log.write(root, "WARNING", who, f"snapshot store {git_dir}: removed {what}")
    return removed


def _remove(path: str, what: str, removed: list[str]) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return
    removed.append(what)


class Quarantine:
    """One capture's writes, staged (see the module's docstring); under the store's lock:

        with Quarantine(git_dir) as q:
            git commands with q.env in their environment and q.index as their index
            q.publish(update_the_ref)

    An exception in the block leaves the store as it was. `index` (default: the store's own)
    is the index file the capture updates: another one (a scratch index) works the same way."""

    def __init__(self, git_dir: str, index: str | None = None) -> None:
        self.git_dir = git_dir
        self.target = index or os.path.join(git_dir, "index")
        self.index = f"{self.target}.new.{os.getpid()}"
        self.objects = ""
        self.env: dict[str, str] = {}
        self._moved: list[str] = []
        self._made: list[str] = []
        self._published = False

    def __enter__(self) -> Quarantine:
        store_objects = os.path.join(self.git_dir, "objects")
        prefix = f"{QUARANTINE_PREFIX}{os.getpid()}-"
        self.objects = tempfile.mkdtemp(prefix=prefix, dir=store_objects)
        self.env = {
            "GIT_OBJECT_DIRECTORY": self.objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": store_objects,
        }
        try:
            _seed(self.target, self.index)
        except BaseException:
            self._discard()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: Any) -> None:
        if kind is not None and not self._published:
            self._take_back()
        self._discard()

    def publish(self, update_ref: Callable[[], None]) -> None:
        """Move the new objects into the store, then `update_ref()` (which makes them
        reachable), then the index copy over the index. Should `update_ref` fail, the objects
        moved are taken out again."""
        self._migrate()
        update_ref()
        self._published = True
        if os.path.exists(self.index):
            os.replace(self.index, self.target)

    def _migrate(self) -> None:
        store_objects = os.path.dirname(self.objects)
        for name in sorted(os.listdir(self.objects)):
            source = os.path.join(self.objects, name)
            if name == "pack":
                files = [f for f in os.listdir(source) if f.startswith("pack-")]
                for file in sorted(files, key=_pack_rank):
                    self._move(source, os.path.join(store_objects, "pack"), file)
            elif len(name) == 2 and _is_hex(name):
                target = os.path.join(store_objects, name)
                if not os.path.lexists(target):  # all new (a first capture): one rename
                    _drop_unfinished(source)
                    os.rename(source, target)
                    self._moved.append(target)
                    continue
                for file in sorted(os.listdir(source)):
                    if _is_hex(file):  # not a tmp_obj_* that git did not finish
                        self._move(source, target, file)

    def _move(self, source_dir: str, target_dir: str, name: str) -> None:
        target = os.path.join(target_dir, name)
        if os.path.lexists(target):
            return  # already in the store (an object is its content): keep that one
        if not os.path.isdir(target_dir):
            os.mkdir(target_dir)
            self._made.append(target_dir)
        os.rename(os.path.join(source_dir, name), target)
        self._moved.append(target)

    def _take_back(self) -> None:
        """Remove the objects moved in (no ref reaches them: the ref update failed)."""
        for path in reversed(self._moved):
            try:
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except OSError:
                pass
        for folder in reversed(self._made):
            try:
                os.rmdir(folder)
            except OSError:
                pass

    def _discard(self) -> None:
        if self.objects:
            shutil.rmtree(self.objects, ignore_errors=True)
        for path in (self.index, self.index + ".lock"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _seed(index: str, copy: str) -> None:
    """The index copy starts as the index, with its modification time: git takes an entry
    changed in the instant its index was written for "racily clean" and hashes it again, which
    a new time on the copy would hide (a same-size edit right after a capture would be missed)."""
    if os.path.exists(copy):
        os.unlink(copy)
    if not os.path.exists(index):
        return  # the first capture: git writes the index
    shutil.copyfile(index, copy)
    times = os.stat(index)
    os.utime(copy, ns=(times.st_atime_ns, times.st_mtime_ns))


def _drop_unfinished(folder: str) -> None:
    """Remove the tmp_obj_* files git did not finish (none unless it failed on one)."""
    for name in os.listdir(folder):
        if not _is_hex(name):
            os.unlink(os.path.join(folder, name))


def _is_hex(name: str) -> bool:
    return bool(name) and all(c in "0123456789abcdef" for c in name)


def _pack_rank(name: str) -> int:
    ends = [i for i, ext in enumerate(PACK_ORDER) if name.endswith(ext)]
    return ends[0] if ends else len(PACK_ORDER)
