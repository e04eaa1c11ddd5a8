#!/usr/bin/env python3
"""Benchmark at scale: a project database of 1,000,000 events over 2,000 sessions, built
through the real recording path (`event.load` + `events.apply`, as the hook does), then the
hook processes timed on it and on an empty database, as ratios to `python -I -S -c pass`:
relayed (the project's daemon serves them, as once a session has started) and in
process (no daemon: the first hooks of a session, or with it turned off).

    .venv/bin/python bench/at_scale.py [--events 1000000] [--sessions 2000] [--runs 30]
        [--python /path/to/wheel-venv/bin/python] [--cache DIR] [--json] [--cli] [--no-hooks]
        [--floor EVENTS]

The database is cached (per schema version and size) so later runs skip the build; the hooks
run with `--python` (default: this interpreter), e.g. a venv with the wheel installed. The
frame states are packed after the build, as the capture process packs them after each
snapshot. `--cli` times the CLI as whole processes on the database (status, claims --all,
events --session, doctor; the median of `--cli-runs`), `--no-hooks` skips the hook timings.
`--floor N` times, on N new events, how fast the recording path is without any derived state
(the event and its audit row alone) next to the full one, and does nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

from bench import package_dir, start_daemon_process, timed  # noqa: E402  (bench/bench.py, beside this script)
from claude_session.core import config, db, event, events, frames  # noqa: E402
from claude_session.services.setup import installer  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"
RECORDED = "/home/dev/project"


_TEXTS: dict[str, str] = {}
# The history is recorded with its frames and states but without workspace snapshots (as in a
# database upgraded from a release without them): no capture process runs in this build.
HISTORY_CONFIG = dict(config.DEFAULTS, workspace_snapshots=False)
PACK_EVERY = 2_000  # events between two packings of the new frame states (not timed as recording)


def fixture(name: str, root: str) -> dict[str, Any]:
    if name not in _TEXTS:
        _TEXTS[name] = (FIXTURES / f"{name}.json").read_text()
    return json.loads(_TEXTS[name].replace(RECORDED, root))


def session_events(root: str, n: int, per_session: int) -> list[dict[str, Any]]:
    """One realistic session: prompts, reads, edits, commands, a failure ladder, a subagent,
    a compaction; ids and paths vary so nothing is a duplicate."""
    sid = f"bench-{n:06d}"
    out: list[dict[str, Any]] = [fixture("SessionStart.startup", root) | {"session_id": sid}]
    i = 0
    while len(out) < per_session - 6:
        prompt = fixture("UserPromptSubmit", root) | {"session_id": sid}
        prompt["prompt"] = f"step {i} of session {n}: change module {i % 40}"
        out.append(prompt)
        for name in ("Read.subagent", "Edit", "Bash", "Write"):
            pre_name = "PreToolUse." + name.split(".")[0]
            post_name = "PostToolUse." + name
            tool_id = f"t{n}-{i}-{name}"
            pre = fixture(
                pre_name if (FIXTURES / f"{pre_name}.json").exists() else "PreToolUse.Bash", root
            )
            post = fixture(post_name, root)
            for payload in (pre, post):
                payload.update(session_id=sid, tool_use_id=tool_id)
                payload.pop("agent_id", None)
                payload.pop("agent_type", None)
                tool_input = payload.get("tool_input")
                if isinstance(tool_input, dict) and "file_path" in tool_input:
                    tool_input["file_path"] = f"{root}/src/module_{i % 40}.py"
            out += [pre, post]
        if i % 10 == 3:  # a command failing three times, then passing
            for attempt in range(3):
                failure = fixture("PostToolUseFailure.Bash", root) | {"session_id": sid}
                failure["tool_use_id"] = f"f{n}-{i}-{attempt}"
                out.append(failure)
        i += 1
    del out[max(1, per_session - 6) :]  # room for the ending: every session ends, as real ones do
    agent = f"ag{n}"
    out.append(fixture("PreToolUse.Agent", root) | {"session_id": sid, "tool_use_id": f"a{n}"})
    out.append(fixture("SubagentStart", root) | {"session_id": sid, "agent_id": agent})
    out.append(fixture("SubagentStop", root) | {"session_id": sid, "agent_id": agent})
    out.append(fixture("PreCompact", root) | {"session_id": sid})
    out.append(fixture("PostCompact", root) | {"session_id": sid})
    out.append(fixture("SessionEnd", root) | {"session_id": sid})
    return out


def build(path: Path, total: int, sessions: int) -> dict[str, Any]:
    """Record `total` events into a new database at `path` through the hook's own path
    (`event.load`: decode, redact, cap, parse; then `events.apply`), one transaction each;
    the rate of that path (payload generation not counted) around each mark."""
    root = str(path.parent)
    conn = db.connect(str(path))
    scratch = apsw.Connection(":memory:")
    marks = sorted({10_000, 100_000, 1_000_000, total})
    rates: dict[str, float] = {}
    apply_rates: dict[str, float] = {}
    done = 0
    window_seconds, apply_seconds, window_count = 0.0, 0.0, 0
    per_session = max(20, total // sessions)
    packed_seconds = 0.0
    now = 1_800_000_000.0
    n = 0
    while done < total:
        for payload in session_events(root, n, per_session):
            raw = json.dumps(payload).encode()
            started = time.perf_counter()
            ev, truncated = event.load(scratch, raw, str(payload["hook_event_name"]))
            delivery = events.Delivery(events.new_delivery_id(), now, len(raw), None, truncated)
            applying = time.perf_counter()
            events.apply(conn, ev, delivery, events.Context(root, now, config=HISTORY_CONFIG))
            finished = time.perf_counter()
            window_seconds += finished - started
            apply_seconds += finished - applying
            now += 0.5
            done += 1
            window_count += 1
            if done % PACK_EVERY == 0:  # as the capture process packs after its snapshots
                packing = time.perf_counter()
                while frames.pack_states(conn):
                    pass
                packed_seconds += time.perf_counter() - packing
            if window_count == 5_000:  # the rate over the last 5,000 events
                current = window_count / window_seconds
                applied = window_count / apply_seconds
                window_seconds, apply_seconds, window_count = 0.0, 0.0, 0
                for mark in marks:
                    if done >= mark and str(mark) not in rates:
                        rates[str(mark)] = round(current)
                        apply_rates[str(mark)] = round(applied)
                        print(
                            f"  {done:,} events: {current:,.0f} events/s"
                            f" ({applied:,.0f}/s in events.apply alone)",
                            file=sys.stderr,
                        )
            if done >= total:
                break
        n += 1
    packing = time.perf_counter()
    while frames.pack_states(conn):  # the last ones
        pass
    packed_seconds += time.perf_counter() - packing
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    return {
        "pack_states_seconds": round(packed_seconds, 1),
        "events": done,
        "sessions": n,
        "rate_events_per_s_at": rates,
        "apply_only_events_per_s_at": apply_rates,
    }


def floor(folder: Path, total: int) -> dict[str, Any]:
    """What the recording path costs without deriving anything: `total` events of the build's
    mix, each loaded once (`event.load`: decode, redact, cap, parse) and then applied twice,
    one transaction each, into two new databases: stored alone (`events.apply(derive=False)`:
    its row and its audit row) and applied in full. The three are timed apart and interleaved
    per event, so drift in machine load hits each alike; the gap between the two applies is
    the derived state."""
    root = str(folder)
    scratch = apsw.Connection(":memory:")
    plain = db.connect(str(folder / "alone.db"))
    full = db.connect(str(folder / "full.db"))
    seconds = {"load": 0.0, "store_alone": 0.0, "apply": 0.0}
    now = 1_800_000_000.0
    done, n = 0, 0
    while done < total:
        for payload in session_events(root, n, 500):
            raw = json.dumps(payload).encode()
            name = str(payload["hook_event_name"])
            started = time.perf_counter()
            ev, truncated = event.load(scratch, raw, name)
            seconds["load"] += time.perf_counter() - started
            for conn, key, derive in ((plain, "store_alone", False), (full, "apply", True)):
                delivery = events.Delivery(events.new_delivery_id(), now, len(raw), None, truncated)
                context = events.Context(root, now, config=HISTORY_CONFIG)
                started = time.perf_counter()
                events.apply(conn, ev, delivery, context, derive=derive)
                seconds[key] += time.perf_counter() - started
            now += 0.5
            done += 1
            if done >= total:
                break
        n += 1
    plain.close()
    full.close()
    rates = {key: round(done / value) for key, value in seconds.items()}
    rates["load_and_store_alone"] = round(done / (seconds["load"] + seconds["store_alone"]))
    rates["load_and_apply"] = round(done / (seconds["load"] + seconds["apply"]))
    return {"events": done, "events_per_s": rates}


def hook_cases(root: str, i: int) -> list[tuple[str, list[bytes]]]:
    """(label, payloads): every payload is sent, only the last one is timed."""
    sid = "bench-live"

    def one(name: str, **changes: Any) -> bytes:
        payload = fixture(name, root) | {"session_id": sid} | changes
        return json.dumps(payload).encode()

    failing = fixture("PostToolUseFailure.Bash", root) | {"session_id": sid}
    failing["tool_input"] = {"command": "python3 src/module_1.py"}
    failing["error"] = (
        f'Exit code 1\nTraceback (most recent call last):\n  File "{root}/src/module_1.py",'
        " line 3\nValueError: bad"
    )
    third = [json.dumps(failing | {"tool_use_id": f"fail-{i}-{k}"}).encode() for k in range(3)]
    return [
        ("SessionStart", [one("SessionStart.startup")]),
        ("PreToolUse", [one("PreToolUse.Edit", tool_use_id=f"pre-{i}")]),
        ("PostToolUse", [one("PostToolUse.Edit", tool_use_id=f"post-{i}")]),
        ("PostToolUseFailure (3rd of a file)", third),
        ("SubagentStart", [one("SubagentStart", agent_id=f"live-agent-{i}")]),
    ]


def settle(project: Path, seconds: float = 30.0) -> None:
    """Wait (untimed) until no workspace snapshot is pending in the project and the capture
    process is gone, whatever it does after the snapshot (packing states), and whoever started
    it (the hook, or the daemon just after its answer): in a real session the
    model's thinking time covers both."""
    from claude_session.services.snapshots import capture_control

    path = str(project / ".claude-session.db")
    if not os.path.exists(path):
        return
    reader = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    reader.setbusytimeout(5000)
    quiet_since = None
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pending = reader.execute("SELECT 1 FROM vcs_tags WHERE status = 'pending' LIMIT 1")
            if pending.fetchall() or capture_control.is_running(str(project)):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 0.3:  # past a capture's start delay
                return
            time.sleep(0.01)
    finally:
        reader.close()


