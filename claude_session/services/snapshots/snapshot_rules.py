"""What workspace snapshots leave out by rule: secret files (core/secret_files.py) and the
user's `snapshot_exclude`.

The rules reach git twice: appended to the snapshot store's `info/exclude` (after the
project's own lines, so git never even reads such a file), and, after each `git add`, as the
one list `git ls-files --cached --ignored --exclude-from` checks the index against, whose
matches are taken out (services/snapshots/workspace.py). The second step makes the promise hold
whatever else says: a project's `.gitignore` holding `!.env`, or a file a snapshot of an
older version took (the index keeps an entry whatever the excludes say). Lists of paths (a
revert's plan, doctor, the files put back into a snapshot) are checked here with pathspec,
which follows git's pattern rules.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pathspec

from ...core import secret_files
from .. import config_file

RULES_FILE = "claude-session-exclude"  # in the store's info/: the rules alone, for ls-files
SECRET = (
    "a secret file by its name (snapshot rule `{pattern}`): no snapshot holds it; left as it is"
)


def rules(root: str) -> list[str]:
    """The rules for this project: the defaults, then `snapshot_exclude` (trusted only)."""
    values = config_file.load_or_defaults(root).values
    return secret_files.rules(values.get("snapshot_exclude"))


def matcher(patterns: list[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def left_out(root: str, paths: Iterable[str], patterns: list[str] | None = None) -> dict[str, str]:
    """path -> the pattern that leaves it out, for those of `paths` (relative, `/`) a snapshot
    never takes (a folder above one matching counts)."""
    patterns = rules(root) if patterns is None else patterns
    spec = matcher(patterns)
    out = {}
    for path in paths:
        found = spec.check_file(path)
        if found.include and found.index is not None:
            out[path] = patterns[found.index]
    return out


def write_file(git_dir: str, patterns: list[str]) -> str:
    """The rules alone in `info/` (0600, never through a link), rewritten only when changed."""
    target = os.path.join(git_dir, "info", RULES_FILE)
    wanted = "\n".join(patterns) + "\n"
    try:
        with open(target, encoding="utf-8", errors="surrogateescape") as f:
            if f.read() == wanted:
                return target
    except OSError:
        pass
    temporary = target + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(wanted)
    os.replace(temporary, target)
    return target
