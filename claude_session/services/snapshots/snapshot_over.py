"""Snapshots made over an earlier one: a frame committed before later tools ran is the
snapshot taken after them with the files they changed put back as they were
(services/snapshots/before_images.py, services/snapshots/capture.py). A backlog of such frames is
built by one `git fast-import` in the store's quarantine, not by a handful of git commands each: the
capture then keeps up with hooks at any rate. Taking snapshots, and the store they live in,
is services/snapshots/workspace.py."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from . import snapshot_store, workspace


@dataclass(frozen=True)
class Over:
    """One snapshot to make from snapshot `base`, with some files as they were before later
    tool calls changed them (services/snapshots/before_images.py): `put` (path, git mode, bytes: a
    file's content, a link's target) and `drop` (paths the earlier tree did not hold)."""

    label: str
    base: str
    put: list[tuple[str, int, bytes]]
    drop: list[str]


def capture_over_all(root: str, jobs: list[Over]) -> list[workspace.Capture]:
    """The snapshots `jobs` ask for, in their order, all made by one `git fast-import` (a
    backlog of frames costs one process, not a handful of git commands each). A path that is
    ignored, or in a nested repository, stays as `base` has it: a capture never takes it.
    All or none: a failure raises, and the store is as it was."""
    if not jobs:
        return []
    started = time.perf_counter()
    try:
        git_dir = workspace.ensure_repo(root)
        with workspace.Lock(git_dir):
            snapshot_store.heal(git_dir, root)
            paths = [p for job in jobs for p in [*(put[0] for put in job.put), *job.drop]]
            keep = workspace.capturable(root, git_dir, paths)
            bases = sorted({job.base for job in jobs})
            base_trees = _rev_parse(root, git_dir, [b + "^{tree}" for b in bases])
            trees = dict(zip(bases, base_trees, strict=True))
            listed = {base: _tree_paths(root, git_dir, base) for base in bases}
            scratch = workspace.scratch_index(git_dir, "over", seeded=False)
            try:
                with snapshot_store.Quarantine(git_dir, scratch) as q:
                    marks = os.path.join(q.objects, "claude-session-marks")
                    stream, files = _import_stream(jobs, keep, trees, listed)
                    args = ["fast-import", "--quiet", "--done", f"--export-marks={marks}"]
                    workspace.git(root, git_dir, args, stdin=stream, env=q.env, work_tree=False)
                    commits = _marks(marks, len(jobs))
                    made = _rev_parse(root, git_dir, [c + "^{tree}" for c in commits], q.env)
                    refs = [workspace.REF_PREFIX + workspace.ref_name(job.label) for job in jobs]
                    named = dict(zip(refs, commits, strict=True))
                    q.publish(lambda: workspace.update_refs(root, git_dir, named))
            finally:
                if os.path.exists(scratch):
                    os.unlink(scratch)
    except OSError as exc:
        raise workspace.store_error(exc) from exc
    seconds = time.perf_counter() - started
    made_all = zip(commits, made, files, strict=True)
    return [workspace.Capture(c, t, n, seconds) for c, t, n in made_all]


def _import_stream(
    jobs: list[Over], keep: set[str], trees: dict[str, str], listed: dict[str, set[str]]
) -> tuple[bytes, list[int]]:
    """fast-import's input for `jobs`: each a root commit (no parent, as a capture's: `prune`
    can free it) whose tree is its base's with its files put and dropped; mark N+1 is job N's
    commit, blobs follow. And each snapshot's number of files."""
    out: list[bytes] = [b"feature done\n"]
    blobs: dict[bytes, int] = {}
    files = []
    when = int(time.time())
    name, email = (part.encode() for part in workspace.AUTHOR)
    for number, job in enumerate(jobs, start=1):
        changes = []
        present = set(listed[job.base])
        for path, mode, content in job.put:
            if path not in keep:
                continue
            if content not in blobs:
                blobs[content] = len(jobs) + len(blobs) + 1
                blob = b"blob\nmark :%d\ndata %d\n" % (blobs[content], len(content))
                out += [blob, content, b"\n"]
            changes.append(b"M %o :%d %s\n" % (mode, blobs[content], _quoted(path)))
            present.add(path)
        for path in job.drop:
            if path in keep:
                changes.append(b"D %s\n" % _quoted(path))
                present.discard(path)
        message = f"claude-session snapshot {job.label}\n".encode("utf-8", "surrogateescape")
        out.append(
            b"reset refs/claude-session-import\ncommit refs/claude-session-import\nmark :%d\n"
            b"committer %s <%s> %d +0000\ndata %d\n%s"
            % (number, name, email, when, len(message), message)
        )
        out.append(b'M 040000 %s ""\n' % trees[job.base].encode())
        out.extend(changes)
        out.append(b"\n")
        files.append(len(present))
    # The branch fast-import wrote to is left with no commit: it writes no ref at all.
    out.append(b"reset refs/claude-session-import\nfrom " + b"0" * 40 + b"\n\ndone\n")
    return b"".join(out), files


def _quoted(path: str) -> bytes:
    """A path as fast-import reads it whatever it holds: C-quoted, other bytes as octal."""
    out = bytearray(b'"')
    for byte in os.fsencode(path):
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    return bytes(out + b'"')


