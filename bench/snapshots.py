#!/usr/bin/env python3
"""What a workspace snapshot costs on large trees: 5,000 and 50,000 files in a git project, and
trees of large files (`--megabytes 500`: ~500 MB, some files over the 5 MB per-file cap).

    .venv/bin/python bench/snapshots.py [--files 5000 50000] [--megabytes 500] [--runs 10]
        [--first-runs 3] [--hooks] [--json]

For each tree: the first capture (everything hashed; `--first-runs` times, each into an empty
store), captures after a few files changed (what follows a tool call), captures of an
unchanged tree, and a restore of 10 changed files; p50 and p95 in milliseconds. `--hooks`
also times what the agent's path pays, with the real hook processes (no daemon):
a PostToolUse (it only starts the capture process), then at once the next Edit's or Bash's
PreToolUse (neither waits for that snapshot: they keep what they will change, see
services/snapshots/before_images.py), and the same PreToolUse once the snapshot is taken; then how
many frames ended up exact (no note "may hold changes of ..."). The snapshots go to a
scratch state directory, never the user's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it

import apsw  # noqa: E402

from claude_session.services.setup import installer  # noqa: E402
from claude_session.services.snapshots import snapshot_files, workspace  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"
MB = 1024 * 1024

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b"}
GIT_ENV |= {"GIT_COMMITTER_EMAIL": "b@e"}


def make_tree(root: Path, files: int) -> list[Path]:
    """Nested folders of 1-4 KB text files, committed to a git repository."""
    paths = []
    for i in range(files):
        folder = root / f"pkg{i % 50:02d}" / f"mod{(i // 50) % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{i:06d}.py"
        line = f"value_{i} = {i}  # some source text to make the file realistic\n"
        path.write_text(line * (16 + i % 48))
        paths.append(path)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "tree"], check=True, env=env)
    return paths


def make_large_tree(root: Path, megabytes: int) -> list[Path]:
    """~`megabytes` MB: about one byte in nine in files of 6-8 MB (over the default 5 MB cap:
    captures skip them), the rest in files of 64 KB to 2 MB, half of them random (media,
    archives: incompressible) and half text. Only a README is committed: a repository's own
    history does not change what a snapshot costs."""
    paths = []
    big = max(1, megabytes // 60)
    left = megabytes * MB - big * 7 * MB
    for i in range(big):
        path = root / "assets" / f"large{i:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom((6 + i % 3) * MB))
    i = 0
    while left > 0:
        size = min(left, 64 * 1024 * (1 + (i * 7) % 32))
        folder = root / f"data{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"part{i:05d}.{'bin' if i % 2 else 'txt'}"
        if i % 2:
            path.write_bytes(os.urandom(size))
        else:
            line = f"row {i}: some text that compresses, as logs, data and sources do\n"
            path.write_bytes((line * (size // len(line) + 1)).encode()[:size])
        paths.append(path)
        left -= size
        i += 1
    (root / "README.md").write_text("large files\n")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "add", "README.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "readme"], check=True, env=env)
    return paths


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[max(0, min(len(ordered) - 1, round(len(ordered) * 0.95) - 1))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1)}


def measure(
    files: int, runs: int, *, megabytes: int = 0, first_runs: int = 3, hooks: bool = False
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="cs-snapbench-"))
    os.environ["CLAUDE_SESSION_STATE_DIR"] = str(scratch / "state")
    try:
        root = scratch / "project"
        root.mkdir()
        paths = make_large_tree(root, megabytes) if megabytes else make_tree(root, files)
        firsts = []
        for _ in range(first_runs):  # each into an empty store: everything hashed again
            shutil.rmtree(scratch / "state", ignore_errors=True)
            started = time.perf_counter()
            first = workspace.capture(str(root), label="bench/first")
            firsts.append(time.perf_counter() - started)
        changed, unchanged = [], []
        for run in range(runs):
            for k in range(5):  # what a tool call does: a few files changed (hashed whole)
                with open(paths[(run * 7 + k * 13) % len(paths)], "a") as f:
                    f.write(f"changed {run} {k}\n")
            started = time.perf_counter()
            workspace.capture(str(root), label=f"bench/changed/{run}")
            changed.append(time.perf_counter() - started)
            started = time.perf_counter()
            workspace.capture(str(root), label=f"bench/same/{run}")
            unchanged.append(time.perf_counter() - started)
        result: dict[str, Any] = {
            "files": first.files + len(first.skipped_large),
            "tree_bytes": tree_bytes(root),
            "skipped_large": len(first.skipped_large),
            "first_capture": percentiles(firsts),
            "capture_after_5_changes": percentiles(changed),
            "capture_unchanged": percentiles(unchanged),
            "snapshot_dir_bytes": workspace.size_bytes(str(root)),
        }
        if hooks:  # before the restores: they delete the files over the cap (restore's bug)
            result["hooks"] = agent_path(root, paths, runs, scratch)
        restores = []
        for run in range(runs):
            for k in range(10):
                paths[(run * 11 + k * 17) % len(paths)].write_text(f"to restore {run} {k}\n")
            started = time.perf_counter()
            snapshot_files.restore(str(root), first.commit)
            restores.append(time.perf_counter() - started)
        result["restore_10_files"] = percentiles(restores)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def agent_path(root: Path, paths: list[Path], runs: int, scratch: Path) -> dict[str, Any]:
    """Wall times of the real hook processes around a tool call that changed 5 files."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch),
        "CLAUDE_PROJECT_DIR": str(root),
        "CLAUDE_SESSION_STATE_DIR": str(scratch / "hook-state"),  # an empty store: the
        "CLAUDE_SESSION_DATA_DIR": str(scratch / "data"),  # project's first capture too
        "CLAUDE_SESSION_NO_DAEMON": "1",  # no daemon: the hooks do all the work
    }
    session = f"bench-{os.getpid()}"

    def hook(event: str, name: str, tool_use_id: str = "") -> float:
        text = (FIXTURES / f"{name}.json").read_text().replace("/home/dev/project", str(root))
        payload = json.loads(text) | {"session_id": session}
        if tool_use_id and name.endswith("Bash"):
            payload |= {"tool_use_id": tool_use_id, "tool_input": {"command": "make"}}
        elif tool_use_id:
            target = {"file_path": str(paths[0]), "old_string": "a", "new_string": "b"}
            payload |= {"tool_use_id": tool_use_id, "tool_input": target}
        started = time.perf_counter()
        done = subprocess.run(
            installer.hook_argv(event, sys.executable),
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{event} failed: {done.stderr.decode()[-500:]}")
        return time.perf_counter() - started

    def change(run: int) -> None:
        for k in range(5):
            with open(paths[(run * 7 + k * 13) % len(paths)], "ab") as f:
                f.write(f"changed {run} {k}\n".encode())

    hook("SessionStart", "SessionStart.startup")
    first_pre = hook("PreToolUse", "PreToolUse.Edit", "toolu_0")
    _settle(root)
    post, pre_at_once, bash_at_once, pre_settled = [], [], [], []
    tool = "Edit"
    for run in range(1, 3 * runs + 1):
        change(run)  # what the tool did
        post.append(hook("PostToolUse", f"PostToolUse.{tool}", f"toolu_{run - 1}"))
        tool = "Bash" if runs < run <= 2 * runs and run % 2 == 0 else "Edit"
        if run > 2 * runs:  # the model took long enough: the snapshot is taken already
            _settle(root)
            pre_settled.append(hook("PreToolUse", "PreToolUse.Edit", f"toolu_{run}"))
        else:  # the next tool call comes at once, before the snapshot is taken
            took = hook("PreToolUse", f"PreToolUse.{tool}", f"toolu_{run}")
            (bash_at_once if tool == "Bash" else pre_at_once).append(took)
    _settle(root)
    return {
        "first_pre_tool_use_ms": round(first_pre * 1000, 1),
        "post_tool_use": percentiles(post),
        "pre_tool_use_edit_at_once": percentiles(pre_at_once),
        "pre_tool_use_bash_at_once": percentiles(bash_at_once),
        "pre_tool_use_edit_after_snapshot": percentiles(pre_settled),
        "snapshots": dict(_query(root, "SELECT status, count(*) FROM vcs_tags GROUP BY 1")),
        "frames_marked_inexact": _query(
            root, "SELECT count(*) FROM vcs_tags WHERE note LIKE '%may hold changes%'"
        )[0][0],
    }


def _query(root: Path, sql: str) -> list[Any]:
    conn = apsw.Connection(str(root / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    conn.setbusytimeout(5000)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _settle(root: Path, seconds: float = 600.0) -> None:
    """Until the capture process has taken every snapshot asked for."""
    deadline = time.monotonic() + seconds
    while _query(root, "SELECT 1 FROM vcs_tags WHERE status = 'pending' LIMIT 1"):
        if time.monotonic() > deadline:
            raise SystemExit("snapshots still pending after 10 minutes")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="*", default=[5_000, 50_000])
    parser.add_argument("--megabytes", type=int, nargs="*", default=[])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-runs", type=int, default=3)
    parser.add_argument("--hooks", action="store_true", help="also time the real hooks")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    options = {"first_runs": args.first_runs, "hooks": args.hooks}
    results = [measure(n, args.runs, **options) for n in args.files]
    results += [measure(0, args.runs, megabytes=m, **options) for m in args.megabytes]
    if args.json:
        print(json.dumps({"git": _git_version(), "results": results}, indent=2))
        return
    print(f"workspace snapshots ({_git_version()}), {args.runs} runs each")
    for r in results:
        print(
            f"{r['files']:>7,} files, {r['tree_bytes'] / 1e6:.0f} MB"
            f" ({r['skipped_large']} over the cap):"
            f" first p50 {r['first_capture']['p50_ms']:.0f} ms"
            f" p95 {r['first_capture']['p95_ms']:.0f} ms;"
            f" after 5 changes p50 {r['capture_after_5_changes']['p50_ms']:.0f} ms"
            f" p95 {r['capture_after_5_changes']['p95_ms']:.0f} ms;"
            f" unchanged p50 {r['capture_unchanged']['p50_ms']:.0f} ms"
            f" p95 {r['capture_unchanged']['p95_ms']:.0f} ms;"
            f" restore 10 files p50 {r['restore_10_files']['p50_ms']:.0f} ms;"
            f" {r['snapshot_dir_bytes'] / 1e6:.1f} MB"
        )
        if "hooks" in r:
            h = r["hooks"]
            print(
                f"    hooks: first PreToolUse {h['first_pre_tool_use_ms']:.0f} ms;"
                f" PostToolUse {_p(h['post_tool_use'])};"
                f" next Edit's PreToolUse at once {_p(h['pre_tool_use_edit_at_once'])},"
                f" Bash's {_p(h['pre_tool_use_bash_at_once'])};"
                f" after the snapshot {_p(h['pre_tool_use_edit_after_snapshot'])};"
                f" {h['snapshots']}, {h['frames_marked_inexact']} marked inexact"
            )


def _p(values: dict[str, float]) -> str:
    return f"p50 {values['p50_ms']:.0f} ms p95 {values['p95_ms']:.0f} ms"


def _git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


if __name__ == "__main__":
    main()
