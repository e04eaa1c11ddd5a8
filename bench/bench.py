#!/usr/bin/env python3
"""Hook benchmark: wall time of real hook processes next to the bare interpreter, and a
64-process concurrency storm. Figures, not pass/fail: the README quotes them.

    .venv/bin/python bench/bench.py [--runs 60] [--concurrency 64] [--json]
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it

from claude_session import installer  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"
CASES = [
    ("SessionStart", "SessionStart.startup"),
    ("PreToolUse", "PreToolUse.Bash"),
    ("PostToolUse", "PostToolUse.Edit"),
    ("PostToolUseFailure", "PostToolUseFailure.Bash"),
]


def timed(cmd: list[str], data: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        cmd, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
    }


def payload(name: str, project: Path, i: int) -> bytes:
    data = json.loads(
        (FIXTURES / f"{name}.json").read_text().replace("/home/dev/project", str(project))
    )
    if "tool_use_id" in data:
        data["tool_use_id"] = f"toolu_bench_{i}"  # a new event each run, not a duplicate
    return json.dumps(data).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    venv_python = sys.executable
    base_python = os.path.realpath(venv_python)  # the interpreter the venv was made from
    results: dict[str, object] = {"runs": args.runs, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "project"
        project.mkdir()
        env = {
            "PATH": "/usr/bin:/bin",
            "CLAUDE_PROJECT_DIR": str(project),
            "CLAUDE_SESSION_STATE_DIR": str(Path(scratch) / "state"),
        }
        site = (
            Path(venv_python).parent.parent
            / "lib"
            / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        )
        only_apsw = f"import sys; sys.path[:0] = [{str(site / 'site-packages')!r}]; import apsw"
        floors = {
            "python3 -I -S -c pass": [base_python, "-I", "-S", "-c", "pass"],
            "venv python -c pass": [venv_python, "-c", "pass"],
            "import apsw only (-I -S)": [venv_python, "-I", "-S", "-c", only_apsw],
        }
        commands: dict[str, tuple[list[str], str | None]] = {
            label: (cmd, None) for label, cmd in floors.items()
        }
        for event, name in CASES:
            script = installer.hooks_dir() / installer.script_name(event)
            commands[f"hook {event}"] = ([venv_python, "-I", "-S", str(script)], name)
        samples: dict[str, list[float]] = {label: [] for label in commands}
        for i in range(-1, args.runs):  # run -1 warms the page cache and the .pyc files
            # Round robin, so drift in machine load hits every command alike.
            for label, (cmd, name) in commands.items():
                elapsed = timed(cmd, payload(name, project, i) if name else b"", env)
                if i >= 0:
                    samples[label].append(elapsed)
        table = {label: summary(values) for label, values in samples.items()}
        floor = table["python3 -I -S -c pass"]["median_ms"]
        venv_floor = table["venv python -c pass"]["median_ms"]
        for event, _ in CASES:
            row = table[f"hook {event}"]
            row["x_bare_floor"] = round(row["median_ms"] / floor, 2)
            row["x_venv_floor"] = round(row["median_ms"] / venv_floor, 2)
        results["wall_time"] = table
        results["concurrency"] = storm(args.concurrency, venv_python, Path(scratch))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"Python {results['python']}, {args.runs} runs each, {os.cpu_count()} cores")
    print(f"{'':28} {'median ms':>10} {'p95 ms':>8} {'x bare':>7} {'x venv':>7}")
    for label, row in table.items():
        print(
            f"{label:28} {row['median_ms']:>10.2f} {row['p95_ms']:>8.2f}"
            f" {row.get('x_bare_floor', ''):>7} {row.get('x_venv_floor', ''):>7}"
        )
    c = results["concurrency"]
    print(
        f"\n{c['processes']} concurrent PostToolUse hooks: sent {c['sent']}, stored {c['stored']},"
        f" spooled {c['spooled']}, errors {c['errors']}, wall {c['wall_ms']:.0f} ms"
    )


def storm(n: int, python: str, scratch: Path) -> dict[str, object]:
    import apsw

    project = scratch / "storm"
    project.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_SESSION_STATE_DIR": str(scratch / "state"),
    }
    cmd = [python, "-I", "-S", str(installer.hooks_dir() / "post_tool_use.py")]
    started = time.perf_counter()
    procs = []
    for i in range(n):
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        procs.append((proc, payload("PostToolUse.Edit", project, i)))
    errors = 0
    for proc, data in procs:
        out, _ = proc.communicate(data, timeout=120)
        errors += proc.returncode != 0 or out.strip() != b""
    wall = (time.perf_counter() - started) * 1000
    conn = apsw.Connection(str(project / ".claude-session.db"))
    stored = conn.execute("SELECT count(*) FROM events").fetchall()[0][0]
    spool = project / ".claude-session.db.spool"
    spooled = len(list(spool.glob("*.json"))) if spool.exists() else 0
    log = project / ".claude-session.db.log"
    errors += log.read_text().count(" ERROR [") if log.exists() else 0
    return {
        "processes": n,
        "sent": n,
        "stored": stored,
        "spooled": spooled,
        "errors": errors,
        "wall_ms": round(wall, 1),
    }


if __name__ == "__main__":
    main()
