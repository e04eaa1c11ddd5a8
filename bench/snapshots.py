#!/usr/bin/env python3
"""What a workspace snapshot costs on large trees: 5,000 and 50,000 files in a git project.

    .venv/bin/python bench/snapshots.py [--files 5000 50000] [--runs 10] [--json]

For each size: the first capture (everything hashed), captures after a few files changed
(what follows a tool call), captures of an unchanged tree, and a restore of 10 changed files;
p50 and p95 in milliseconds. The snapshots go to a scratch state directory, never the user's.
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

from claude_session.services import workspace  # noqa: E402

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


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[max(0, min(len(ordered) - 1, round(len(ordered) * 0.95) - 1))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1)}


def measure(files: int, runs: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="cs-snapbench-"))
    os.environ["CLAUDE_SESSION_STATE_DIR"] = str(scratch / "state")
    try:
        root = scratch / "project"
        root.mkdir()
        paths = make_tree(root, files)
        started = time.perf_counter()
        first = workspace.capture(str(root), label="bench/first")
        first_seconds = time.perf_counter() - started
        changed, unchanged = [], []
        for run in range(runs):
            for k in range(5):  # what a tool call does: a few files changed
                paths[(run * 7 + k * 13) % len(paths)].write_text(f"changed {run} {k}\n")
            started = time.perf_counter()
            workspace.capture(str(root), label=f"bench/changed/{run}")
            changed.append(time.perf_counter() - started)
            started = time.perf_counter()
            workspace.capture(str(root), label=f"bench/same/{run}")
            unchanged.append(time.perf_counter() - started)
        restores = []
        for run in range(runs):
            for k in range(10):
                paths[(run * 11 + k * 17) % len(paths)].write_text(f"to restore {run} {k}\n")
            started = time.perf_counter()
            workspace.restore(str(root), first.commit)
            restores.append(time.perf_counter() - started)
        return {
            "files": files,
            "first_capture_ms": round(first_seconds * 1000, 1),
            "capture_after_5_changes": percentiles(changed),
            "capture_unchanged": percentiles(unchanged),
            "restore_10_files": percentiles(restores),
            "snapshot_dir_bytes": workspace.size_bytes(str(root)),
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [measure(n, args.runs) for n in args.files]
    if args.json:
        print(json.dumps({"git": _git_version(), "results": results}, indent=2))
        return
    print(f"workspace snapshots ({_git_version()}), {args.runs} runs each")
    for r in results:
        print(
            f"{r['files']:>7,} files: first {r['first_capture_ms']:.0f} ms;"
            f" after 5 changes p50 {r['capture_after_5_changes']['p50_ms']:.0f} ms"
            f" p95 {r['capture_after_5_changes']['p95_ms']:.0f} ms;"
            f" unchanged p50 {r['capture_unchanged']['p50_ms']:.0f} ms"
            f" p95 {r['capture_unchanged']['p95_ms']:.0f} ms;"
            f" restore 10 files p50 {r['restore_10_files']['p50_ms']:.0f} ms;"
            f" {r['snapshot_dir_bytes'] / 1e6:.1f} MB"
        )


def _git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


if __name__ == "__main__":
    main()
