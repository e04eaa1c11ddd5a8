#!/usr/bin/env python3
"""The cost of our hooks as Claude Code sees it: the real CLI (2.1.330) runs one scripted
session of many tool calls, with subagents, in each mode, and the session's wall time with
hooks minus without, divided by the hooks that fired, is what a hook costs the user.

    .venv/bin/python bench/real_cli.py [--rounds 3] [--tool-calls 200] [--subagents 2]
        [--subagent-calls 40] [--modes none,command,relay,mcp,http] [--no-snapshots]
        [--api-delay-ms 0] [--no-warmup] [--claude PATH] [--keep] [--json]

The modes, each run in a fresh project, HOME and state folders of its own:
  none     no hooks at all: the floor.
  command  `install --transport command`, CLAUDE_SESSION_NO_RELAY=1: a process per event that
           does the work itself.
  relay    `install --transport command`: a process per event that hands it to the daemon
           once that runs.
  mcp      `install --transport mcp`: the events of a running session go to the MCP hook server
           Claude Code starts for the session (no process per event).
  http     no claude-session at all: `http` hooks for the events the mcp mode carries, posted
           to a receiver in this process that answers `{}`; the raw cost of Claude Code's own
           hook delivery, for comparison with mcp_tool.
  twin     no claude-session at all: the mcp mode's shape with nothing behind it (mcp_tool
           hooks to bench/null_mcp_server.py, `cat >/dev/null` commands on the other events,
           as bench/hook_durations.py's null-mcp); not in the default modes.
  async    the mcp mode, with the observe-only events it carries (whose answer is always
           empty: runtime/handlers.py) as `async: true` command hooks instead, so Claude Code
           does not wait for them (issue 45); not in the default modes. With `mcp` in the same
           run, each round's events are compared field by field with the mcp run's (what an
           async hook killed at exit loses shows there).

Why whole sessions: a hook's own run time (hook_events.duration_ms) leaves out what Claude
Code spends around it (spawning, a pipe, an MCP round trip, its own bookkeeping); the wall time
of `claude -p` has it all. Each round runs every mode once, in a rotated order, so drift in the
machine's load hits every mode alike; the cost per hook subtracts the same round's `none`.
Workspace snapshots are on (the default), as for a user.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it
sys.path.insert(0, str(REPO / "tests"))  # the scripted Messages API the end-to-end tests use

import apsw  # noqa: E402
from fake_api import FakeAnthropic, text, tool  # noqa: E402

from claude_session.services.background import daemon_control  # noqa: E402
from claude_session.services.setup import installer  # noqa: E402
from claude_session.services.snapshots import capture_control  # noqa: E402

CLAUDE_VERSION = "2.1.330"
MODES = ("none", "command", "relay", "mcp", "http", "twin", "async")
DEFAULT_MODES = ("none", "command", "relay", "mcp", "http")
CLI = REPO / ".venv" / "bin" / "claude-session"
MARKER = "BENCH-SUBAGENT"  # a subagent's prompt starts with it: its requests are told apart
PROMPT = "BENCH-MAIN: write, edit, read and run, and have subagents do the same"


def default_claude() -> Path:
    """Where tests/test_e2e_claude.py installs the real CLI (it installs it; this does not)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "claude-session-tests" / f"claude-code-{CLAUDE_VERSION}"
    return prefix / "node_modules" / ".bin" / "claude"