def _marks(path: str, count: int) -> list[str]:
    """The commits of marks 1..count from fast-import's marks file."""
    with open(path, encoding="ascii") as f:
        marks = dict(line.split() for line in f if line.strip())
    return [marks[f":{n}"] for n in range(1, count + 1)]


def _rev_parse(
    root: str, git_dir: str, names: list[str], env: Mapping[str, str] | None = None
) -> list[str]:
    done = workspace.git(root, git_dir, ["rev-parse", *names], env=env)
    found = done.stdout.decode().split()
    if len(found) != len(names):
        raise workspace.WorkspaceError(f"git rev-parse named {len(found)} objects of {len(names)}")
    return found


def _tree_paths(root: str, git_dir: str, commit: str) -> set[str]:
    done = workspace.git(root, git_dir, ["ls-tree", "-r", "-z", "--name-only", commit])
    return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}


PURGED_PREFIX = "purged/"  # refs/snapshots/purged/<commit>: a rewritten snapshot, until prune


def rewrite_without(root: str, path: str) -> dict[str, str]:
    """`prune --purge`: every snapshot holding `path` (a file, or a folder and all under it)
    made again without it, by one `git fast-import`; old commit -> new. Each new one is kept
    by a ref of its own until the database points at it and `prune` lets go of the old one
    (a purge cut short leaves both, and the database pointing at whichever it did). `path` is
    taken out of the store's index too, whose entry would otherwise keep the content."""
    git_dir = workspace.ensure_repo(root)
    with workspace.Lock(git_dir):
        snapshot_store.heal(git_dir, root)
        commits = sorted(set(workspace.refs(root).values()))
        holds = _holds(root, git_dir, commits, path)
        holding = [c for c, h in zip(commits, holds, strict=True) if h]
        messages = _messages(root, git_dir, holding)
        renamed: dict[str, str] = {}
        with snapshot_store.Quarantine(git_dir) as q:
            workspace.git(
                root,
                git_dir,
                [
                    "--literal-pathspecs",
                    "rm",
                    "-r",
                    "-q",
                    "--cached",
                    "--ignore-unmatch",
                    "--",
                    path,
                ],
                index=q.index,
                env=q.env,
            )
            if holding:
                marks = os.path.join(q.objects, "claude-session-marks")
                stream = _purge_stream(root, git_dir, holding, messages, path)
                args = ["fast-import", "--quiet", "--done", f"--export-marks={marks}"]
                workspace.git(root, git_dir, args, stdin=stream, env=q.env, work_tree=False)
                renamed = dict(zip(holding, _marks(marks, len(holding)), strict=True))
            named = {workspace.REF_PREFIX + PURGED_PREFIX + new: new for new in renamed.values()}
            q.publish(lambda: workspace.update_refs(root, git_dir, named) if named else None)
    return renamed


def holds(root: str, commits: list[str], path: str) -> list[bool]:
    """For each snapshot commit, whether its tree has `path`."""
    return _holds(root, workspace.ensure_repo(root), commits, path)


def _holds(root: str, git_dir: str, commits: list[str], path: str) -> list[bool]:
    """For each commit, whether its tree has `path` (one `cat-file --batch-check`)."""
    if not commits:
        return []
    asked = b"".join(c.encode() + b":" + os.fsencode(path) + b"\n" for c in commits)
    done = workspace.git(
        root, git_dir, ["cat-file", "--batch-check=%(objectname)"], stdin=asked, work_tree=False
    )
    answers = done.stdout.split(b"\n")[: len(commits)]
    return [not a.endswith(b" missing") and bool(a) for a in answers]


def _messages(root: str, git_dir: str, commits: list[str]) -> list[bytes]:
    """Each commit's message, as `cat-file --batch` gives the objects (one process)."""
    if not commits:
        return []
    done = workspace.git(
        root,
        git_dir,
        ["cat-file", "--batch"],
        stdin=b"".join(c.encode() + b"\n" for c in commits),
        work_tree=False,
    )
    out, rest = [], done.stdout
    for _ in commits:
        header, _, rest = rest.partition(b"\n")
        size = int(header.split()[2])
        body, rest = rest[:size], rest[size + 1 :]
        out.append(body.partition(b"\n\n")[2] or b"claude-session snapshot\n")
    return out


def _purge_stream(
    root: str, git_dir: str, commits: list[str], messages: list[bytes], path: str
) -> bytes:
    """fast-import's input: each commit again, a root commit with its tree less `path`."""
    trees = _rev_parse(root, git_dir, [c + "^{tree}" for c in commits])
    out: list[bytes] = [b"feature done\n"]
    when = int(time.time())
    name, email = (part.encode() for part in workspace.AUTHOR)
    for number, (tree, message) in enumerate(zip(trees, messages, strict=True), start=1):
        out.append(
            b"reset refs/claude-session-import\ncommit refs/claude-session-import\nmark :%d\n"
            b"committer %s <%s> %d +0000\ndata %d\n%s"
            % (number, name, email, when, len(message), message)
        )
        out.append(b'M 040000 %s ""\nD %s\n\n' % (tree.encode(), _quoted(path)))
    out.append(b"reset refs/claude-session-import\nfrom " + b"0" * 40 + b"\n\ndone\n")
    return b"".join(out)