def time_hooks(project: Path, python: str, runs: int, relayed: bool) -> dict[str, Any]:
    """Each hook's wall time: served by the project's daemon (`relayed`, as for a
    user once a session has started), or doing its work itself (no daemon)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(project.parent),
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_SESSION_STATE_DIR": str(project.parent / "state"),
        "CLAUDE_SESSION_NO_DAEMON": "1",
        "CLAUDE_SESSION_NO_JUDGE": "1",
    }
    if not relayed:
        env["CLAUDE_SESSION_NO_RELAY"] = "1"
    # This process finds the project's runtime files (capture lock, daemon status) where the
    # hooks keep them: in their state folder.
    os.environ["CLAUDE_SESSION_STATE_DIR"] = env["CLAUDE_SESSION_STATE_DIR"]
    daemon = None
    if relayed:
        timed(
            installer.hook_argv("SessionStart", python), hook_cases(str(project), -2)[0][1][0], env
        )
        daemon = start_daemon_process(project, python, env)
    try:
        return _time_hooks(project, python, runs, env)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)


def _time_hooks(project: Path, python: str, runs: int, env: dict[str, str]) -> dict[str, Any]:
    bare = [os.path.realpath(python), "-I", "-S", "-c", "pass"]
    entry = package_dir(python) / "hook.py"  # that install's own hook entry (a wheel's)
    samples: dict[str, list[float]] = {"python3 -I -S -c pass": []}
    for i in range(-1, runs):  # run -1 warms the page cache and the .pyc files
        samples["python3 -I -S -c pass"].append(timed(bare, b"", env))
        for label, payloads in hook_cases(str(project), i):
            event_name = label.split(" ")[0]
            argv = installer.hook_argv(event_name, python, entry)
            for data in payloads[:-1]:
                timed(argv, data, env)
            # The snapshot a previous hook asked for is taken first, as the model's thinking
            # time between tool calls allows in a real session: a PreToolUse would wait for it.
            settle(project)
            samples.setdefault(label, []).append(timed(argv, payloads[-1], env))
    floor = statistics.median(samples["python3 -I -S -c pass"][1:])
    return {
        label: {
            "median_ms": round(statistics.median(values[1:]), 2),
            "p95_ms": round(sorted(values[1:])[int(len(values[1:]) * 0.95) - 1], 2),
            "ratio": round(statistics.median(values[1:]) / floor, 2),
        }
        for label, values in samples.items()
    }


def stored_bytes(path: Path) -> int:
    """The pages the database uses (free pages, left by packing and pruning for new rows to
    reuse, are not counted: `prune --vacuum` gives them back)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        pages, free, size = (
            int(conn.execute(f"PRAGMA {name}").fetchall()[0][0])
            for name in ("page_count", "freelist_count", "page_size")
        )
    finally:
        conn.close()
    return (pages - free) * size