# --- the scripted session ------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The scripted session: its tool calls (the subagents' and the Agent calls included),
    how long the model takes to answer each request (0: the hooks' cost alone shows), and
    whether our hooks take workspace snapshots."""

    tool_calls: int
    subagents: int
    subagent_calls: int
    api_delay_ms: float = 0.0
    snapshots: bool = True  # workspace snapshots, on by default as for a user


class Script:
    """What the model says, decided from each request alone (a retried request gets the same
    step again): the main agent works through its plan, launching the subagents at even
    intervals; each subagent works through a plan of its own. One tool call per response.

    The work is a cycle over one small file per step group: Write it, Edit it, run `echo`,
    Read it, run `true`; so every tool succeeds and each kind of hook payload is there."""

    def __init__(self, project: Path, plan: Plan):
        self.project = project
        self.delay = plan.api_delay_ms / 1000
        subagents = plan.subagents
        self.subagent_calls = plan.subagent_calls
        self.main_calls = plan.tool_calls - subagents * plan.subagent_calls  # with Agent calls
        if self.main_calls < subagents + 1:
            raise SystemExit("--tool-calls is too small for the subagents' share")
        work = self.main_calls - subagents
        self.agent_at = {(n + 1) * work // (subagents + 1) + n: n for n in range(subagents)}
        self.lock = threading.Lock()
        self.issued: Counter[str] = Counter()  # tool name -> calls handed out
        self.first: float | None = None  # perf_counter of the first and the last request
        self.last: float | None = None

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self.lock:
            self.last = time.perf_counter()
            self.first = self.first or self.last
        if self.delay:
            time.sleep(self.delay)
        messages = body.get("messages") or []
        done = sum(
            1
            for m in messages
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        )
        first = json.dumps(messages[0], ensure_ascii=False) if messages else ""
        if MARKER in first:
            which = first[first.index(MARKER) + len(MARKER) + 1 :].split(":", 1)[0]
            if done >= self.subagent_calls:
                return [text(f"subagent {which}: done")]
            return [self._issue(self._work(f"sub{which}", done))]
        if done >= self.main_calls:
            return [text("All done.")]
        if done in self.agent_at:
            n = self.agent_at[done]
            return [
                self._issue(
                    tool(
                        "Agent",
                        description=f"bench helper {n}",
                        prompt=f"{MARKER}-{n}: write, edit, read and run in the project",
                        subagent_type="general-purpose",
                    )
                )
            ]
        launched = sum(1 for at in self.agent_at if at < done)
        return [self._issue(self._work("main", done - launched))]

    def _work(self, who: str, step: int) -> dict[str, Any]:
        group, kind = divmod(step, 5)
        path = str(self.project / "work" / f"{who}_{group:03d}.txt")
        if kind == 0:
            return tool("Write", file_path=path, content=f"{who} line {group}\n")
        if kind == 1:
            return tool(
                "Edit",
                file_path=path,
                old_string=f"line {group}",
                new_string=f"line {group} edited",
            )
        if kind == 2:
            return tool("Bash", command=f"echo {who} {group}", description="say where we are")
        if kind == 3:
            return tool("Read", file_path=path)
        return tool("Bash", command="true", description="do nothing")

    def _issue(self, block: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.issued[block["name"]] += 1
        return block

    def total(self) -> int:
        with self.lock:
            return sum(self.issued.values())


# --- the http mode's receiver --------------------------------------------------------------


ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


class HookReceiver:
    """A loopback HTTP server answering `{}` to every POST: the least an http hook can cost."""

    def __init__(self) -> None:
        self.posts: Counter[str] = Counter()  # hook_event_name -> POSTs
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver would
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    name = str(json.loads(body).get("hook_event_name"))
                except (ValueError, AttributeError):
                    name = "?"
                with lock:
                    owner.posts[name] += 1
                # One write: headers and body written apart wait out the client's delayed
                # acknowledgement (Nagle), ~40 ms a request, which is not Claude Code's cost.
                self.wfile.write(ANSWER)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HookReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def http_settings(url: str) -> dict[str, Any]:
    """http hooks on the events the mcp transport carries (the rest are command hooks there,
    left out here: this mode measures Claude Code's delivery, not ours)."""
    hook = {"type": "http", "url": url, "timeout": installer.DEFAULT_TIMEOUT}
    return {
        "hooks": {
            event: [{"hooks": [hook]}]
            for event in installer.installed_events()
            if event in installer.MCP_EVENTS
        }
    }


# --- one run -------------------------------------------------------------------------------


@dataclass
class Run:
    mode: str
    round: int
    wall_s: float
    exit_code: int
    tool_calls_made: int
    hooks_fired: int  # hook_events rows (our modes), POSTs received (http), 0 (none)
    tool_calls_recorded: int = 0
    tool_calls_succeeded: int = 0
    transports: dict[str, int] = field(default_factory=dict)
    by_event: dict[str, int] = field(default_factory=dict)
    own_median_ms: float | None = None  # hook_events.duration_ms: the hook's own run time
    other_session_rows: int = 0  # hook_events rows not of the session `claude -p` reported
    startup_s: float = 0.0  # from the start of `claude -p` to its first model request
    shutdown_s: float = 0.0  # from its last model request to its exit
    settle_s: float = 0.0  # after claude exited, until the project's processes were gone
    load_1m: float = 0.0  # the machine's load average over the minute before the run
    error: str = ""


def run_env(scratch: Path, api_url: str) -> dict[str, str]:
    """The real CLI's environment, as the end-to-end tests give it: the scripted API, a
    scratch HOME, our state folders in the scratch folder too."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(scratch / "home"),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-real-key",
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_SESSION_STATE_DIR": str(scratch / "state"),
        "CLAUDE_SESSION_DATA_DIR": str(scratch / "data"),
    }


@contextmanager
def state_of(env: dict[str, str]) -> Iterator[None]:
    """This process's daemon and capture controls look at the run's state folder."""
    saved = {k: os.environ.get(k) for k in ("CLAUDE_SESSION_STATE_DIR", "CLAUDE_SESSION_DATA_DIR")}
    os.environ.update({k: env[k] for k in saved})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def observe_only_events() -> list[str]:
    """The events the mcp transport carries whose answer is always empty: no answer step, or
    one `answers_nothing` gives whatever the store holds (runtime/handlers.py)."""
    from claude_session.runtime import handlers

    found = []
    for event in installer.installed_events():
        handler = handlers.HANDLERS.get(event, handlers.DEFAULT)
        if event not in installer.MCP_EVENTS:
            continue
        no_answer = handler.answer is None and handler.before_answer is None
        answered_first = handler.answer_first is not None
        if no_answer or (
            answered_first and getattr(handler.answer_first, "__name__", "") == "_always"
        ):
            found.append(event)
    return found


def make_async(project: Path) -> None:
    """The install's observe-only mcp_tool hooks become `async: true` command hooks (our hook
    process, as `install --transport command` writes it)."""
    settings_file = project / ".claude" / "settings.local.json"
    settings = json.loads(settings_file.read_text())
    for event in observe_only_events():
        handler = {
            "type": "command",
            "command": installer.hook_command(event),
            "timeout": installer.TIMEOUTS.get(event, installer.DEFAULT_TIMEOUT),
            "async": True,
        }
        settings["hooks"][event] = [{"hooks": [handler]}]
    settings_file.write_text(json.dumps(settings, indent=2))


def install(mode: str, project: Path, env: dict[str, str], claude: Path, url: str) -> None:
    if mode == "none":
        return
    if mode == "twin":
        import hook_durations  # beside this script; imports this module, so not at the top

        hook_durations.install("null-mcp", project, env, claude)
        return
    if mode == "http":
        settings = project / ".claude" / "settings.local.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(http_settings(url), indent=2))
        return
    transport = "mcp" if mode in ("mcp", "async") else "command"
    argv = [str(CLI), "--project", str(project), "install", "--transport", transport]
    done = subprocess.run(
        [*argv, "--claude", str(claude)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"install --transport {transport} failed: {done.stdout}{done.stderr}")
    written = json.loads((project / ".claude" / "settings.local.json").read_text())
    if installer.transport_of(written) != transport:
        raise SystemExit(f"install wrote {installer.transport_of(written)} hooks, not {transport}")
    if mode == "async":
        make_async(project)


def project_processes(project: Path) -> list[int]:
    """Processes other than this one that still work in the project: hooks, the MCP hook server,
    the capture and daemones (their command line or working folder names it)."""
    found = []
    mark = str(project)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if mark in cmdline or cwd == mark or cwd.startswith(mark + "/"):
            found.append(int(entry))
    return found


def settle(project: Path, env: dict[str, str], timeout: float = 60.0) -> float:
    """Stop the daemon the SessionStart hook started, let a capture still running
    finish, and wait until nothing works in the project: the next run must not share the CPU
    with this one's leftovers. Returns the seconds it took."""
    started = time.monotonic()
    with state_of(env):
        daemon_control.stop(str(project))
        deadline = started + timeout
        while time.monotonic() < deadline and (
            capture_control.is_running(str(project)) or project_processes(project)
        ):
            time.sleep(0.05)
        daemon_control.stop(str(project))  # one a late hook may have started meanwhile
    return time.monotonic() - started


def scalar(conn: apsw.Connection, sql: str, *args: object) -> int:
    value = conn.execute(sql, args).fetchall()[0][0]
    return value if isinstance(value, int) else 0


# (mode, round) -> the run's events rows, normalized (`normalized_events`): the async mode's
# are compared with the mcp mode's of the same round.
EVENT_ROWS: dict[tuple[str, int], Counter[str]] = {}
VARYING = (
    *("session_id", "tool_use_id", "agent_id", "prompt_id", "duration_ms", "agentId"),
    *("message_id", "turn_id", "id"),
)
# ids and times inside texts: UUIDs, agent ids, the scripted API's tool ids, durations
VARYING_TEXT = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\ba[0-9a-f]{16}\b"
    r"|toolu_e2e\d+|<duration_ms>\d+</duration_ms>"
)


