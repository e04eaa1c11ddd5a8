"""Workspace snapshots in claude-session's own git directory, never the user's repository.

A snapshot repository per project lives under the user's state directory
(`<state>/snapshots/<folder>-<hash>.git`), with the project as its work tree and an index of
its own: `git add -A` then `write-tree` and `commit-tree` record every file that is not
ignored, untracked files included (`git stash create` would miss those, and refs or objects
written into the user's repository show up in `git log --all` and get pushed). The project's
`.gitignore` files apply as usual, its `.git/info/exclude` is copied into ours at each
capture, and our own files (the database, its spool and log, `.git`, `.jj`) are always left
out, as are files over a size cap and secret files (services/snapshots/snapshot_rules.py). Each
capture's commit is kept reachable by one ref per label, so `prune` can drop exactly the
ones no frame needs.

The user's index is never used (its stat cache would need its objects); ours keeps its own
stat data, so a capture re-hashes only files whose stat data changed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core.paths import DB_NAME, user_state_dir
from ...core.redact import redact  # git's messages are stored (frame notes): whole, then cut
from . import snapshot_rules, snapshot_store

if TYPE_CHECKING:
    import apsw

GIT_TIMEOUT_SECONDS = 120.0
LOCK_WAIT_SECONDS = 60.0
DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
ALWAYS_EXCLUDED = (f"/{DB_NAME}*", ".git", ".jj/", ".claude-session-fork-*")
AUTHOR = ("claude-session", "claude-session@localhost")
REF_PREFIX = "refs/snapshots/"
FROM_STDIN = ("--pathspec-from-file=-", "--pathspec-file-nul")  # paths as NUL-ended bytes


class WorkspaceError(Exception):
    """A snapshot or restore that cannot be done (git missing, a planted link, a failure)."""


@dataclass(frozen=True)
class Capture:
    commit: str
    tree: str
    files: int
    seconds: float
    skipped_large: list[str] = field(default_factory=list)


def snapshot_dir(root: str) -> str:
    """Our git directory for this project: a readable name plus a hash of its real path."""
    real = os.path.realpath(root)
    slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real))
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(user_state_dir(), "snapshots", f"{slug[:40] or 'root'}-{digest}.git")


def ensure_repo(root: str) -> str:
    """Create our snapshot repository (0700) if needed; refuse planted symbolic links."""
    git_dir = snapshot_dir(root)
    parent = os.path.dirname(git_dir)
    for folder in (os.path.dirname(parent), parent, git_dir):
        if os.path.islink(folder):
            raise WorkspaceError(f"refusing {folder}: it is a symbolic link we did not make")
    os.makedirs(parent, mode=0o700, exist_ok=True)
    if not os.path.isfile(os.path.join(git_dir, "claude-session-ready")):
        with Lock(git_dir):  # two first captures at once: one creates, the other waits
            if not os.path.isfile(os.path.join(git_dir, "claude-session-ready")):
                snapshot_store.heal(git_dir, root)  # a config.lock of a killed first capture
                _create_repo(root, git_dir)
    if os.path.islink(os.path.join(git_dir, "info")):
        raise WorkspaceError(f"refusing {git_dir}/info: it is a symbolic link we did not make")
    return git_dir


def _create_repo(root: str, git_dir: str) -> None:
    os.makedirs(git_dir, mode=0o700, exist_ok=True)
    git(root, git_dir, ["init", "-q", "--bare", git_dir], work_tree=False)
    for key, value in (
        ("core.bare", "false"),
        ("core.autocrlf", "false"),
        ("core.safecrlf", "false"),
        ("core.fileMode", "true"),
        ("core.symlinks", "true"),
        ("core.untrackedCache", "true"),
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("gc.auto", "0"),
        ("commit.gpgSign", "false"),
    ):
        git(root, git_dir, ["config", key, value], work_tree=False)
    hooks = os.path.join(git_dir, "hooks")
    if os.path.isdir(hooks) and not os.path.islink(hooks):
        for name in os.listdir(hooks):  # git's samples: never run, only take space
            os.unlink(os.path.join(hooks, name))
    fd = os.open(
        os.path.join(git_dir, "claude-session-ready"),
        os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW,
        0o600,
    )
    os.close(fd)


def _env(
    git_dir: str,
    root: str | None,
    index: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`extra`: a quarantine's object directories (snapshot_store.Quarantine.env)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in ("HOME", "XDG_CONFIG_HOME")
    }
    env |= {
        "GIT_DIR": git_dir,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,  # the user's global config (hooks, filters) stays out
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": AUTHOR[0],
        "GIT_AUTHOR_EMAIL": AUTHOR[1],
        "GIT_COMMITTER_NAME": AUTHOR[0],
        "GIT_COMMITTER_EMAIL": AUTHOR[1],
        "HOME": git_dir,  # no ~/.gitconfig, no credential helpers
        "LC_ALL": "C",
        # No optional writes: `git add` asks a nested repository for its status, which would
        # otherwise refresh (rewrite) that repository's own index.
        "GIT_OPTIONAL_LOCKS": "0",
    }
    if root is not None:
        env["GIT_WORK_TREE"] = root
    env["GIT_INDEX_FILE"] = index or os.path.join(git_dir, "index")
    return env | dict(extra or {})


def git(
    root: str | None,
    git_dir: str,
    args: list[str],
    *,
    work_tree: bool = True,
    index: str | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git args` on the store `git_dir` (with `root` as its work tree unless
    `work_tree` is False), in an environment of its own (`env`: a quarantine's); a failure,
    a missing git or a timeout is a WorkspaceError (`check=False`: the caller reads it).

    Not core/usergit, the runner of git in the user's repository: this one runs git on our
    snapshot repository, whose environment is the opposite of the user's (every GIT_ variable
    replaced, our GIT_DIR, index and author, no user or system config, HOME moved away)."""
    try:
        done = subprocess.run(
            ["git", *args],
            input=stdin,
            capture_output=True,
            env=_env(git_dir, root if work_tree else None, index, env),
            cwd=root if work_tree and root else git_dir if os.path.isdir(git_dir) else None,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as exc:
        raise WorkspaceError("git is not installed: workspace snapshots need it") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceError(f"git {args[0]} took longer than {GIT_TIMEOUT_SECONDS:g}s") from exc
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise WorkspaceError(f"git {args[0]} failed: {redact(message)[:400]}")
    return done


class Lock:
    """Captures and restores of one project, one at a time (flock on a file beside our
    directory, so that creating the directory is serialised too). Every git command of ours
    that writes to the store runs under it: a git lock file found there while we hold it is
    stale (snapshot_store.heal). `wait=0`: fail at once if it is held (doctor)."""

    def __init__(self, git_dir: str, wait: float = LOCK_WAIT_SECONDS) -> None:
        self.path = git_dir + ".lock"
        self.fd = -1
        self.wait = wait

    def __enter__(self) -> Lock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    state = "stuck" if self.wait else "running"
                    raise WorkspaceError(f"another snapshot of this project is {state}") from None
                time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


def write_excludes(root: str, git_dir: str, large: list[str]) -> None:
    """Our info/exclude: our files, the project's own exclude file, the snapshot rules (after
    the project's lines: its `!` cannot undo them), and the large files; and the rules alone
    beside it (`_drop_excluded`)."""
    lines = list(ALWAYS_EXCLUDED)
    own = os.path.join(root, ".git", "info", "exclude")
    if os.path.isfile(own) and not os.path.islink(own):
        with open(own, encoding="utf-8", errors="replace") as f:
            lines += [line.rstrip("\n") for line in f]
    rules = snapshot_rules.rules(root)
    lines += rules
    # A name with a line break cannot be a pattern: `_drop` takes it out after the add.
    lines += ["/" + _escape_pattern(path) for path in large if "\n" not in path]
    info = os.path.join(git_dir, "info")
    os.makedirs(info, mode=0o700, exist_ok=True)
    snapshot_rules.write_file(git_dir, rules)
    target = os.path.join(info, "exclude")
    wanted = "\n".join(lines) + "\n"
    try:
        with open(target, encoding="utf-8", errors="surrogateescape") as f:
            if f.read() == wanted:
                return  # unchanged: rewriting it would throw away git's untracked cache
    except OSError:
        pass
    temporary = target + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(wanted)  # a name that is not UTF-8 is written back as the bytes it was
    os.replace(temporary, target)


def _drop(
    root: str,
    git_dir: str,
    index: str | None,
    large: list[str],
    env: Mapping[str, str] | None = None,
) -> None:
    """Take files out of an index (over the cap, left out by rule), each name taken literally
    (any byte)."""
    if large:
        git(
            root,
            git_dir,
            ["--literal-pathspecs", "rm", "-q", "-f", "--cached", "--ignore-unmatch", *FROM_STDIN],
            index=index,
            env=env,
            stdin=b"\0".join(os.fsencode(p) for p in large) + b"\0",
        )


def _drop_excluded(
    root: str, git_dir: str, index: str | None, env: Mapping[str, str] | None = None
) -> list[str]:
    """Take out of `index` every entry the snapshot rules leave out, whatever put it there (a
    project's `.gitignore` with `!.env`, a capture of an older version): git's own matching
    of the rules file alone, over the whole index in one process. Returns them."""
    listed = os.path.join(git_dir, "info", snapshot_rules.RULES_FILE)
    done = git(
        root,
        git_dir,
        ["ls-files", "-z", "--cached", "--ignored", f"--exclude-from={listed}"],
        index=index,
        env=env,
    )
    found = sorted({os.fsdecode(p) for p in done.stdout.split(b"\0") if p})
    _drop(root, git_dir, index, found, env)
    return found


def left_out_on_disk(root: str) -> dict[str, str]:
    """path -> rule, for the files in the project now that the snapshot rules leave out (not
    those inside a folder the project's own rules ignore: git does not walk those)."""
    git_dir = ensure_repo(root)
    write_excludes(root, git_dir, [])
    found: set[str] = set()
    # The ignored ones (folders the project ignores shown as one name, never walked), and the
    # others: a project's `.gitignore` holding `!.env` makes it one of those.
    for ignored in (["--ignored", "--directory"], []):
        args = ["ls-files", "-z", "--others", "--exclude-standard", *ignored]
        done = git(root, git_dir, args)
        found |= {os.fsdecode(p).rstrip("/") for p in done.stdout.split(b"\0") if p}
    return snapshot_rules.left_out(root, found)


def _escape_pattern(path: str) -> str:
    return "".join("\\" + c if c in "*?[]\\!# " else c for c in path)


def _large_files(root: str, git_dir: str, max_bytes: int, index: str | None = None) -> list[str]:
    """Files (not ignored) over the cap among the new and modified ones, found by git's own
    walk, so ignored trees such as node_modules are never walked by us, and files unchanged
    since the last capture are not looked at again."""
    listed = git(
        root,
        git_dir,
        ["ls-files", "-z", "--others", "--modified", "--exclude-standard"],
        index=index,
    ).stdout.split(b"\0")
    large = []
    for raw in listed:
        if not raw:
            continue
        path = os.fsdecode(raw)
        try:
            info = os.lstat(os.path.join(root, path))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            large.append(path)
    return sorted(set(large))


def capture(root: str, *, label: str, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Capture:
    """Snapshot the project's files now; the commit is kept under a ref named after `label`.

    Each snapshot is a root commit (no parent): objects are shared by content anyway, and a
    dropped snapshot's files can then really be freed by `prune`. One that fails (a full disk)
    or is killed leaves the store as it was, and the next one starts clean (snapshot_store)."""
    started = time.perf_counter()
    try:
        git_dir = ensure_repo(root)
        with Lock(git_dir):
            made = capture_locked(root, git_dir, label=label, max_file_bytes=max_file_bytes)
    except OSError as exc:
        raise store_error(exc) from exc
    return Capture(
        made.commit, made.tree, made.files, time.perf_counter() - started, made.skipped_large
    )


def capture_locked(
    root: str,
    git_dir: str,
    *,
    label: str,
    max_file_bytes: int,
    index: str | None = None,
    include: list[str] | None = None,
) -> Capture:
    """A capture, `Lock` held, through `index` (default: ours; a scratch index works too):
    what killed captures left is removed first, and the objects and the index are written in
    a quarantine, published only once the commit exists. `seconds` is left at 0."""
    try:
        snapshot_store.heal(git_dir, root)
        with snapshot_store.Quarantine(git_dir, index) as q:
            large = _stage(root, git_dir, q.index, max_file_bytes, q.env)
            if include:  # a revert's safety snapshot: what it will touch, whatever its size
                git(
                    root,
                    git_dir,
                    ["--literal-pathspecs", "add", "-f", "--ignore-errors", *FROM_STDIN],
                    index=q.index,
                    env=q.env,
                    stdin=b"\0".join(os.fsencode(p) for p in include) + b"\0",
                    check=False,
                )
            made = _commit_index(root, git_dir, q, label)
    except OSError as exc:
        raise store_error(exc) from exc
    return Capture(made.commit, made.tree, made.files, 0.0, large)


def _commit_index(root: str, git_dir: str, q: snapshot_store.Quarantine, label: str) -> Capture:
    """The quarantine's index as a snapshot commit, kept under the ref named after `label`,
    and the quarantine published. `seconds` is left at 0."""
    tree = git(root, git_dir, ["write-tree"], index=q.index, env=q.env).stdout.decode().strip()
    args = ["commit-tree", tree, "-m", f"claude-session snapshot {label}"]
    commit = git(root, git_dir, args, env=q.env).stdout.decode().strip()
    files = _index_entries(q.index)
    q.publish(lambda: update_refs(root, git_dir, {REF_PREFIX + ref_name(label): commit}))
    return Capture(commit, tree, files, 0.0)


def capturable(root: str, git_dir: str, paths: list[str]) -> set[str]:
    """Those of `paths` a capture would take: not ignored (the project's rules and ours), not
    in or at a nested repository, not under a link."""
    out = set()
    for path in paths:
        parts = path.split("/")
        if ".git" in parts or any(p in ("", ".", "..") for p in parts):
            continue
        prefixes = ["/".join(parts[:n]) for n in range(1, len(parts))]
        if any(os.path.islink(os.path.join(root, p)) for p in prefixes):
            continue
        if any(os.path.lexists(os.path.join(root, p, ".git")) for p in [*prefixes, path]):
            continue
        out.add(path)
    if not out:
        return out
    write_excludes(root, git_dir, [])  # the rules alone, not the large files of the last capture
    done = git(
        root,
        git_dir,
        ["check-ignore", "--no-index", "-z", "--stdin"],
        stdin=b"\0".join(os.fsencode(p) for p in sorted(out)) + b"\0",
        check=False,
    )
    out -= {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}
    return out - set(snapshot_rules.left_out(root, out))  # whatever a `.gitignore` re-includes


def _stage(
    root: str,
    git_dir: str,
    index: str | None,
    max_file_bytes: int | None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """`index` made to hold the work tree as a capture takes it: every file not ignored, but
    those over `max_file_bytes` (None: no cap), which it returns."""
    write_excludes(root, git_dir, [])
    large = [] if max_file_bytes is None else _large_files(root, git_dir, max_file_bytes, index)
    if large:
        write_excludes(root, git_dir, large)
        # An exclude does not apply to a file already in the index (one that grew).
        _drop(root, git_dir, index, large, env)
    add_all(root, git_dir, index, env=env)
    _drop(root, git_dir, index, [p for p in large if "\n" in p], env)
    _drop_excluded(root, git_dir, index, env)
    return large


def store_error(exc: OSError) -> WorkspaceError:
    """An error of ours, not git's (the quarantine, the index copy, the exclude file), with
    its reason: "No space left on device" is what the frame's note must say."""
    where = f" ({exc.filename})" if exc.filename else ""
    return WorkspaceError(f"snapshot failed: {exc.strerror or exc}{where}")


def update_refs(root: str, git_dir: str, refs: dict[str, str]) -> None:
    """Set `refs` (ref -> commit) at once: `update-ref --stdin` is all or nothing. Should git
    fail (or time out) after they were written after all, that is success: the quarantine
    must not take back objects a ref reaches."""
    lines = "".join(f"update {ref} {commit}\n" for ref, commit in refs.items())
    try:
        git(root, git_dir, ["update-ref", "--stdin"], stdin=lines.encode())
    except WorkspaceError:
        names = ["--format=%(refname) %(objectname)", *refs]
        listed = git(root, git_dir, ["for-each-ref", *names], check=False).stdout
        found = listed.decode().splitlines()
        now = dict(line.split(" ", 1) for line in found if " " in line)
        if any(now.get(ref) != commit for ref, commit in refs.items()):
            raise


def _index_entries(index: str) -> int:
    """The number of files in a git index, from its header ("DIRC", version, count)."""
    try:
        with open(index, "rb") as f:
            header = f.read(12)
    except FileNotFoundError:
        return 0
    return int.from_bytes(header[8:12], "big") if header[:4] == b"DIRC" else 0


# Git leaves a file out and goes on (`--ignore-errors`) when it cannot write its object either:
# that is a snapshot missing a file, not an unreadable file.
STORE_WRITE_ERRORS = (b"No space left", b"Disk quota", b"Read-only file system", b"unable to write")


def add_all(
    root: str, git_dir: str, index: str | None = None, *, env: Mapping[str, str] | None = None
) -> None:
    """`git add -A`: a file that cannot be read (permissions) is left out, not fatal; a store
    that cannot be written is."""
    args = ["add", "-A", "--ignore-errors", "."]
    done = git(root, git_dir, args, index=index, check=False, env=env)
    if done.returncode != 0 and (
        b"fatal:" in done.stderr or any(e in done.stderr for e in STORE_WRITE_ERRORS)
    ):
        message = done.stderr.decode("utf-8", "replace").strip()
        raise WorkspaceError(f"git add failed: {redact(message)[:400]}")


def ref_name(label: str) -> str:
    """The ref name (under REF_PREFIX) a snapshot labelled `label` is kept under."""
    safe = "".join(c if c.isalnum() or c in "-_/." else "_" for c in label).strip("/.")
    return safe.replace("..", "_").replace("//", "/") or "unnamed"


def exists(root: str, git_dir: str, commit: str) -> bool:
    """Whether the store holds `commit`."""
    done = git(root, git_dir, ["cat-file", "-e", commit + "^{commit}"], check=False)
    return done.returncode == 0


def scratch_index(git_dir: str, purpose: str, seeded: bool) -> str:
    """A throwaway index file; `seeded`, a copy of ours, whose stat data spares re-hashing
    every unchanged file (the difference between ~10 ms and a full read of the tree)."""
    scratch = os.path.join(git_dir, f"index.{purpose}.{os.getpid()}")
    ours = os.path.join(git_dir, "index")
    if seeded and os.path.exists(ours):
        with open(ours, "rb") as src, open(scratch, "wb") as dst:
            dst.write(src.read())
        # The copy keeps the index's own time: git takes an entry changed in the same instant
        # as its index was written for "racily clean" and hashes it again, which a new time on
        # the copy would hide (a same-size edit right after a capture would look unchanged).
        times = os.stat(ours)
        os.utime(scratch, ns=(times.st_atime_ns, times.st_mtime_ns))
    return scratch


def current_tree(root: str, git_dir: str, max_file_bytes: int | None = None) -> str:
    """The tree of the work tree now (files over `max_file_bytes` left out, as a capture
    leaves them; None: no cap), through a throwaway index (ours stays as it was)."""
    scratch = scratch_index(git_dir, "scratch", seeded=True)
    try:
        _stage(root, git_dir, scratch, max_file_bytes)
        return git(root, git_dir, ["write-tree"], index=scratch).stdout.decode().strip()
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def refs(root: str) -> dict[str, str]:
    """label -> commit of every snapshot kept."""
    git_dir = ensure_repo(root)
    done = git(root, git_dir, ["for-each-ref", "--format=%(refname) %(objectname)", REF_PREFIX])
    out = {}
    for line in done.stdout.decode().splitlines():
        name, _, commit = line.partition(" ")
        out[name[len(REF_PREFIX) :]] = commit
    return out


def prune(root: str, keep: set[str]) -> dict[str, int]:
    """Drop every snapshot whose commit is not in `keep`, then let git free the space."""
    git_dir = ensure_repo(root)
    before = size_bytes(root)
    dropped = 0
    with Lock(git_dir):
        snapshot_store.heal(git_dir, root, thorough=True, who="prune")
        for label, commit in refs(root).items():
            if commit not in keep:
                git(root, git_dir, ["update-ref", "-d", REF_PREFIX + label])
                dropped += 1
        git(root, git_dir, ["reflog", "expire", "--expire=now", "--all"], check=False)
        git(root, git_dir, ["gc", "-q", "--prune=now"], check=False)
    return {"dropped": dropped, "bytes_before": before, "bytes_after": size_bytes(root)}


def prune_workspace(conn: apsw.Connection, root: str, max_bytes: int) -> dict[str, int]:
    """Free the snapshots nothing points at; then, while the repository is over `max_bytes`,
    let go of the oldest ended sessions' snapshots, a few sessions at a time."""
    from ...core import frames
    from ...core.db import Immediate

    result = prune(root, frames.kept_commits(conn))
    dropped_sessions = 0
    while result["bytes_after"] > max_bytes:
        oldest = frames.oldest_sessions_with_snapshots(conn, 5)
        if not oldest:
            break
        marks = ", ".join("?" for _ in oldest)
        with Immediate(conn):
            frames.drop_pointers(
                conn, f"SELECT session_id FROM sessions WHERE session_id IN ({marks})", oldest
            )
        dropped_sessions += len(oldest)
        result = prune(root, frames.kept_commits(conn))
    return result | {"sessions_let_go": dropped_sessions}


def snapshot_paths(root: str) -> set[str]:
    """Every path (file or folder) some snapshot of the store holds, from one walk of all of
    them (`rev-list --objects`: each tree and file once, however many snapshots share it)."""
    git_dir = ensure_repo(root)
    done = git(root, git_dir, ["rev-list", "--objects", "--all"], work_tree=False)
    out = set()
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        _, _, path = line.partition(" ")
        if path:
            out.add(path)
    return out


def size_bytes(root: str) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(snapshot_dir(root)):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total
