#!/usr/bin/env python3
"""Benchmark Claude Code's transcripts read off the hook path: a synthetic transcript of `--mb`
MB shaped like the real ones (tests/fixtures/claude-code-2.1.330/transcripts: user prompts
with promptId, assistant entries streamed in two with usage, thinking and tool_use blocks,
tool results with toolUseResult, attachments, big api-request-shape and api-request-blob
lines, a cost-state per turn), read by `transcripts.catch_up` as the daemon and the CLI do:

- first read, reader only (a live session: every entry younger than FILL_AFTER, so `reconcile`
  is handed nothing), then again with nothing new (the daemon's pass while Claude Code
  writes);
- first read with `reconcile.fill` (the session over: every tool call, prompt and subagent is
  checked against the record, and the ones the hooks missed (all but the first prompt here)
  are rebuilt and applied), then again with nothing new;

each in a fresh process (its peak RSS is the reading's; tracemalloc's peak is of Python
objects), then `cost` at scale: a database of `--events` events and `--messages` model
responses over `--sessions` sessions (bulk-inserted rows, not recorded through the hooks:
what `cost` reads is message_usage, turns, agents, session_costs and transcript_files), each
session with a small transcript already read; `cost`'s queries in process and the CLI as
whole processes (median of `--runs`), against the 300 ms budget of `status`.

    .venv/bin/python bench/transcripts.py [--mb 100] [--blob-kb 20] [--events 1000000]
        [--messages 1000000] [--sessions 2000] [--runs 5] [--cache DIR] [--json]
        [--no-scale] [--no-transcript]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it

T0 = 1_700_000_000.0  # the synthetic session's first entry (2023): long settled
SESSION = "5e55a0b1-0000-4000-8000-0000000bec40"
CWD = "/home/dev/project"
TOOLS = ("Read", "Edit", "Bash")  # tool calls per turn, each a response of its own


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":")) + "\n"


def common(at: float, parent: str | None) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "timestamp": stamp(at),
        "userType": "external",
        "entrypoint": "cli",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.1.330",
        "gitBranch": "main",
    }


def usage(turn: int, step: int) -> dict[str, Any]:
    return {
        "input_tokens": 6 + step,
        "cache_creation_input_tokens": 1_500 + 37 * step,
        "cache_read_input_tokens": 20_000 + 900 * turn,
        "output_tokens": 180 + 11 * step,
        "output_tokens_details": {"thinking_tokens": 60},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "speed": "standard",
    }


def turn_lines(turn: int, blob: str, cost: float) -> list[str]:
    """One turn as Claude Code writes it: the prompt, an attachment, per response its request
    (api-request, its shape, its blob) and the response streamed in two entries (thinking,
    then tool_use or text), each tool's result; a cost-state at the end."""
    at = turn * 60.0
    prompt_id = f"9f1c2d3e-0000-4000-8000-{turn:012d}"
    out = [line({"type": "queue-operation", "operation": "enqueue", "timestamp": stamp(at)})]
    user = f"u-{turn}"
    out.append(
        line(
            common(at, None)
            | {
                "promptId": prompt_id,
                "type": "user",
                "message": {"role": "user", "content": f"step {turn}: change module {turn % 40}"},
                "uuid": user,
                "permissionMode": "default",
            }
        )
    )
    reminder = (
        "<system-reminder>\n" + "context line of the environment\n" * 200 + "</system-reminder>"
    )
    out.append(
        line(
            common(at, user)
            | {"type": "attachment", "attachment": {"type": "environment"}, "rendered": reminder}
        )
    )
    parent = user
    for step, tool in enumerate((*TOOLS, None)):
        at += 5
        ref = f"req-{turn}-{step}"
        out.append(line({"type": "api-request", "requestRef": ref, "timestamp": stamp(at)}))
        out.append(line({"type": "api-request-shape", "requestRef": ref, "shape": blob[:6000]}))
        out.append(line({"type": "api-request-blob", "requestRef": ref, "blob": blob}))
        message_id = f"msg_{turn:06d}_{step}"
        tool_id = f"toolu_{turn:06d}_{step}"
        base = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-5",
        }
        thinking = [{"type": "thinking", "thinking": "Let me look at it. " * 20, "signature": "s"}]
        if tool is None:
            last = [{"type": "text", "text": f"Done with step {turn}. " * 10}]
            reason = "end_turn"
        else:
            files = {"file_path": f"{CWD}/module_{turn % 40}.py"}
            inputs = {"Read": files, "Edit": files | {"old_string": "a", "new_string": "b"}}
            tool_input = inputs.get(tool, {"command": f"pytest -q tests/test_{turn % 40}.py"})
            last = [{"type": "tool_use", "id": tool_id, "name": tool, "input": tool_input}]
            reason = "tool_use"
        for part, blocks in enumerate((thinking, last)):
            uuid = f"a-{turn}-{step}-{part}"
            message = base | {"content": blocks, "stop_reason": reason if part else None}
            message["usage"] = usage(turn, step)
            out.append(
                line(
                    common(at + 0.5 * part, parent)
                    | {"message": message, "requestRef": ref, "type": "assistant", "uuid": uuid}
                    | {"effort": "medium"}
                )
            )
            parent = uuid
        if tool is None:
            break
        out.append(line({"type": "tools-used", "tools": [tool], "timestamp": stamp(at + 1)}))
        result = f"result of {tool} at step {turn}\n" + "output line of the tool\n" * 80
        uuid = f"r-{turn}-{step}"
        out.append(
            line(
                common(at + 2, parent)
                | {
                    "promptId": prompt_id,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {"tool_use_id": tool_id, "type": "tool_result", "content": result}
                        ],
                    },
                    "uuid": uuid,
                    "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False},
                }
            )
        )
        parent = uuid
    out.append(line({"type": "last-prompt", "lastPrompt": f"step {turn}", "sessionId": SESSION}))
    models = {"claude-opus-4-5": {"inputTokens": 1, "costUSD": cost}}
    out.append(
        line(
            {
                "type": "cost-state",
                "sessionId": SESSION,
                "totalCostUSD": cost,
                "totalAPIDuration": 1000 * turn,
                "totalToolDuration": 500 * turn,
                "totalLinesAdded": turn,
                "totalLinesRemoved": 0,
                "modelUsage": models,
                "hasUnknownModelCost": False,
            }
        )
    )
    return out