def normalized(value: Any, scratch: str) -> Any:
    """A payload with what differs between two runs of the same script (ids, times, the run's
    folder) replaced by placeholders."""
    if isinstance(value, dict):
        return {
            k: f"<{k}>" if k in VARYING and v is not None else normalized(v, scratch)
            for k, v in sorted(value.items())
        }
    if isinstance(value, list):
        return [normalized(v, scratch) for v in value]
    if isinstance(value, str):
        # Claude Code's own folder for the project names it with every other character a '-'
        slug = re.sub(r"[^A-Za-z0-9]", "-", scratch)
        value = value.replace(scratch, "<run>").replace(slug, "<run>")
        value = VARYING_TEXT.sub("<id>", value)
        return "<transcript>" if value.endswith(".jsonl") else value
    return value


def normalized_events(conn: apsw.Connection, scratch: str) -> Counter[str]:
    """Each events row, every column but its ids and times, as one JSON text."""
    rows: Counter[str] = Counter()
    query = (
        "SELECT hook_event_name, tool_name, tool_use_id IS NOT NULL, agent_id IS NOT NULL,"
        " agent_type, prompt_id IS NOT NULL, payload, truncated, via, unattributed FROM events"
    )
    for (
        name,
        tool_name,
        has_tool_use,
        has_agent,
        agent_type,
        has_prompt,
        payload,
        *rest,
    ) in conn.execute(query):
        fields = {
            "event": name,
            "tool_name": tool_name,
            "tool_use_id": has_tool_use,
            "agent_id": has_agent,
            "agent_type": agent_type,
            "prompt_id": has_prompt,
            "payload": normalized(json.loads(payload), scratch),
            "truncated, via, unattributed": rest,
        }
        rows[json.dumps(fields, sort_keys=True)] += 1
    return rows


