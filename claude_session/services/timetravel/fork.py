"""Forking a session from a frame, and replaying it headless.

A fork is a new working directory with the files exactly as they were at the frame: a git
worktree (detached, so no branch or ref is added to the user's repository) where the project
is a git work tree with a commit, else a plain folder; then the frame's snapshot is restored
into it, untracked files included. The fork gets a database of its own holding the branch
(parent session and frame, label) and the frame's state; the first Claude Code session
started there claims it and receives that state as context (SessionStart). The parent's
database records the branch too, and a SessionForked (or ReplayStarted) event. Its sessions
record through the project's hooks: in a worktree Claude Code reads the main repository's
local settings; a plain folder gets its own copy (`_carry_hooks`).

A replay is a fork in which `claude -p` runs at once, with the prompt of the turn the frame
belongs to or a new one, recording into the fork's database.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import apsw

from ...core import db, executions, fork_state, frames, provenance, trust, usergit
from ...core.paths import db_path
from ..setup import hook_sources, installer
from ..snapshots import revert_store, snapshot_files, workspace
from . import timetravel

GIT_TIMEOUT_SECONDS = 60.0


class ForkError(Exception):
    """A fork that cannot be made as asked (clear message for the user)."""


def default_path(root: str, ref: timetravel.FrameRef, kind: str = "fork") -> str:
    """Beside the project: `<project>-fork-<session>-<frame>`, `-2`, `-3`... when taken.

    The session id comes from a Claude Code payload: only its safe characters make the name,
    so no `/` or `..` in it can move the fork out of the project's parent folder."""
    parent, name = os.path.split(os.path.abspath(root))  # name is '' for '/' alone
    session = re.sub(r"[^A-Za-z0-9_-]+", "_", ref.session_id).strip("_")[:8] or "session"
    base = os.path.join(parent, f"{name or 'root'}-{kind}-{session}-{ref.frame_no}")
    candidate, n = base, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def fork(
    conn: apsw.Connection,
    root: str,
    address: str,
    *,
    label: str | None = None,
    path: str | None = None,
    kind: str = "fork",
    prompt: str | None = None,
    reset_failures: bool = False,
) -> dict[str, Any]:
    ref = timetravel.resolve(conn, address)
    try:
        commit, _ = timetravel.pointer(conn, ref)
    except timetravel.FrameError as exc:
        raise ForkError(str(exc)) from exc
    found = timetravel.frame(conn, ref)
    state = found["state"]
    untrusted = trust.database_problem(db_path(root))
    if untrusted:  # a clone's database: its recorded state is data, never put before a model
        state = {}
    if reset_failures:
        state = dict(state, errors=[], failed_paths=[])
    # what only this database knows of the frame (its time, what changed up to it), for the
    # fork's first session to be told from its own
    state = fork_state.freeze(conn, ref.session_id, ref.frame_no, state)
    state_text = json.dumps(state, separators=(",", ":"), sort_keys=False)
    dest = os.path.abspath(path or default_path(root, ref, kind))
    if os.path.lexists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
        raise ForkError(f"{dest} already exists and is not empty: choose another --path")
    how = _make_worktree(root, dest)
    snapshot_files.restore(root, commit, None, work_tree=dest)
    if how.startswith("folder"):
        _carry_hooks(root, dest)
    now = time.time()
    digest = frames.content_hash(state_text)
    mac = record_tag(kind, os.path.abspath(root), dest, now)

    def add_branch(target: apsw.Connection) -> int:
        return executions.add_branch(
            target,
            kind=kind,
            parent_session_id=ref.session_id,
            parent_frame_no=ref.frame_no,
            parent_root=os.path.abspath(root),
            path=dest,
            label=label,
            state_hash=digest,
            prompt=prompt,
            now=now,
            mac=mac,
        )

    child = db.connect(db_path(dest))
    try:
        with db.Immediate(child):
            frames.store_state(child, state_text, now)
            add_branch(child)
    finally:
        child.close()
    with db.Immediate(conn):
        frames.store_state(conn, state_text, now)
        branch_id = add_branch(conn)
        detail = {"branch": branch_id, "path": dest, "label": label, "commit": commit}
        name = "ReplayStarted" if kind == "replay" else "SessionForked"
        frames.add_timeline_event(conn, name, ref.session_id, ref.frame_no, now, json.dumps(detail))
    return {
        "branch": branch_id,
        "kind": kind,
        "from": str(ref),
        "path": dest,
        "made_with": how,
        "snapshot_commit": commit,
        "label": label,
        "hooks": hook_sources.Found(Path(dest)).describe(),
        "next": f"cd {shlex.quote(dest)} && claude",
    }