def write_transcript(path: Path, megabytes: float, blob_kb: int) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = ("0123456789abcdef" * (blob_kb * 64))[: blob_kb * 1024]
    turns = 0
    with path.open("w") as f:
        while f.tell() < megabytes * 1_000_000:
            f.writelines(turn_lines(turns, blob, round(0.05 * (turns + 1), 6)))
            turns += 1
    return {"bytes": path.stat().st_size, "turns": turns, "responses": turns * (len(TOOLS) + 1)}


# --- one reading, in a process of its own ---------------------------------------------------


def reading(folder: Path, transcript: Path, fill: bool) -> dict[str, Any]:
    """Record the session's start and its first prompt as the hooks would, then catch up the
    transcript: reader only (`now` before its entries: none settled) or with `reconcile`
    (`now` long after: all settled); then once more with nothing new."""
    import tracemalloc

    from claude_session.core import config, db, event, events

    root = folder / "project"
    root.mkdir()
    conn = db.connect(str(root / ".claude-session.db"))
    base = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(root)}
    prompt = {"prompt": "step 0: change module 0", "prompt_id": f"9f1c2d3e-0000-4000-8000-{0:012d}"}
    for payload in (
        base | {"hook_event_name": "SessionStart", "source": "startup"},
        base | {"hook_event_name": "UserPromptSubmit"} | prompt,
    ):
        raw = json.dumps(payload).encode()
        ev, cut = event.load(conn, raw, str(payload["hook_event_name"]))
        delivery = events.Delivery(events.new_delivery_id(), T0, len(raw), None, cut)
        settings = dict(config.DEFAULTS, workspace_snapshots=False)
        events.apply(conn, ev, delivery, events.Context(str(root), T0, config=settings))
    from claude_session.services.cost import transcripts

    now = T0 + 1e7 if fill else T0 - 3600
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started, cpu = time.perf_counter(), time.process_time()
    first = transcripts.catch_up(conn, now=now)
    first_s, first_cpu = time.perf_counter() - started, time.process_time() - cpu
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    again_s = []
    for _ in range(5):
        started = time.perf_counter()
        again = transcripts.catch_up(conn, now=now)
        again_s.append(time.perf_counter() - started)
    added = conn.execute("SELECT count(*) FROM events").fetchall()[0][0] - 2
    conn.close()
    # The same first read once more with tracemalloc on (slower): Python objects' peak.
    fresh = folder / "traced"
    fresh.mkdir()
    traced = db.connect(str(fresh / ".claude-session.db"))
    traced.execute(
        "INSERT INTO sessions (session_id, started_at, last_activity_at, transcript_path)"
        " VALUES (?, ?, ?, ?)",
        (SESSION, T0, T0, str(transcript)),
    )
    tracemalloc.start()
    transcripts.catch_up(traced, now=now)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    traced.close()
    return {
        "first_s": round(first_s, 3),
        "first_cpu_s": round(first_cpu, 3),
        "entries": first["entries"],
        "responses": first["messages"],
        "events_added": added,
        "again_ms_median": round(statistics.median(again_s) * 1000, 2),
        "again_entries": again["entries"],
        "rss_mb_before": round(rss_before / 1024, 1),
        "rss_mb_peak": round(rss_after / 1024, 1),
        "tracemalloc_peak_mb": round(peak / 1e6, 1),
    }