def compare_events(mcp: Counter[str], other: Counter[str]) -> dict[str, dict[str, int]]:
    """Per event: rows the mcp run has that the other lacks ('missing'), and the reverse
    ('extra'), compared field by field (a row differing in one field counts in both)."""
    result: dict[str, dict[str, int]] = {}
    for side, rows in (("missing", mcp - other), ("extra", other - mcp)):
        for row, n in rows.items():
            event = json.loads(row)["event"]
            result.setdefault(event, {}).setdefault(side, 0)
            result[event][side] += n
    return result


def read_store(project: Path, session_id: str, run: Run) -> None:
    database = project / ".claude-session.db"
    if not database.exists():
        run.error = run.error or "no database"
        return
    conn = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        run.hooks_fired = scalar(conn, "SELECT count(*) FROM hook_events")
        run.other_session_rows = scalar(
            conn, "SELECT count(*) FROM hook_events WHERE session_id IS NOT ?", session_id
        )
        run.transports = {
            str(t): n
            for t, n in conn.execute(
                "SELECT transport, count(*) FROM hook_events GROUP BY 1 ORDER BY 2 DESC"
            )
        }
        run.by_event = {
            str(e): n
            for e, n in conn.execute(
                "SELECT event_type, count(*) FROM hook_events GROUP BY 1 ORDER BY 1"
            )
        }
        own = [d for (d,) in conn.execute("SELECT duration_ms FROM hook_events")]
        run.own_median_ms = round(statistics.median(own), 2) if own else None
        run.tool_calls_recorded = scalar(conn, "SELECT count(*) FROM tool_calls")
        run.tool_calls_succeeded = scalar(
            conn, "SELECT count(*) FROM tool_calls WHERE status = 'succeeded'"
        )
        if run.mode in ("mcp", "async"):
            EVENT_ROWS[(run.mode, run.round)] = normalized_events(conn, str(project.parent))
    finally:
        conn.close()


