#!/usr/bin/env python3
"""What checking memories against their files costs each SessionStart, at 10,000 memories.

    .venv/bin/python bench/memory_staleness.py [--memories 10000] [--runs 10] [--json]

Builds a project with N memories (facts, preferences, skills: what SessionStart gives), each
about a file of its own (4 KB), then times the real SessionStart hook process (a new session
each run, so memories are chosen and checked every time) in four states: no memories at all;
N memories, files as recorded (one stat each of the candidates, no read); every file rewritten
since with another content, before each run (each candidate's file hashed again); and every file
changed but already seen by the check before (the `seen_*` columns: a stat, no read). The
files are left RACY_S + 0.5 s after each rewrite, so what a check sees may be kept. Also the
whole check of all N memories in-process, as `status` and `memory list --stale` pay it.
Figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import timed  # noqa: E402
from claude_session.core import db, memories, memory_files, recall  # noqa: E402
from claude_session.services.setup import installer  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"
CATEGORIES = ("fact", "preference", "skill")
FILE_BYTES = 4096


def write_files(root: Path, count: int, generation: int) -> None:
    for i in range(count):
        body = (f"# file {i}, generation {generation}\n" * 200)[:FILE_BYTES]
        (root / "src" / f"m{i:05d}.py").write_text(body)


def build(root: Path, count: int) -> None:
    (root / "src").mkdir()
    write_files(root, count, 0)
    conn = db.connect(str(root / ".claude-session.db"))
    now = time.time()
    with db.Immediate(conn):
        for i in range(count):
            memory_id, _ = memories.add(
                conn,
                f"module m{i:05d} keeps its state in a dict number {i}",
                CATEGORIES[i % len(CATEGORIES)],
                "project",
                now,
            )
            memory_files.record(conn, memory_id, str(root), [f"src/m{i:05d}.py"], now, None)
    conn.close()


def whole_check(root: Path) -> float:
    """Every memory's files checked, in-process (what `status` counts): milliseconds."""
    conn = db.connect(str(root / ".claude-session.db"))
    try:
        started = time.perf_counter()
        memory_files.stale_count(conn, str(root))
        return (time.perf_counter() - started) * 1000
    finally:
        conn.close()


def recall_ms(root: Path, label: str, runs: int, check: bool, rewrite: bool) -> float:
    """`recall.for_session_start` in-process (what the hook adds for memories), median ms;
    `check` False: without the files' check (no root), for the figure without it."""
    conn = db.connect(str(root / ".claude-session.db"))
    count = db.as_int(conn.execute("SELECT count(*) FROM memory_files").fetchall()[0][0])
    times = []
    try:
        for i in range(runs):
            if rewrite:
                write_files(root, count, 10_000 + i)
                time.sleep(memory_files.RACY_S + 0.5)  # settled: what is seen may be kept
            started = time.perf_counter()
            recall.for_session_start(
                conn, f"{label}-{i}", time.time(), 1500, str(root) if check else None
            )
            times.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="cs-stalebench-"))
    os.environ["CLAUDE_SESSION_STATE_DIR"] = str(scratch / "state")
    os.environ["CLAUDE_SESSION_DATA_DIR"] = str(scratch / "data")
    full, empty = scratch / "full", scratch / "empty"
    full.mkdir()
    empty.mkdir()
    started = time.perf_counter()
    build(full, args.memories)
    db.connect(str(empty / ".claude-session.db")).close()
    built = time.perf_counter() - started
    template = json.loads((FIXTURES / "SessionStart.startup.json").read_text())
    argv = installer.hook_argv("SessionStart", args.python)
    env = {
        "PATH": "/usr/bin:/bin",
        "CLAUDE_SESSION_NO_DAEMON": "1",
        "CLAUDE_SESSION_NO_SNAPSHOTS": "1",
        "CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"],
        "CLAUDE_SESSION_DATA_DIR": os.environ["CLAUDE_SESSION_DATA_DIR"],
    }

    def start(root: Path, label: str, i: int) -> float:
        payload = template | {"cwd": str(root), "session_id": f"bench-{label}-{i}"}
        return timed(argv, json.dumps(payload).encode(), env | {"CLAUDE_PROJECT_DIR": str(root)})

    samples: dict[str, list[float]] = {k: [] for k in ("no memories", "unchanged", "changed")}
    seen: list[float] = []
    checks: dict[str, float] = {"unchanged": whole_check(full)}
    for i in range(-1, args.runs):  # the first run of each warms the caches, not counted
        samples["no memories"].append(start(empty, "empty", i))
        samples["unchanged"].append(start(full, "same", i))
    for i in range(-1, args.runs):
        write_files(full, args.memories, i + 2)  # every file another content, new mtime
        time.sleep(memory_files.RACY_S + 0.5)  # settled: what the check sees may be kept
        samples["changed"].append(start(full, "changed", i))
        seen.append(start(full, "seen", i))
    checks["all changed"] = whole_check(full)
    in_process = {
        "no check": recall_ms(full, "nocheck", args.runs, False, False),
        "unchanged": recall_ms(full, "same2", args.runs, True, False),
        "all changed, first look": recall_ms(full, "changed2", args.runs, True, True),
        "all changed, seen before": recall_ms(full, "seen2", args.runs, True, False),
    }
    given = json.loads(
        subprocess.run(
            argv,
            input=json.dumps(template | {"cwd": str(full), "session_id": "look"}).encode(),
            capture_output=True,
            env=env | {"CLAUDE_PROJECT_DIR": str(full)},
        ).stdout
        or b"{}"
    )
    context = str(given.get("hookSpecificOutput", {}).get("additionalContext", ""))
    result: dict[str, Any] = {
        "memories": args.memories,
        "build_seconds": round(built, 1),
        "session_start_median_ms": {
            k: round(statistics.median(v[1:]), 1) for k, v in samples.items()
        }
        | {"changed, seen before": round(statistics.median(seen[1:]), 1)},
        "recall_in_process_median_ms": in_process,
        "whole_check_ms": {k: round(v, 1) for k, v in checks.items()},
        "stale_lines_given": context.count("POSSIBLY STALE"),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.memories:,} memories about a file each (built in {result['build_seconds']} s)")
    for label, value in result["session_start_median_ms"].items():
        print(f"  SessionStart, {label}: median {value} ms")
    for label, value in in_process.items():
        print(f"  recall.for_session_start in-process, {label}: median {value} ms")
    for label, value in result["whole_check_ms"].items():
        print(f"  every memory checked in-process, {label}: {value} ms")
    print(f"  memories given marked possibly stale after a change: {result['stale_lines_given']}")


if __name__ == "__main__":
    main()
