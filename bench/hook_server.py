#!/usr/bin/env python3
"""The MCP hook server under load: 8 sessions' MCP hook servers, started as Claude Code starts them,
each sent its session's events as fast as it answers; events stored per second, each
hand-over's latency, and the servers' memory as the events add up. Figures, not pass/fail.

    .venv/bin/python bench/hook_server.py [--servers 8] [--events 100000] [--projects 1]
        [--quick] [--no-snapshots] [--no-group-commit] [--catch-up 60] [--keep] [--json]

Why this shape: with the mcp transport, Claude Code starts one MCP hook server per session
(`<venv python> -I -S claude_session/mcp_hook_server.py`, stdio pipes, in the project) and calls
its tool once per event, waiting for the answer before it goes on; so the figure that
counts is how many events per second the receiving processes store while several sessions
work on one project at once (one database, so they share its write lock), and how long one
hand-over takes (send to answer) at that rate.

Each client sends what Claude Code would: turns of UserPromptSubmit, then tool calls (Write
and Bash, PreToolUse and PostToolUse each), then Stop; payloads from the 2.1.330 fixtures with
a session of its own, a new tool_use_id per call, and the hook's arguments filled in as
Claude Code fills an `mcp_tool` hook's input (core/mcp_hook_input.py). A Write's file is written
before its PostToolUse is sent, so the workspace snapshots (on, the default) have a change to
capture. Each session's SessionStart runs first as the command hook it stays with mcp, which
starts the project's daemon, as in a real session.

The servers store what arrives together in one transaction (core/group_commit.py);
`--no-group-commit` gives each event a transaction of its own, to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it

import apsw  # noqa: E402

from claude_session.core import mcp_hook_input, paths  # noqa: E402
from claude_session.services.background import daemon_control  # noqa: E402
from claude_session.services.setup import installer  # noqa: E402
from claude_session.services.snapshots import capture_control  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"
PYTHON = str(REPO / ".venv" / "bin" / "python")
TOOLS_PER_TURN = 10  # a turn: UserPromptSubmit, this many tool calls (Pre and Post), Stop
FILES_PER_SESSION = 50  # the Writes cycle over this many files: changed, not only added
RSS_EVERY = 5_000  # events between two samples of the servers' memory


def fixture(name: str, project: Path, home: Path) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.json").read_text()
    text = text.replace("/home/dev/.claude", str(home / ".claude"))
    data: dict[str, Any] = json.loads(text.replace("/home/dev/project", str(project)))
    return data


def as_argument(value: object) -> str:
    """One payload field as Claude Code puts it into an mcp_tool hook's input: a string as it
    is, a number or boolean as its text, an object or array as compact JSON, missing as ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def hook_arguments(payload: dict[str, Any], template: dict[str, str]) -> dict[str, str]:
    arguments = {
        name: as_argument(payload.get(name))
        for name in template
        if name != mcp_hook_input.INSTALL_ARGUMENT
    }
    arguments[mcp_hook_input.INSTALL_ARGUMENT] = template[mcp_hook_input.INSTALL_ARGUMENT]
    return arguments