def new_run(
    mode: str, round_no: int, base: Path, plan: Plan
) -> tuple[Path, Path, Script, FakeAnthropic]:
    """A run's scratch folder under `base` (a git project with its work folder, a HOME, our
    state folders), the project, its script and the scripted API it talks to."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{mode}-r{round_no}-", dir=base))
    project = scratch / "project"
    for folder in ("project", "project/work", "home", "state", "data"):
        (scratch / folder).mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    script = Script(project, plan)
    api = FakeAnthropic(script)
    # tests/fake_api.py writes a response's headers and body apart: with Nagle on, each model
    # response would wait ~40 ms for the client's delayed acknowledgement, and that floor
    # would be in every mode's wall time, hiding what the hooks cost.
    setattr(api.server.RequestHandlerClass, "disable_nagle_algorithm", True)  # noqa: B010
    return scratch, project, script, api


def run_claude(
    claude: Path, project: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The scripted session: `claude -p` with its prompt, JSON out, no permission prompts."""
    return subprocess.run(
        [str(claude), "-p", PROMPT, "--output-format", "json", "--dangerously-skip-permissions"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def run_once(
    mode: str,
    round_no: int,
    claude: Path,
    base: Path,
    plan: Plan,
) -> Run:
    scratch, project, script, api = new_run(mode, round_no, base, plan)
    load = round(os.getloadavg()[0], 2)
    with api, HookReceiver() as receiver:
        env = run_env(scratch, api.url)
        install(mode, project, env, claude, receiver.url)
        if mode == "command":
            env["CLAUDE_SESSION_NO_RELAY"] = "1"
        if not plan.snapshots:
            env["CLAUDE_SESSION_NO_SNAPSHOTS"] = "1"
        started = time.perf_counter()
        done = run_claude(claude, project, env)
        ended = time.perf_counter()
        wall = ended - started
        posts = sum(receiver.posts.values())
        by_post = dict(sorted(receiver.posts.items()))
    run = Run(mode, round_no, round(wall, 3), done.returncode, script.total(), 0)
    run.load_1m = load
    if script.first is not None and script.last is not None:
        run.startup_s = round(script.first - started, 3)
        run.shutdown_s = round(ended - script.last, 3)
    try:
        result = json.loads(done.stdout)
        session_id = str(result.get("session_id") or "")
        if result.get("is_error"):
            run.error = f"claude: {str(result.get('result'))[:200]}"
    except ValueError:
        session_id = ""
        run.error = f"claude printed no JSON: {(done.stdout + done.stderr)[-300:]!r}"
    run.settle_s = round(settle(project, env), 2)
    if mode == "http":
        run.hooks_fired, run.by_event = posts, by_post
    elif mode not in ("none", "twin"):
        read_store(project, session_id, run)
        if run.tool_calls_recorded < run.tool_calls_made:
            run.error = run.error or (
                f"{run.tool_calls_made - run.tool_calls_recorded} tool calls not recorded"
            )
    return run


# --- the report ----------------------------------------------------------------------------


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q + 0.999999) - 1))]


