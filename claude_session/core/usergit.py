"""The one way we run git in the user's repository (PreCompact's git state, HEAD and branch at
a frame, a fork's worktree, the telemetry's remote and branch).

Whatever the caller, git runs the same way: optional locks off (`git status` would otherwise
refresh, and so write, the user's index: never from a hook, never under the user's own git),
no terminal prompt and no pager (nobody is there to answer), the C locale (messages we parse
or quote), stdin closed, and without the variables that point git at another repository
(`git rev-parse --local-env-vars`: a hook started under a git hook, or from a shell with
GIT_DIR set, must still talk to the project's repository). Our snapshot store is run by
services/snapshots/workspace.py `git`, on purpose not through here: it is our repository,
with an environment of its own (its own GIT_DIR, index and author, no user config).

Imports only `os` at load (the hook runtime reaches it at PreCompact); `subprocess` when run.
"""

import os

# `git rev-parse --local-env-vars` (git 2.43): what git itself clears to enter another repository.
LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)
SET = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}
NOT_INSTALLED = 127  # the shell's status for a command not found
TIMED_OUT = 124  # timeout(1)'s


def env() -> dict[str, str]:
    """The environment git runs in: ours, less LOCAL_ENV_VARS, plus SET."""
    found = {key: value for key, value in os.environ.items() if key not in LOCAL_ENV_VARS}
    return found | SET


def run(
    root: str, args: "list[str]", *, timeout: float, dated: "dict[str, str] | None" = None
) -> "tuple[int, str, str]":
    """`git -C root args`: (exit status, stdout, stderr), decoded as UTF-8 (bad bytes
    replaced); `dated`: GIT_AUTHOR_DATE / GIT_COMMITTER_DATE for a commit made at a fixed
    time (the demo's, so its HEAD is the same on every machine). Never raises for git
    itself: a missing git is (NOT_INSTALLED, "", "git is not installed"), one that ran past
    `timeout` seconds (killed) (TIMED_OUT, "", "git <command> took longer than <timeout>s");
    every caller reads a status other than 0 as "no answer"."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", root, *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env() | (dated or {}),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return TIMED_OUT, "", f"git {args[0] if args else ''} took longer than {timeout:g}s"
    except OSError:  # no git on PATH (or not executable)
        return NOT_INSTALLED, "", "git is not installed"
    return (
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )
