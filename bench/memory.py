#!/usr/bin/env python3
"""Memory search at scale, and what recall adds to UserPromptSubmit.

    .venv/bin/python bench/memory.py [--memories 100000] [--queries 200] [--runs 40]
        [--python /path/to/wheel-venv/bin/python] [--json]

Builds a project database with N memories (10-40 words each from a 5,000-word vocabulary,
plus tags), then times `memories.search` (FTS5, bm25) for prompt-like queries (p50, p95), and
the UserPromptSubmit hook process with recall on against the same hook in a project with no
memories, as ratios to `python -I -S -c pass`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import timed  # noqa: E402
from claude_session.core import db, memories  # noqa: E402
from claude_session.services.setup import installer  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"


def vocabulary(n: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


def build(path: Path, count: int, rng: random.Random, words: list[str]) -> None:
    conn = db.connect(str(path))
    categories = memories.CATEGORIES
    now = time.time()
    with db.Immediate(conn):
        for i in range(count):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(10, 40)))
            memories.add(
                conn,
                f"{text} ({i})",
                categories[i % len(categories)],
                "project",
                now,
                tags=[rng.choice(words), rng.choice(words)],
                source="learned" if i % 3 else "user",
            )
    conn.close()


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[max(0, min(len(ordered) - 1, round(len(ordered) * 0.95) - 1))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2), "p95_ms": round(p95 * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(7)
    words = vocabulary(5000, rng)
    scratch = Path(tempfile.mkdtemp(prefix="cs-membench-"))
    os.environ["CLAUDE_SESSION_STATE_DIR"] = str(scratch / "state")
    os.environ["CLAUDE_SESSION_DATA_DIR"] = str(scratch / "data")
    full, empty = scratch / "full", scratch / "empty"
    full.mkdir()
    empty.mkdir()
    started = time.perf_counter()
    build(full / ".claude-session.db", args.memories, rng, words)
    build_seconds = time.perf_counter() - started
    conn = db.connect(str(full / ".claude-session.db"))
    latencies = []
    for _ in range(args.queries):
        query = "please " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 25)))
        started = time.perf_counter()
        memories.search(conn, query, limit=9)
        latencies.append(time.perf_counter() - started)
    conn.close()
    result: dict[str, Any] = {
        "memories": args.memories,
        "build_seconds": round(build_seconds, 1),
        "search": percentiles(latencies),
        "database_bytes": (full / ".claude-session.db").stat().st_size,
        "user_prompt_submit": hook_costs(args.python, full, empty, words, rng, args.runs),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"{args.memories:,} memories (built in {result['build_seconds']} s,"
        f" {result['database_bytes'] / 1e6:.0f} MB):"
        f" search p50 {result['search']['p50_ms']} ms, p95 {result['search']['p95_ms']} ms"
    )
    for label, value in result["user_prompt_submit"].items():
        print(f"  {label}: median {value['median_ms']} ms, ratio {value['ratio']}")


def hook_costs(
    python: str, full: Path, empty: Path, words: list[str], rng: random.Random, runs: int
) -> dict[str, Any]:
    """UserPromptSubmit with recall over the big store vs a project with no memories."""
    template = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    argv = installer.hook_argv("UserPromptSubmit", python)
    samples: dict[str, list[float]] = {"python -I -S -c pass": [], "no memories": [], "100k": []}
    bare = [os.path.realpath(python), "-I", "-S", "-c", "pass"]
    base_env = {
        "PATH": "/usr/bin:/bin",
        "CLAUDE_SESSION_NO_DAEMON": "1",
        "CLAUDE_SESSION_NO_SNAPSHOTS": "1",  # recall's cost alone, no capture process around
        "CLAUDE_SESSION_STATE_DIR": os.environ["CLAUDE_SESSION_STATE_DIR"],
        "CLAUDE_SESSION_DATA_DIR": os.environ["CLAUDE_SESSION_DATA_DIR"],
    }
    for i in range(-1, runs):
        prompt = " ".join(rng.choice(words) for _ in range(12))
        samples["python -I -S -c pass"].append(timed(bare, b"", base_env))
        for label, root in (("no memories", empty), ("100k", full)):
            payload = template | {
                "cwd": str(root),
                "session_id": f"bench-{label}-{i}",
                "prompt": prompt,
            }
            env = base_env | {"CLAUDE_PROJECT_DIR": str(root)}
            samples[label].append(timed(argv, json.dumps(payload).encode(), env))
    floor = statistics.median(samples["python -I -S -c pass"][1:])
    return {
        label: {
            "median_ms": round(statistics.median(values[1:]), 2),
            "ratio": round(statistics.median(values[1:]) / floor, 2),
        }
        for label, values in samples.items()
    }


if __name__ == "__main__":
    main()