def summarize(runs: list[Run], modes: list[str]) -> dict[str, dict[str, Any]]:
    none = {r.round: r.wall_s for r in runs if r.mode == "none"}
    none_median = statistics.median(none.values()) if none else None
    table: dict[str, dict[str, Any]] = {}
    for mode in modes:
        mine = [r for r in runs if r.mode == mode]
        walls = [r.wall_s for r in mine]
        row: dict[str, Any] = {
            "median_wall_s": round(statistics.median(walls), 2),
            "x_none": round(statistics.median(walls) / none_median, 3) if none_median else None,
            "hooks_median": statistics.median(r.hooks_fired for r in mine),
            "tool_calls_made": [r.tool_calls_made for r in mine],
            "tool_calls_recorded": [r.tool_calls_recorded for r in mine],
            "exit_codes": [r.exit_code for r in mine],
            "errors": [r.error for r in mine if r.error],
        }
        per_hook = [
            (r.wall_s - none[r.round]) * 1000 / r.hooks_fired
            for r in mine
            if r.round in none and r.hooks_fired
        ]
        if per_hook and mode != "none":
            row["per_hook_ms"] = [round(v, 2) for v in per_hook]
            row["per_hook_median_ms"] = round(statistics.median(per_hook), 2)
            row["per_hook_p95_ms"] = round(nearest_rank(per_hook, 0.95), 2)
        own = [r.own_median_ms for r in mine if r.own_median_ms is not None]
        if own:
            row["own_median_ms"] = round(statistics.median(own), 2)
        transports: Counter[str] = Counter()
        for r in mine:
            transports.update(r.transports)
        if transports:
            row["transports"] = dict(transports)
        table[mode] = row
    return table