class Session:
    """One session's events, in Claude Code's order, made as they are sent (a Write's file
    is written just before its PostToolUse)."""

    def __init__(self, number: int, project: Path, home: Path) -> None:
        self.number = number
        self.project = project
        self.session_id = f"bench-{number:02d}-{os.urandom(4).hex()}"
        self.folder = project / "src" / f"s{number:02d}"
        self.folder.mkdir(parents=True, exist_ok=True)
        names = [
            "UserPromptSubmit",
            "Stop",
            "PreToolUse.Write",
            "PostToolUse.Write",
            "PreToolUse.Bash",
            "PostToolUse.Bash",
            "SessionStart.startup",
        ]
        self.fixtures = {name: fixture(name, project, home) for name in names}
        self.calls = 0

    def payload(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(self.fixtures[name]))
        data["session_id"] = self.session_id
        data["cwd"] = str(self.project)
        return data

    def events(self, count: int) -> Iterator[tuple[dict[str, Any], tuple[Path, str] | None]]:
        """(payload, a file to write before it is sent or None) for `count` events."""
        sent = 0
        turn = 0
        while sent < count:
            prompt = self.payload("UserPromptSubmit")
            prompt["prompt"] = f"turn {turn}: write the modules and run them"
            yield prompt, None
            sent += 1
            for step in range(TOOLS_PER_TURN):
                if sent >= count:
                    return
                self.calls += 1
                tool_use_id = f"toolu_bench_{self.number:02d}_{self.calls:07d}"
                kind = "Write" if step % 2 == 0 else "Bash"
                pre, post = self.payload(f"PreToolUse.{kind}"), self.payload(f"PostToolUse.{kind}")
                write = None
                if kind == "Write":
                    path = self.folder / f"m{self.calls % FILES_PER_SESSION:02d}.py"
                    content = f"VALUE = {self.calls}  # turn {turn}\n"
                    for data in (pre, post):
                        data["tool_input"] = {"file_path": str(path), "content": content}
                    post["tool_response"]["filePath"] = str(path)
                    post["tool_response"]["content"] = content
                    write = (path, content)
                else:
                    command = f"python3 {self.folder.name}/m{step:02d}.py"
                    for data in (pre, post):
                        data["tool_input"] = {"command": command, "description": "run it"}
                for data in (pre, post):
                    data["tool_use_id"] = tool_use_id
                yield pre, None
                sent += 1
                if sent >= count:
                    return
                yield post, write
                sent += 1
            if sent >= count:
                return
            stop = self.payload("Stop")
            stop["last_assistant_message"] = f"turn {turn} done"
            yield stop, None
            sent += 1
            turn += 1


@dataclass
class Client:
    """One MCP hook server and what its client saw."""

    number: int
    project: Path
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]
    took_ms: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each call's event (and tool), in order
    failed: int = 0  # a JSON-RPC error, or a tool result with isError
    answered_text: int = 0  # answers with something for Claude Code (context for the model)
    next_id: int = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        while True:
            answer = self.process.stdout.readline()
            if not answer:
                raise SystemExit(f"MCP hook server {self.number} closed its output")
            reply: dict[str, Any] = json.loads(answer)
            if reply.get("id") == self.next_id:
                return reply

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.process.stdin.flush()


