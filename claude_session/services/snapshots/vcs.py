"""The user's own version control at a frame, read without writing anything there.

git: HEAD and the branch, through `rev-parse` and `symbolic-ref` with optional locks off
(`git status` would refresh, and so write, the user's index). jj, where the project is a jj
repository and `jj` is on PATH: the commit id of `@` and the id of the latest operation, with
`--ignore-working-copy` so that reading them never snapshots the working copy into the user's
repository. Never the change id: it stays with a change when the change is amended, so
"revert to attempt 1" would land on attempt 3's files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from ...core import usergit

TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class Pointer:
    git_head: str | None = None
    git_branch: str | None = None
    jj_commit_id: str | None = None
    jj_operation_id: str | None = None


def pointer(root: str) -> Pointer:
    head = branch = jj_commit = jj_operation = None
    if _inside(root, ".git"):
        head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
        branch = _git(root, "symbolic-ref", "-q", "--short", "HEAD")
    if _inside(root, ".jj") and shutil.which("jj"):
        base = ["jj", "--ignore-working-copy", "--no-pager", "--color", "never", "-R", root]
        jj_commit = _run([*base, "log", "-r", "@", "--no-graph", "-T", "commit_id"])
        jj_operation = _run([*base, "op", "log", "-n", "1", "--no-graph", "-T", "id"])
    return Pointer(head, branch, jj_commit, jj_operation)


def _inside(root: str, marker: str) -> bool:
    """`root` or a folder above it holds `marker` (.git or .jj)."""
    folder = os.path.abspath(root)
    while True:
        if os.path.exists(os.path.join(folder, marker)):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def _git(root: str, *args: str) -> str | None:
    return _first_line(*usergit.run(root, list(args), timeout=TIMEOUT_SECONDS))


def _run(argv: list[str]) -> str | None:
    """jj's, in git's environment (core/usergit): git's go through usergit.run."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
            env=usergit.env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _first_line(done.returncode, done.stdout.decode("utf-8", "replace"), "")


def _first_line(code: int, out: str, _err: str) -> str | None:
    text = out.strip()
    return text.splitlines()[0][:200] if code == 0 and text else None