def print_report(results: dict[str, Any]) -> None:
    table: dict[str, dict[str, Any]] = results["modes"]
    runs: list[dict[str, Any]] = results["runs"]
    rounds = results["rounds"]
    print(
        f"Claude Code {CLAUDE_VERSION}, {results['tool_calls']} tool calls a session"
        f" ({results['subagents']} subagents x {results['subagent_calls']}), {rounds} rounds,"
        f" {os.cpu_count()} cores; the model answers in {results['api_delay_ms']:g} ms;"
        f" workspace snapshots {'on' if results['snapshots'] else 'off'}"
    )
    p95_note = "the max" if rounds < 20 else "nearest rank"
    print(
        f"per hook = (wall - the same round's none) / hooks fired; p95 over {rounds} rounds"
        f" is {p95_note}; own ms: the median hook_events.duration_ms (the hook's own time);"
        " tools: the fewest tool calls recorded in a round / made\n"
    )
    header = (
        f"{'mode':8} {'wall s':>7} {'x none':>7} {'hooks':>6} {'ms/hook':>8} {'p95':>7}"
        f" {'own ms':>7} {'tools rec/made':>14}  transports"
    )
    print(header)
    for mode, row in table.items():
        made = min(row["tool_calls_made"])
        recorded = min(row["tool_calls_recorded"]) if mode not in ("none", "http") else "-"
        tools = f"{recorded}/{made}"
        transports = ", ".join(f"{k} {v}" for k, v in row.get("transports", {}).items())
        print(
            f"{mode:8} {row['median_wall_s']:>7.2f} {row['x_none'] or '':>7}"
            f" {row['hooks_median']:>6.0f} {row.get('per_hook_median_ms', ''):>8}"
            f" {row.get('per_hook_p95_ms', ''):>7} {row.get('own_median_ms', ''):>7}"
            f" {tools:>14}  {transports}"
        )
    print(
        "\nper run, in the order run: wall s (start to first model request + ... + last"
        " request to exit), hooks fired, settle s (after exit, until its processes were gone)"
    )
    for n in range(rounds):
        for r in (r for r in runs if r["round"] == n):
            middle = r["wall_s"] - r["startup_s"] - r["shutdown_s"]
            print(
                f"  round {n} {r['mode']:8} {r['wall_s']:6.2f} s ({r['startup_s']:.2f} +"
                f" {middle:.2f} + {r['shutdown_s']:.2f}), {r['hooks_fired']} hooks,"
                f" settle {r['settle_s']:.1f} s, load {r['load_1m']:.2f}"
            )
    for key, what in (
        ("events_async_vs_mcp", "async against the same round's mcp"),
        ("events_mcp_vs_next_mcp", "mcp against the next round's mcp (the baseline)"),
    ):
        compared = results.get(key) or {}
        if not compared:
            continue
        print(
            f"\nevents rows, {what}, field by field (ids, times and the run's folder aside):"
            " missing / extra per event"
        )
        for n, events in compared.items():
            found = ", ".join(
                f"{e} -{d.get('missing', 0)}/+{d.get('extra', 0)}"
                for e, d in sorted(events.items())
            )
            print(f"  round {n}: {found or 'the same rows'}")
    problems = [
        f"  {r['mode']} round {r['round']}: exit {r['exit_code']} {r['error']}"
        for r in runs
        if r["error"] or r["exit_code"] != 0
    ]
    if problems:
        print("\nproblems:\n" + "\n".join(problems))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tool-calls", type=int, default=200, help="a session's, subagents'")
    parser.add_argument("--subagents", type=int, default=2)
    parser.add_argument("--subagent-calls", type=int, default=40, help="each subagent's tool calls")
    parser.add_argument(
        "--api-delay-ms",
        type=float,
        default=0.0,
        help="the model's time per answer (default 0: the worst case for the ratio to none)",
    )
    parser.add_argument(
        "--no-snapshots",
        action="store_true",
        help="CLAUDE_SESSION_NO_SNAPSHOTS=1: the transports' cost without the capture processes",
    )
    parser.add_argument(
        "--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, of {', '.join(MODES)}"
    )
    parser.add_argument("--claude", type=Path, default=default_claude())
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the short unrecorded session per mode that warms the page cache first",
    )
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; known: {', '.join(MODES)}")
    if not args.claude.exists():
        raise SystemExit(f"no Claude Code at {args.claude}: run tests/test_e2e_claude.py once")
    base = Path(tempfile.mkdtemp(prefix="bench-real-cli-"))
    plan = Plan(
        args.tool_calls,
        args.subagents,
        args.subagent_calls,
        args.api_delay_ms,
        snapshots=not args.no_snapshots,
    )
    warmup = Plan(12, 1, 5, snapshots=plan.snapshots)
    runs: list[Run] = []
    try:
        if not args.no_warmup:
            for mode in modes:
                run_once(mode, -1, args.claude, base, warmup)
        for n in range(args.rounds):
            # Rotated: each mode runs first, second, ... equally often.
            for mode in modes[n % len(modes) :] + modes[: n % len(modes)]:
                run = run_once(mode, n, args.claude, base, plan)
                runs.append(run)
                if not args.json:
                    print(
                        f"round {n} {mode:8} {run.wall_s:7.2f} s, hooks {run.hooks_fired},"
                        f" exit {run.exit_code} {run.error}",
                        file=sys.stderr,
                    )
    finally:
        if args.keep:
            print(f"runs kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    results: dict[str, Any] = {
        "events_async_vs_mcp": {
            n: compare_events(EVENT_ROWS[("mcp", n)], EVENT_ROWS[("async", n)])
            for n in range(args.rounds)
            if ("mcp", n) in EVENT_ROWS and ("async", n) in EVENT_ROWS
        },
        # the baseline: how two runs of the same install differ (a subagent still running at
        # another's stop, or not, is in the payloads)
        "events_mcp_vs_next_mcp": {
            n: compare_events(EVENT_ROWS[("mcp", n)], EVENT_ROWS[("mcp", n + 1)])
            for n in range(args.rounds)
            if ("mcp", n) in EVENT_ROWS and ("mcp", n + 1) in EVENT_ROWS
        },
        "claude_version": CLAUDE_VERSION,
        "rounds": args.rounds,
        "tool_calls": args.tool_calls,
        "subagents": args.subagents,
        "subagent_calls": args.subagent_calls,
        "api_delay_ms": args.api_delay_ms,
        "snapshots": plan.snapshots,
        "cores": os.cpu_count(),
        "modes": summarize(runs, modes),
        "runs": [asdict(r) for r in runs],
    }
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_report(results)


if __name__ == "__main__":
    main()