CLI_CASES: list[tuple[str, list[str]]] = [
    ("status", ["status"]),
    ("claims --all", ["claims", "--all"]),
    ("events --session", ["events", "--session", "bench-001234"]),
    ("events (a page)", ["events"]),
    ("doctor", ["doctor"]),
]


def time_cli(project: Path, python: str, runs: int) -> dict[str, Any]:
    """Each CLI command as a whole process (its output to a file, as through a pipe): the
    median and best wall time of `runs` runs, after one to warm the page cache, and the median
    CPU time (user + system, of the command and what it ran: steadier on a busy machine)."""
    cli = str(Path(python).parent / "claude-session")
    env = dict(os.environ, CLAUDE_SESSION_NO_DAEMON="1", CLAUDE_SESSION_NO_JUDGE="1")
    env["CLAUDE_SESSION_STATE_DIR"] = str(project.parent / "state")
    out: dict[str, Any] = {}
    with tempfile.TemporaryFile() as sink:
        for label, args in CLI_CASES:
            samples, cpu = [], []
            for _ in range(runs + 1):
                sink.seek(0)
                sink.truncate()
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                subprocess.run(
                    [cli, "--project", str(project), *args],
                    stdout=sink,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    check=False,
                )
                samples.append((time.perf_counter() - started) * 1000)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append((after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime) * 1000)
            out[label] = {
                "median_ms": round(statistics.median(samples[1:]), 1),
                "best_ms": round(min(samples[1:]), 1),
                "cpu_ms": round(statistics.median(cpu[1:]), 1),
                "output_bytes": sink.tell(),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--python", default=sys.executable, help="the hooks' interpreter")
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "claude-session-bench"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cli", action="store_true", help="time the CLI commands too")
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--no-hooks", action="store_true", help="skip the hook timings")
    parser.add_argument(
        "--floor",
        type=int,
        default=0,
        metavar="EVENTS",
        help="time the recording path without derived state on this many events, and stop",
    )
    args = parser.parse_args()
    if args.floor:
        args.cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.cache) as scratch:
            found = floor(Path(scratch), args.floor)
        print(json.dumps(found, indent=2) if args.json else f"recording floor: {found}")
        return
    cached = args.cache / f"v{db.SCHEMA_VERSION}-{args.events}-{args.sessions}"
    big = cached / "project" / ".claude-session.db"
    results: dict[str, Any] = {"python": args.python}
    if not big.exists():
        big.parent.mkdir(parents=True, exist_ok=True)
        print(f"building {args.events:,} events into {big} ...", file=sys.stderr)
        started = time.perf_counter()
        built = build(big, args.events, args.sessions)
        built["seconds"] = round(time.perf_counter() - started)
        (cached / "build.json").write_text(json.dumps(built))
    results["build"] = json.loads((cached / "build.json").read_text())
    results["bytes_per_event"] = stored_bytes(big) / results["build"]["events"]
    results["bytes_per_event"] = round(results["bytes_per_event"])
    results["file_bytes_per_event"] = round(big.stat().st_size / results["build"]["events"])
    with tempfile.TemporaryDirectory(dir=args.cache) as scratch:
        if args.cli:
            loaded = Path(scratch) / "cli" / "project"
            loaded.mkdir(parents=True)
            shutil.copy(big, loaded / ".claude-session.db")
            cli = str(Path(args.python).parent / "claude-session")
            subprocess.run(  # the doctor checks an installation: this project's
                [cli, "--project", str(loaded), "install"],
                capture_output=True,
                check=False,
                env=dict(os.environ, CLAUDE_SESSION_STATE_DIR=str(loaded.parent / "state")),
            )
            tally = db.connect(str(loaded / ".claude-session.db"))
            events.update_tally(tally)  # as the daemon's sweeps keep it (untimed)
            tally.close()
            results["cli_ms"] = time_cli(loaded, args.python, args.cli_runs)
        for relayed in () if args.no_hooks else (True, False):
            how = "relayed" if relayed else "in_process"
            empty = Path(scratch) / f"empty-{how}" / "project"
            empty.mkdir(parents=True)
            results[f"hooks_empty_db_{how}"] = time_hooks(empty, args.python, args.runs, relayed)
            loaded = Path(scratch) / f"big-{how}" / "project"
            loaded.mkdir(parents=True)
            shutil.copy(big, loaded / ".claude-session.db")
            results[f"hooks_1m_db_{how}"] = time_hooks(loaded, args.python, args.runs, relayed)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"hooks run by {args.python}")
    print(
        f"database: {results['build']['events']:,} events, {results['bytes_per_event']} B/event"
        f" stored ({results['file_bytes_per_event']} B/event of file)"
    )
    print(f"recording rate, load + apply (events/s): {results['build']['rate_events_per_s_at']}")
    apply_only = results["build"].get("apply_only_events_per_s_at")
    print(f"recording rate, events.apply alone (events/s): {apply_only}")
    for label, figures in results.get("cli_ms", {}).items():
        print(
            f"  {label:22} {figures['median_ms']:7.1f} ms median, {figures['best_ms']:7.1f} best,"
            f" {figures['cpu_ms']:7.1f} ms CPU ({figures['output_bytes']:,} bytes out)"
        )
    for key in [k for k in results if k.startswith("hooks_")]:
        print(key)
        for label, figures in results[key].items():
            print(
                f"  {label:38} {figures['median_ms']:7.2f} ms  p95 {figures['p95_ms']:7.2f}"
                f"  {figures['ratio']:.2f}x"
            )


if __name__ == "__main__":
    main()