def in_child(kind: str, transcript: Path, config_dir: Path) -> dict[str, Any]:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config_dir), CLAUDE_SESSION_NO_JUDGE="1")
    env["CLAUDE_SESSION_NO_DAEMON"] = "1"
    with tempfile.TemporaryDirectory() as scratch:
        env["CLAUDE_SESSION_STATE_DIR"] = str(Path(scratch) / "state")
        done = subprocess.run(
            [sys.executable, __file__, "--child", kind, "--transcript", str(transcript)],
            env=env,
            capture_output=True,
            text=True,
            cwd=scratch,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"{kind} reading failed:\n{done.stderr}")
    return dict(json.loads(done.stdout))


# --- cost at scale ----------------------------------------------------------------------------


def build_scale(folder: Path, events_n: int, messages: int, sessions: int) -> Path:
    """A project database with `events_n` events and `messages` responses over `sessions`
    ended sessions (25 turns, 2 subagents, a cost-state each), bulk-inserted; each session's
    transcript a small real file, already read."""
    from claude_session.core import db

    root = folder / "project"
    root.mkdir(parents=True)
    config_dir = folder / "claude"
    transcripts_dir = config_dir / "projects" / "-home-dev-project"
    transcripts_dir.mkdir(parents=True)
    conn = db.connect(str(root / ".claude-session.db"))
    per_session = max(1, messages // sessions)
    events_per = max(1, events_n // sessions)
    conn.execute("BEGIN")
    for n in range(sessions):
        sid = f"bench-{n:06d}-0000-4000-8000-000000000000"
        path = transcripts_dir / f"{sid}.jsonl"
        path.write_text(line({"type": "last-prompt", "lastPrompt": "x", "sessionId": sid}))
        info = path.stat()
        start = T0 + n * 3600
        conn.execute(
            "INSERT INTO sessions (session_id, status, started_at, ended_at, last_activity_at,"
            " cwd, transcript_path, model) VALUES (?, 'ended', ?, ?, ?, ?, ?, 'claude-opus-4-5')",
            (sid, start, start + 3000, start + 3000, CWD, str(path)),
        )
        conn.execute(
            "INSERT INTO transcript_files (path, session_id, agent_id, read_to, filled_to, inode,"
            " size, lines_read, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)",
            (str(path), sid, sid, info.st_size, info.st_size, info.st_ino, info.st_size, start),
        )
        conn.execute(
            "INSERT INTO turns (session_id, turn_no, prompt_id, prompt, started_at, ended_at,"
            " status, result_text) SELECT ?1, value, 'p-' || ?1 || '-' || value, 'step ' || value,"
            " ?2 + value * 100, ?2 + value * 100 + 90, 'done', 'done' FROM"
            " (WITH RECURSIVE k(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM k"
            " WHERE value < 25) SELECT value FROM k)",
            (sid, start),
        )
        conn.execute(
            "INSERT INTO agent_registry (id, session_id, agent_type, description, status,"
            " last_seen_at, is_main) VALUES (?1, ?1, 'main', NULL, 'completed', ?2, 1),"
            " (?1 || '-a1', ?1, 'general-purpose', 'look around', 'completed', ?2, 0),"
            " (?1 || '-a2', ?1, 'Explore', 'find the callers', 'completed', ?2, 0)",
            (sid, start + 3000),
        )
        conn.execute(
            "INSERT INTO message_usage (session_id, agent_id, message_id, turn_id, prompt_id,"
            " tool_uses, model, input_tokens, output_tokens, cache_read_tokens,"
            " cache_creation_tokens, thinking_tokens, service_tier, speed, at, cost_usd,"
            " cost_source) SELECT ?1, CASE value % 5 WHEN 3 THEN ?1 || '-a1' WHEN 4 THEN"
            " ?1 || '-a2' ELSE ?1 END, 'msg_' || value, (SELECT id FROM turns WHERE"
            " session_id = ?1 AND turn_no = 1 + value * 25 / ?3), NULL,"
            " json_object('toolu_' || value, 'Read'), 'claude-opus-4-5', 6, 200, 30000, 1500,"
            " 60, 'standard', 'standard', ?2 + value * 5, 0.01, 'claude_code' FROM"
            " (WITH RECURSIVE k(value) AS (SELECT 0 UNION ALL SELECT value + 1 FROM k"
            " WHERE value < ?3 - 1) SELECT value FROM k)",
            (sid, start, per_session),
        )
        conn.execute(
            "INSERT INTO session_costs (session_id, total_cost_usd, model_usage, as_of,"
            " updated_at) VALUES (?, ?, '{}', ?, ?)",
            (sid, 0.01 * per_session + 0.2, start + 3000, start + 3000),
        )
        conn.execute(
            "INSERT INTO events (dedup_key, received_at, session_id, hook_event_name, tool_name,"
            " tool_use_id, payload, payload_bytes) SELECT ?1 || '|PostToolUse|t' || value,"
            " ?2 + value, ?1, 'PostToolUse', 'Read', 't' || value, json_object('session_id', ?1,"
            " 'hook_event_name', 'PostToolUse', 'tool_name', 'Read', 'tool_input',"
            " json_object('file_path', '/home/dev/project/module.py'), 'tool_response',"
            " printf('%.800c', 'x')), 1000 FROM (WITH RECURSIVE k(value) AS (SELECT 0 UNION ALL"
            " SELECT value + 1 FROM k WHERE value < ?3 - 1) SELECT value FROM k)",
            (sid, start, events_per),
        )
        if n % 200 == 199:
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            print(f"  {n + 1:,} sessions", file=sys.stderr)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    return root


def time_scale(root: Path, runs: int) -> dict[str, Any]:
    from claude_session.core import db
    from claude_session.services.cost import costs, transcripts

    config_dir = root.parent / "claude"
    os.environ["CLAUDE_CONFIG_DIR"] = str(config_dir)
    conn = db.connect(str(root / ".claude-session.db"))
    session = str(
        conn.execute("SELECT session_id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchall()[
            0
        ][0]
    )
    counts = {
        t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("events", "message_usage", "sessions", "turns")
    }

    def best_of(call: Any) -> float:
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            call()
            samples.append((time.perf_counter() - started) * 1000)
        return round(statistics.median(samples), 1)

    in_process = {
        "catch_up, every session (nothing new)": best_of(lambda: transcripts.catch_up(conn)),
        "report by session (all)": best_of(lambda: costs.report(conn, "session", limit=50)),
        "report by turn (all)": best_of(lambda: costs.report(conn, "turn", limit=50)),
        "report by agent (all)": best_of(lambda: costs.report(conn, "agent", limit=50)),
        "report by turn (one session)": best_of(lambda: costs.report(conn, "turn", session)),
        "status's cost line (costs.latest)": best_of(lambda: costs.latest(conn)),
    }
    conn.close()
    cli = str(Path(sys.executable).parent / "claude-session")
    env = dict(os.environ, CLAUDE_SESSION_NO_DAEMON="1", CLAUDE_SESSION_NO_JUDGE="1")
    processes = {}
    for label, args in (
        ("cost", ["cost"]),
        ("cost --by turn", ["cost", "--by", "turn"]),
        ("cost --by agent", ["cost", "--by", "agent"]),
        ("cost --session <latest>", ["cost", "--session", session]),
        ("status", ["status"]),
    ):
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(
                [cli, "--project", str(root), *args], env=env, capture_output=True, check=True
            )
            samples.append((time.perf_counter() - started) * 1000)
        processes[label] = round(statistics.median(samples), 1)
    return {"rows": counts, "in_process_ms": in_process, "cli_ms": processes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="the transcript's size")
    parser.add_argument("--blob-kb", type=int, default=20, help="each api-request-blob line")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "claude-session-bench"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-scale", action="store_true", help="skip cost at scale")
    parser.add_argument("--no-transcript", action="store_true", help="skip the reading")
    parser.add_argument("--child", choices=("reader", "fill"), help=argparse.SUPPRESS)
    parser.add_argument("--transcript", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as scratch:
            found = reading(Path(scratch), args.transcript, args.child == "fill")
        print(json.dumps(found))
        return
    from claude_session.core import db

    results: dict[str, Any] = {"python": sys.executable}
    if not args.no_transcript:
        with tempfile.TemporaryDirectory() as scratch:
            config_dir = Path(scratch) / "claude"
            path = config_dir / "projects" / "-home-dev-project" / f"{SESSION}.jsonl"
            started = time.perf_counter()
            results["transcript"] = write_transcript(path, args.mb, args.blob_kb)
            results["transcript"]["written_s"] = round(time.perf_counter() - started, 1)
            for kind in ("reader", "fill"):
                results[kind] = in_child(kind, path, config_dir)
    if not args.no_scale:
        cached = args.cache / (
            f"transcripts-v{db.SCHEMA_VERSION}-{args.events}-{args.messages}-{args.sessions}"
        )
        root = cached / "project"
        if not (root / ".claude-session.db").exists():
            print(f"building {cached} ...", file=sys.stderr)
            started = time.perf_counter()
            build_scale(cached, args.events, args.messages, args.sessions)
            print(f"  built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        results["scale"] = time_scale(root, args.runs)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    show(results)


def show(results: dict[str, Any]) -> None:
    if "transcript" in results:
        t = results["transcript"]
        print(
            f"transcript: {t['bytes'] / 1e6:.1f} MB, {t['turns']:,} turns,"
            f" {t['responses']:,} responses"
        )
        print(
            f"  {'reading':28} {'first':>9} {'CPU':>9} {'again':>10} {'entries':>8}"
            f" {'events+':>8} {'RSS peak':>9} {'py peak':>8}"
        )
        for kind, label in (
            ("reader", "reader only (live session)"),
            ("fill", "with reconcile.fill"),
        ):
            r = results[kind]
            print(
                f"  {label:28} {r['first_s']:8.2f}s {r['first_cpu_s']:8.2f}s"
                f" {r['again_ms_median']:8.2f}ms {r['entries']:8,} {r['events_added']:8,}"
                f" {r['rss_mb_peak']:7.1f}MB {r['tracemalloc_peak_mb']:6.1f}MB"
            )
    if "scale" in results:
        s = results["scale"]
        rows = ", ".join(f"{v:,} {k}" for k, v in s["rows"].items())
        print(f"cost at scale ({rows}); budget: status under 300 ms")
        for label, ms in s["in_process_ms"].items():
            print(f"  in process  {label:40} {ms:8.1f} ms")
        for label, ms in s["cli_ms"].items():
            print(f"  process     claude-session {label:25} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