def hook_env(project: Path, scratch: Path, snapshots: bool) -> dict[str, str]:
    """What Claude Code gives its hooks and MCP servers that matters here; our state folders
    in the scratch folder, so nothing touches the user's."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_SESSION_STATE_DIR": str(scratch / "state"),
        "CLAUDE_SESSION_DATA_DIR": str(scratch / "data"),
    }
    if not snapshots:
        env["CLAUDE_SESSION_NO_SNAPSHOTS"] = "1"
    if os.environ.get("CLAUDE_SESSION_NO_GROUP_COMMIT"):  # --no-group-commit
        env["CLAUDE_SESSION_NO_GROUP_COMMIT"] = "1"
    return env


def start_server(number: int, project: Path, scratch: Path, snapshots: bool) -> Client:
    """An MCP hook server as Claude Code starts it: the registered command, stdio pipes, the
    project as working folder, CLAUDE_PROJECT_DIR set; then the MCP handshake."""
    env = hook_env(project, scratch, snapshots)
    stderr = (scratch / f"server-{number}.stderr").open("wb")
    process = subprocess.Popen(
        installer.mcp_hook_server_argv(PYTHON),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=project,
        env=env,
    )
    client = Client(number, project, process, stderr)
    answer = client.call(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-hook-server", "version": "1"},
        },
    )
    if "result" not in answer:
        raise SystemExit(f"MCP hook server {number} refused initialize: {answer}")
    client.notify("notifications/initialized")
    return client


def session_start(session: Session, scratch: Path, snapshots: bool) -> None:
    """The SessionStart command hook (it stays a command with the mcp transport)."""
    env = hook_env(session.project, scratch, snapshots)
    done = subprocess.run(
        installer.hook_argv("SessionStart", PYTHON),
        input=json.dumps(session.payload("SessionStart.startup")).encode(),
        capture_output=True,
        env=env,
        cwd=session.project,
        timeout=60,
    )
    if done.returncode != 0:
        raise SystemExit(f"SessionStart failed: {done.stderr.decode()[-500:]}")


def cpu_seconds(pid: int) -> float:
    """User plus system time of a live process (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Progress:
    """Events answered so far, over all clients; the servers' memory every RSS_EVERY."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.lock = threading.Lock()
        self.done = 0
        self.samples: list[tuple[int, list[int]]] = [(0, [rss_kb(p) for p in pids])]

    def one(self) -> None:
        with self.lock:
            self.done += 1
            due = self.done % RSS_EVERY == 0
            done = self.done
        if due:
            sample = (done, [rss_kb(p) for p in self.pids])
            with self.lock:
                self.samples.append(sample)


def drive(client: Client, session: Session, count: int, progress: Progress) -> None:
    template = mcp_hook_input.input_template(installer.package_folder())
    for payload, write in session.events(count):
        if write is not None:
            path, content = write
            path.write_text(content)
        params = {"name": installer.HOOK_TOOL, "arguments": hook_arguments(payload, template)}
        started = time.perf_counter()
        answer = client.call("tools/call", params)
        client.took_ms.append((time.perf_counter() - started) * 1000)
        kind = payload["hook_event_name"]
        client.kinds.append(f"{kind}.{payload['tool_name']}" if "tool_name" in payload else kind)
        result = answer.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            client.failed += 1
        elif any(c.get("text") for c in result.get("content") or []):
            client.answered_text += 1
        progress.one()


def number(conn: apsw.Connection, sql: str) -> float:
    """The one value `sql` selects, 0 for NULL."""
    value = conn.execute(sql).fetchall()[0][0]
    return value if isinstance(value, int | float) else 0


def read_only(project: Path) -> apsw.Connection:
    return apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)


def pending_snapshots(projects: list[Path]) -> int:
    total = 0
    for project in projects:
        conn = read_only(project)
        try:
            total += int(number(conn, "SELECT count(*) FROM vcs_tags WHERE status = 'pending'"))
        finally:
            conn.close()
    return total


def store_counts(projects: list[Path]) -> dict[str, Any]:
    """What the load left in the store. Its own rows are the MCP hook server's (transport mcp):
    each session's SessionStart ran before it, by a hook process."""
    counts: dict[str, Any] = {"hook_events": 0, "events": 0, "tool_calls": 0}
    grouped: dict[str, dict[str, int]] = {"by_outcome": {}, "by_transport": {}, "snapshots": {}}
    mcp = "FROM hook_events WHERE transport = 'mcp'"
    groups = {
        "by_outcome": f"SELECT outcome, count(*) {mcp} GROUP BY 1",
        "by_transport": "SELECT transport, count(*) FROM hook_events GROUP BY 1",
        "snapshots": "SELECT status, count(*) FROM vcs_tags GROUP BY 1",
    }
    firsts, lasts = [], []
    for project in projects:
        conn = read_only(project)
        try:
            counts["hook_events"] += int(number(conn, f"SELECT count(*) {mcp}"))
            counts["events"] += int(
                number(conn, "SELECT count(*) FROM events WHERE hook_event_name != 'SessionStart'")
            )
            counts["tool_calls"] += int(number(conn, "SELECT count(*) FROM tool_calls"))
            firsts.append(number(conn, f"SELECT min(started_at) {mcp}"))
            lasts.append(number(conn, f"SELECT max(started_at) {mcp}"))
            for key, sql in groups.items():
                for name, n in conn.execute(sql):
                    grouped[key][str(name)] = grouped[key].get(str(name), 0) + int(n)
        finally:
            conn.close()
    counts["stored_span_s"] = max(lasts) - min(firsts)
    return counts | grouped


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def spread(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 2),
        "p99": round(percentile(ordered, 0.99), 2),
    }


def capture_processes(projects: list[Path]) -> list[int]:
    """The capture processes the hooks started for these projects (by their command line)."""
    wanted = [f"claude_session.services.snapshots.capture {p}".encode() for p in projects]
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if any(w in cmdline for w in wanted):
                found.append(int(entry))
    return found