def turn_prompt(conn: apsw.Connection, ref: timetravel.FrameRef) -> str | None:
    """The prompt of the turn the frame belongs to (the one a replay runs again)."""
    rows = conn.execute(
        "SELECT t.prompt FROM frames f JOIN turns t ON t.id = f.turn_id"
        " WHERE f.session_id = ? AND f.frame_no = ?",
        (ref.session_id, ref.frame_no),
    ).fetchall()
    return str(rows[0][0]) if rows and rows[0][0] else None


def replay(
    conn: apsw.Connection,
    root: str,
    address: str,
    *,
    prompt: str | None = None,
    reset_failures: bool = False,
    label: str | None = None,
    path: str | None = None,
    claude: str = "claude",
    extra_args: list[str] | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Fork, then run `claude -p PROMPT` in the fork, recording into its database."""
    ref = timetravel.resolve(conn, address)
    if not prompt and trust.database_problem(db_path(root)):
        raise ForkError(
            "this project's database is not trusted (it came with a clone or a copy), so its"
            " recorded prompt is not run: give one with --prompt, or run `claude-session trust`"
        )
    text = prompt or turn_prompt(conn, ref)
    if not text:
        raise ForkError(f"frame {ref} belongs to no turn with a prompt: give one with --prompt")
    executable = shutil.which(claude)
    if executable is None:
        raise ForkError(f"{claude!r} is not on PATH: install Claude Code, or pass --claude PATH")
    made = fork(
        conn,
        root,
        str(ref),
        label=label,
        path=path,
        kind="replay",
        prompt=text,
        reset_failures=reset_failures,
    )
    argv = [executable, "-p", text, *(extra_args or [])]
    if not _hooks_reach(made["path"]):
        argv += ["--settings", json.dumps(installer.with_ours({}))]
    env = dict(os.environ, CLAUDE_PROJECT_DIR=made["path"])
    done = subprocess.run(
        argv, cwd=made["path"], env=env, capture_output=True, timeout=timeout, check=False
    )
    made["exit_code"] = done.returncode
    made["output"] = done.stdout.decode("utf-8", "replace")[-4000:]
    if done.returncode != 0:
        made["error"] = done.stderr.decode("utf-8", "replace")[-2000:]
    return made


def _hooks_reach(path: str) -> bool:
    """Our hooks are in a settings file Claude Code reads for a session in `path` (a
    worktree's main repository's included), or in the plugin."""
    found = hook_sources.Found(Path(path))
    return bool(found.files) or found.plugin is not None


def _carry_hooks(root: str, dest: str) -> None:
    """A fork made as a plain folder has no settings of the project's: where the project's
    own settings files hold our hooks and nothing else brings them to the fork, its
    `.claude/settings.local.json` gets them, so a `claude` started there records (a git
    worktree needs none: Claude Code reads the main repository's local settings there)."""
    parent = hook_sources.Found(Path(root))
    if not any(scope != "user" for scope, _, _ in parent.files) or _hooks_reach(dest):
        return
    path = installer.settings_path("local", Path(dest))
    installer.write_ours(path, installer.read_settings(path))


def _make_worktree(root: str, dest: str) -> str:
    """A detached git worktree of HEAD where there is one (no branch, no ref added to the
    user's repository), else an empty folder."""
    wait = GIT_TIMEOUT_SECONDS
    head, _, _ = usergit.run(root, ["rev-parse", "--verify", "-q", "HEAD"], timeout=wait)
    if head == 0:
        added, _, err = usergit.run(
            root, ["worktree", "add", "--detach", dest, "HEAD"], timeout=wait
        )
        if added == 0:
            return "git worktree (detached)"
        raise ForkError("git worktree add failed: " + err.strip()[:300])
    os.makedirs(dest, mode=0o755, exist_ok=True)
    return "folder (no git commit to make a worktree from)"


# --- forks made here: listed, and removed ----------------------------------------------------

NOT_WORK = (".git", ".claude-session.db")  # the worktree's link, the fork's own database


def _tagged(kind: str, parent_root: str, path: str, created_at: float | None) -> list[str]:
    """What a fork record's MAC covers, as text."""
    return [str(kind), str(parent_root), str(path), repr(float(created_at or 0.0))]


def record_tag(kind: str, parent_root: str, path: str, created_at: float) -> str | None:
    """Our MAC of a fork record (core/provenance.py); None without a per-user key."""
    try:
        return provenance.tag("fork", *_tagged(kind, parent_root, path, created_at))
    except OSError:
        return None


def _ours(row: dict[str, Any]) -> bool:
    """The record was written by this user's claude-session: its MAC verifies. A record a
    repository planted in a database (any path, any kind) does not."""
    parts = _tagged(row["kind"], row["parent_root"], row["path"], row["created_at"])
    return provenance.verify(row.get("mac"), "fork", *parts)


def remove_hint(path: str) -> str:
    """How to remove a fork (worktree registration included), as a user types it."""
    return f"claude-session fork --remove {shlex.quote(path)} --yes"


def _worktrees(root: str) -> set[str]:
    """The user's repository's registered worktrees (real paths); empty when there is none."""
    code, out, _ = usergit.run(
        root, ["worktree", "list", "--porcelain"], timeout=GIT_TIMEOUT_SECONDS
    )
    if code != 0:
        return set()
    return {
        os.path.realpath(line[len("worktree ") :])
        for line in out.splitlines()
        if line.startswith("worktree ")
    }


def forks(conn: apsw.Connection, root: str) -> list[dict[str, Any]]:
    """The forks (and replays) made from this project, as recorded: where, from which frame,
    whether the folder is still there and whether the user's repository still registers it as
    a worktree."""
    registered = _worktrees(root)
    found = db.rows(
        conn,
        "SELECT id AS branch, kind, path, label, parent_session_id, parent_frame_no,"
        " created_at, child_session_id, parent_root, mac FROM branches ORDER BY id",
    )
    for row in found:
        row["ours"] = _ours(row)
        row["untagged"] = row["mac"] is None  # made before records were tagged, or planted
        del row["mac"], row["parent_root"]
        row["path"] = str(row["path"])
        row["exists"] = os.path.isdir(row["path"])
        row["worktree"] = os.path.realpath(row["path"]) in registered
        removable = row["ours"] and (row["exists"] or row["worktree"])
        row["remove_with"] = remove_hint(row["path"]) if removable else None
    return found


def _own_plain_fork(path: str) -> bool:
    """A fork made as a plain folder (the project is no git work tree): removed only when it
    holds the database we made for it, trusted by its MAC'd identity (core/trust.py)."""
    fork_db = db_path(path)
    return os.path.isfile(fork_db) and trust.database_problem(fork_db) is None


def would_be_lost(root: str, path: str, since: float, commit: str | None = None) -> list[str]:
    """What removing the fork at `path` would lose: files added, changed or deleted there since
    it was made from snapshot `commit` (compared by content, so a deletion or a change that
    kept the file's time shows), files written since `since` that snapshots leave out
    (ignored ones), and commits made there that no branch or tag holds."""
    lost: list[str] = []
    compared: set[str] = set()
    if commit:
        try:
            found = snapshot_files.differences(root, commit, path)
            compared.update(revert_store.tree_paths(root, commit))  # same content: kept
        except workspace.WorkspaceError:
            found = []  # the snapshot pruned: the file times below are all there is
        said = {"A": "added", "D": "deleted", "M": "changed"}
        for status, rel in found:
            compared.add(rel)
            lost.append(f"{said.get(status[:1], 'changed')} since the fork was made: {rel}")
    for folder, dirs, files in os.walk(path):
        rel_folder = os.path.relpath(folder, path)
        dirs[:] = [d for d in dirs if not (rel_folder == "." and d.startswith(NOT_WORK))]
        for name in files:
            rel = os.path.normpath(os.path.join(rel_folder, name))
            if rel.startswith(NOT_WORK) or rel in compared:
                continue
            try:
                changed = os.lstat(os.path.join(folder, name)).st_mtime > since
            except OSError:
                continue
            if changed:
                lost.append(f"changed since the fork was made: {rel}")
    if os.path.exists(os.path.join(path, ".git")):
        wait = GIT_TIMEOUT_SECONDS
        code, refs, _ = usergit.run(path, ["for-each-ref", "--contains", "HEAD"], timeout=wait)
        if code == 0 and not refs.strip():
            _, log, _ = usergit.run(
                path, ["log", "--oneline", "-n", "5", "HEAD", "--not", "--all"], timeout=wait
            )
            shown = "; ".join(log.strip().splitlines()) or "HEAD"
            lost.append(f"commits made in the fork that no branch holds: {shown}")
    return sorted(lost)


def _fork_commit(conn: apsw.Connection, branch: int) -> str | None:
    """The snapshot a fork was made from, as its SessionForked (ReplayStarted) event says."""
    rows = conn.execute(
        "SELECT json_extract(detail, '$.commit') FROM timeline_events"
        " WHERE name IN ('SessionForked', 'ReplayStarted')"
        " AND json_extract(detail, '$.branch') = ? ORDER BY id DESC LIMIT 1",
        (branch,),
    ).fetchall()
    return str(rows[0][0]) if rows and rows[0][0] else None


def remove(conn: apsw.Connection, root: str, folder: str, *, force: bool = False) -> dict[str, Any]:
    """Remove a fork claude-session made (by our records) and its worktree registration in the
    user's repository. Refused for any other folder, and, unless `force`, when work done in
    the fork would be lost (ForkError says what)."""
    wanted = os.path.realpath(os.path.abspath(folder))
    project = os.path.realpath(os.path.abspath(root))
    if wanted == project or project.startswith(wanted + os.sep):
        raise ForkError(f"{wanted} is the project itself (or holds it): never removed")
    ours = [row for row in forks(conn, root) if os.path.realpath(row["path"]) == wanted]
    if not ours:
        raise ForkError(
            f"{wanted} is not a fork claude-session made from this project (by its records):"
            " left alone; `claude-session fork --list` shows the forks"
        )
    row = ours[-1]
    if not row["ours"]:
        why = (
            "it carries no MAC: made by an earlier claude-session, or planted; if it is your"
            f" fork, remove it yourself (`git worktree remove {shlex.quote(wanted)}`)"
            if row["untagged"]
            else "its MAC is not ours: it came with the database"
        )
        raise ForkError(
            f"{wanted} is named by a fork record this user's claude-session did not write"
            f" ({why}): never removed, --yes or not"
        )
    if not row["exists"] and not row["worktree"]:
        raise ForkError(f"{wanted} is gone already, and no worktree is registered for it")
    if not row["worktree"] and not _own_plain_fork(wanted):
        raise ForkError(
            f"{wanted} is neither a worktree git lists for this repository nor a fork folder"
            " holding the database claude-session made for it: never removed, --yes or not"
        )
    made_from = _fork_commit(conn, int(row["branch"]))
    lost = would_be_lost(root, wanted, float(row["created_at"]), made_from) if row["exists"] else []
    if lost and not force:
        shown = "\n  ".join(lost[:20]) + (
            f"\n  ... {len(lost) - 20} more" if len(lost) > 20 else ""
        )
        raise ForkError(
            f"not removed: this would be lost with {wanted}:\n  {shown}\n"
            "keep what you need, or pass --force to remove it anyway"
        )
    wait = GIT_TIMEOUT_SECONDS
    if row["worktree"]:
        code, _, _ = usergit.run(root, ["worktree", "remove", "--force", wanted], timeout=wait)
        if code != 0 and os.path.isdir(wanted):
            shutil.rmtree(wanted)
        usergit.run(root, ["worktree", "prune"], timeout=wait)
    elif os.path.isdir(wanted):
        shutil.rmtree(wanted)
    if wanted in _worktrees(root) or os.path.lexists(wanted):
        raise ForkError(f"{wanted} could not be removed entirely; see `git worktree list`")
    return {
        "branch": row["branch"],
        "path": wanted,
        "was_worktree": row["worktree"],
        "lost": lost,
    }