def run(
    servers: int, events: int, projects_wanted: int, snapshots: bool, catch_up: float, keep: bool
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-hook-server-"))
    for folder in ("home", "state", "data"):
        (scratch / folder).mkdir()
    os.environ["CLAUDE_SESSION_STATE_DIR"] = str(scratch / "state")  # for the controls below
    os.environ["CLAUDE_SESSION_DATA_DIR"] = str(scratch / "data")
    projects = []
    for n in range(projects_wanted):
        project = scratch / f"project{n}"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        projects.append(project)
    sessions = [Session(n, projects[n % len(projects)], scratch / "home") for n in range(servers)]
    for session in sessions:
        session_start(session, scratch, snapshots)
    clients = [start_server(s.number, s.project, scratch, snapshots) for s in sessions]
    progress = Progress([c.process.pid for c in clients])
    shares = [events // servers + (1 if n < events % servers else 0) for n in range(servers)]
    threads = [
        threading.Thread(target=drive, args=(c, s, share, progress))
        for c, s, share in zip(clients, sessions, shares, strict=True)
    ]
    started, client_cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    servers_cpu = sum(cpu_seconds(c.process.pid) for c in clients)
    pending_at_end = pending_snapshots(projects)
    rss_end = [rss_kb(c.process.pid) for c in clients]
    for client in clients:  # Claude Code closes the server's stdin when the session ends
        assert client.process.stdin is not None
        client.process.stdin.close()
    for client in clients:
        client.process.wait(30)
        client.stderr.close()
    # The capture process catching up with the snapshots asked for during the load; given
    # `catch_up` seconds, then stopped (its backlog is reported), so that no capture outlives
    # the benchmark.
    catch_up_started = time.perf_counter()
    deadline = catch_up_started + catch_up
    while time.perf_counter() < deadline and any(
        capture_control.is_running(str(p)) for p in projects
    ):
        time.sleep(0.1)
    caught_up = time.perf_counter() - catch_up_started
    still_capturing = capture_processes(projects)
    for pid in still_capturing:
        os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not capture_processes(projects):
            break
        time.sleep(0.1)
    for project in projects:
        daemon_control.stop(str(project))
    counts = store_counts(projects)
    took = sorted(t for c in clients for t in c.took_ms)
    by_kind: dict[str, list[float]] = {}
    for client in clients:
        for kind, ms in zip(client.kinds, client.took_ms, strict=True):
            by_kind.setdefault(kind, []).append(ms)
    # First and last tenth of each client's calls apart: a cost that grows with the run shows.
    tenths: dict[str, list[float]] = {"first": [], "last": []}
    for client in clients:
        tenth = max(1, len(client.took_ms) // 10)
        tenths["first"] += client.took_ms[:tenth]
        tenths["last"] += client.took_ms[-tenth:]
    stderr_bytes = sum((scratch / f"server-{n}.stderr").stat().st_size for n in range(servers))
    logs = [Path(paths.log_path(str(p))) for p in projects]
    errors = sum(log.read_text().count(" ERROR [") for log in logs if log.exists())
    result: dict[str, Any] = {
        "servers": servers,
        "projects": len(projects),
        "events_sent": len(took),
        "elapsed_s": round(elapsed, 2),
        "sent_per_s": round(len(took) / elapsed),
        "stored": counts["hook_events"],
        "stored_per_s": round(counts["hook_events"] / elapsed),
        "stored_span_s": round(counts["stored_span_s"], 2),
        "by_outcome": counts["by_outcome"],
        "by_transport": counts["by_transport"],
        "events_rows": counts["events"],
        "tool_calls_rows": counts["tool_calls"],
        "servers_cpu_s": round(servers_cpu, 1),
        "client_cpu_s": round(client_cpu, 1),
        "failed_answers": sum(c.failed for c in clients),
        "answers_with_text": sum(c.answered_text for c in clients),
        "handover_ms": {
            "p50": round(statistics.median(took), 2),
            "p95": round(percentile(took, 0.95), 2),
            "p99": round(percentile(took, 0.99), 2),
            "max": round(took[-1], 1),
        },
        "slowest_ms": [round(t, 1) for t in took[-10:]],
        "handover_by_event_ms": {kind: spread(ms) for kind, ms in sorted(by_kind.items())},
        "handover_by_tenth_ms": {name: spread(ms) for name, ms in tenths.items()},
        "rss_kb": [{"events": n, "min": min(r), "max": max(r)} for n, r in progress.samples],
        "rss_kb_end": {"min": min(rss_end), "max": max(rss_end)},
        "snapshots_pending_at_end": pending_at_end,
        "snapshots": counts["snapshots"],
        "capture_catch_up_s": round(caught_up, 1),
        "capture_stopped": len(still_capturing),  # still at work after --catch-up seconds
        "snapshots_on": snapshots,
        "server_stderr_bytes": stderr_bytes,
        "log_errors": errors,
        "scratch": str(scratch) if keep else None,
    }
    if not keep:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return result


def print_report(r: dict[str, Any]) -> None:
    print(
        f"{r['servers']} MCP hook servers on {r['projects']} project(s), {os.cpu_count()} cores,"
        f" workspace snapshots {'on (the default)' if r['snapshots_on'] else 'off'}"
    )
    print(
        f"sent {r['events_sent']} events in {r['elapsed_s']} s: {r['sent_per_s']} events/s;"
        f" stored {r['stored']} ({r['stored_per_s']} events/s; first to last stored"
        f" {r['stored_span_s']} s), outcomes {r['by_outcome']}"
    )
    print(
        f"rows: events {r['events_rows']}, tool_calls {r['tool_calls_rows']};"
        f" hook_events by transport {r['by_transport']}"
    )
    print(
        f"CPU: the servers {r['servers_cpu_s']} s"
        f" ({r['servers_cpu_s'] * 1000 / max(1, r['events_sent']):.2f} ms an event),"
        f" this client {r['client_cpu_s']} s, of {r['elapsed_s'] * (os.cpu_count() or 1):.0f}"
        " core-seconds"
    )
    h = r["handover_ms"]
    print(
        f"hand-over (send to answer): p50 {h['p50']} ms, p95 {h['p95']} ms, p99 {h['p99']} ms,"
        f" max {h['max']} ms; the 10 slowest {r['slowest_ms']}; p50/p99 ms:"
    )
    for label, rows in (
        ("by event", r["handover_by_event_ms"]),
        ("each client's first and last tenth of its calls", r["handover_by_tenth_ms"]),
    ):
        print(f"  {label}: " + ", ".join(f"{k} {v['p50']}/{v['p99']}" for k, v in rows.items()))
    print(
        f"answers failed or isError: {r['failed_answers']}; with text for the model:"
        f" {r['answers_with_text']}; server stderr {r['server_stderr_bytes']} bytes;"
        f" ERROR lines in the log {r['log_errors']}"
    )
    print("server memory (VmRSS, KB, min..max over the servers) by events answered, all servers:")
    wanted = {0, 10_000, 50_000, 100_000, r["events_sent"]}
    for sample in r["rss_kb"]:
        if sample["events"] in wanted or sample["events"] == RSS_EVERY:
            print(f"  {sample['events']:>7}: {sample['min']}..{sample['max']}")
    end = r["rss_kb_end"]
    print(f"  at the end: {end['min']}..{end['max']}")
    print(
        f"snapshots: {r['snapshots_pending_at_end']} pending when the load ended;"
        + (
            f" the capture process still at work {r['capture_catch_up_s']} s later, stopped;"
            if r["capture_stopped"]
            else f" the capture process caught up {r['capture_catch_up_s']} s later;"
        )
        + f" by status {r['snapshots']}"
    )
    if r["scratch"]:
        print(f"kept: {r['scratch']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=8, help="sessions, one server each")
    parser.add_argument("--events", type=int, default=100_000, help="over all servers")
    parser.add_argument(
        "--projects", type=int, default=1, help="1: all on one project; N: spread over N"
    )
    parser.add_argument("--quick", action="store_true", help="10,000 events")
    parser.add_argument(
        "--no-snapshots",
        action="store_true",
        help="CLAUDE_SESSION_NO_SNAPSHOTS=1: the servers' cost without the capture process",
    )
    parser.add_argument(
        "--catch-up",
        type=float,
        default=60.0,
        help="seconds the capture process is given after the load before it is stopped",
    )
    parser.add_argument(
        "--no-group-commit",
        action="store_true",
        help="each event in a transaction of its own (core/group_commit.py off), to compare",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    events = 10_000 if args.quick else args.events
    if args.no_group_commit:
        os.environ["CLAUDE_SESSION_NO_GROUP_COMMIT"] = "1"
    projects = max(1, min(args.projects, args.servers))
    snapshots = not args.no_snapshots
    result = run(args.servers, events, projects, snapshots, args.catch_up, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
