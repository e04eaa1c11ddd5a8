"""Every command of the CLI, run in-process (click's runner) with the arguments it needs to
print something, in every output format it offers: the table the hostile-text and the corrupt
database tests go over. The commands are found in click's own command tree, so a command
added later fails `check_every_command_is_named` until it is given its arguments here (or a
reason it cannot run in-process)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import apsw
import click
from click.testing import CliRunner
from conftest import fixture
from inproc import Recorder
from otlp_receiver import Receiver

from claude_session.cli import cli, main
from claude_session.core import injections
from tools.cli_docs import commands

# Recorded text at its worst: CSI and OSC sequences, an OSC 8 hyperlink, a C1 CSI, CR, BEL,
# backspace, a bidi override, and rich markup that must print as it is.
HOSTILE = (
    "x\x1b[31mred\x1b]0;title\x07\x1b]8;;http://x\x07link\x1b]8;;\x07\x9b2J\r\x07\x08"
    "\u202eevil\u202c[bold red]loud[/bold red]"
)
# What may never reach stdout or stderr raw: C0 (but newline and tab), DEL, C1, bidi marks.
BIDI = {0x200E, 0x200F, 0x061C, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def raw_controls(text: str) -> list[str]:
    """The control characters `text` holds raw (newline and tab are layout, not controls)."""
    return sorted(
        {
            repr(c)
            for c in text
            if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or ord(c) in BIDI
        }
    )


# The commands that cannot run in-process, and why (each is run as a process elsewhere).
NOT_RUN = {
    "daemon run": "the daemon itself: runs until stopped",
    "daemon start": "starts the daemon",
    "demo": "plays a session through the hook processes, in a scratch project of its own",
    "replay": "starts the real Claude Code CLI",
    "serve": "a web server: runs until stopped (tests/test_serve.py)",
}

# The commands that do not read the project's database, and why: on a corrupt one they do
# what they do on any other (they still never print a traceback).
NO_DATABASE = {
    "config": "the configuration file, not the database",
    "daemon status": "the daemon's status file",
    "daemon stop": "asks the daemon to stop",
    "install": "Claude Code's settings",
    "uninstall": "Claude Code's settings",
    "trust": "records the file's identity (device and inode), reads nothing in it",
    "prices update": "the per-user price table, not the database",
}
# Commands that read it and say so in their own way, not in one line on stderr.
OWN_WAY = {
    "doctor": "diagnoses: a failed `database` check among the others, exit 1",
    "statusline": "Claude Code shows its one line: `cs: ?` (exit 0) for a database it cannot read",
}
# What a command needs in its environment to get as far as the database (`receiving`).
ENV: dict[str, dict[str, str]] = {"export-otel": {}}


@contextmanager
def receiving() -> Iterator[Receiver]:
    """An OpenTelemetry backend on loopback (tests/otlp_receiver.py) for `export-otel`."""
    receiver = Receiver()
    ENV["export-otel"] = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    try:
        yield receiver
    finally:
        ENV["export-otel"] = {}
        receiver.stop()


# The commands that run in-process but not in the fast tier, and why.
SNAPSHOT = "takes the snapshot a frame still waits for: the capture's own git commit"
SLOW = {"diff": SNAPSHOT, "fork": SNAPSHOT, "revert": SNAPSHOT}
SLOW_RUNS: dict[str, list[list[str]]] = {
    "diff": [["{frame}", "{frame2}"], ["--stat", "{frame}", "{frame2}"]],
    "fork": [["{frame}", "--path", "{fork_path}"]],
    "revert": [["{frame}", "--dry-run"], ["--undo", "--dry-run"]],
}

# Each command's own arguments: one run per list, in every format the command offers (a few
# name what is not there, in hostile words: the error quotes them).
# `{session}`, `{frame}`, `{frame2}`, `{memory}`, `{key}` name what the recorded project holds.
RUNS: dict[str, list[list[str]]] = {
    "agents": [[], ["--all"], ["--session", HOSTILE]],
    "claims": [[], ["--all"]],
    "config": [[]],
    "cost": [[], ["--all"]],
    "prices update": [["--remove"]],
    "daemon status": [[]],
    "daemon stop": [[]],
    "doctor": [[]],
    "errors": [[], ["--all"]],
    "events": [["--payload"], ["--all", "--payload"], ["--session", HOSTILE]],
    "export-otel": [["--since", "1000w"]],
    "fail": [["approach " + HOSTILE, "--reason", HOSTILE]],
    "failed-paths": [[], ["--all"]],
    "fork": [["--list"]],
    "hooks": [[], ["--all"]],
    "ingest": [[]],
    "install": [["--dry-run"]],
    "memory accept": [["{memory}"]],
    "memory add": [["more " + HOSTILE]],
    "memory edit": [["{memory}", "--text", "edited " + HOSTILE]],
    "memory export": [[]],
    "memory forget": [["{memory}"]],
    "memory import": [["{export_file}"]],
    "memory list": [[], ["--all"], ["--pending"], ["--stale"]],
    "memory outcome": [["{memory}", "verified"], ["{memory}", "disproved", "--reason", HOSTILE]],
    "memory search": [["evil"]],
    "memory show": [["{memory}"], [HOSTILE]],
    "memory verify": [["{memory}"]],
    "prune": [["--dry-run"]],
    "restore": [["--session", "{session}"], ["--session", "{session}", "--all"], ["--preview"]],
    "sessions": [[], ["--all"]],
    "state get": [["{key}"], [HOSTILE]],
    "state history": [["{key}"]],
    "state list": [[]],
    "state set": [["{key}", "set " + HOSTILE]],
    "state unset": [["{key}"]],
    "status": [[]],
    "statusline": [[]],
    "timeline": [["{session}"], ["{session}", "--tree"], [HOSTILE]],
    "trust": [[]],
    "uninstall": [["--dry-run"]],
    "verdicts": [[], ["--all"]],
    "watch": [["--once"]],
}


def every_command() -> dict[str, click.Command]:
    """Every command that runs (not a group), by its words after `claude-session`."""
    found = {}
    for ctx, command in commands(cli, "claude-session"):
        if not isinstance(command, click.Group):
            found[" ".join(ctx.command_path.split()[1:])] = command
    return found


def formats(command: click.Command) -> list[list[str]]:
    """The output formats a command offers, as the options that ask for them."""
    out: list[list[str]] = [[]]
    for param in command.params:
        if isinstance(param, click.Option) and "--json" in param.opts:
            out.append(["--json"])
        if isinstance(param, click.Option) and "--format" in param.opts:
            assert isinstance(param.type, click.Choice)
            out = [["--format", str(choice)] for choice in param.type.choices]
    return out


def check_every_command_is_named() -> None:
    names = set(every_command())
    named = set(RUNS) | set(SLOW_RUNS) | set(NOT_RUN)
    assert set(SLOW) == set(SLOW_RUNS)
    assert names == named, (
        f"new commands, give them arguments in tests/every_command.py: {names - named};"
        f" gone: {named - names}"
    )


@dataclass
class Run:
    """One command line and what it printed, as the installed command prints it."""

    args: list[str]
    code: int
    stdout: str
    stderr: str


def run(root: Path, args: list[str], stdin: str = "") -> Run:
    """`claude-session --project ROOT ARGS` in this process, through `main` (the installed
    command's own entry, so its one-line error for a database that refuses is what is seen).
    An exception that gets out is what the installed command would print: a traceback."""
    env = next((v for k, v in ENV.items() if args[: len(k.split())] == k.split()), None)
    runner = CliRunner(env=env)
    code = 0
    escaped = ""
    with runner.isolation(input=stdin) as (out, err, _):
        argv = sys.argv
        sys.argv = ["claude-session", "--project", str(root), *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            code, escaped = 1, traceback.format_exc()
        finally:
            sys.argv = argv
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace") if err is not None else ""
    return Run(args, code, stdout, stderr + escaped)


def command_lines(
    values: dict[str, str], runs_of: dict[str, list[list[str]]] = RUNS
) -> list[tuple[str, list[str]]]:
    """(command, its command line) for every run of every command in every format."""
    found = every_command()
    out = []
    for name, runs in runs_of.items():
        for args in runs:
            for fmt in formats(found[name]):
                line = [*name.split(), *(a.format(**values) for a in args), *fmt]
                out.append((name, line))
    return out


SESSION = "5e55e55e-0000-4000-8000-00000000face"
AGENT = "a0000000000000001"


def record_hostile_project(root: Path) -> None:
    """A project recorded through the real event path (`events.apply`, tests/inproc.py) with
    hostile text in everything a payload carries, then every free text column written over
    with it straight (what a hook would have redacted or cut on the way in)."""
    os.environ["CLAUDE_SESSION_NO_JUDGE"] = "1"
    rec = Recorder(root)
    try:
        play(rec, root)
    finally:
        rec.close()
        del os.environ["CLAUDE_SESSION_NO_JUDGE"]


def play(rec: Recorder, root: Path) -> None:
    def send(name: str, **changes: object) -> None:
        payload = fixture(name, root) | {"session_id": SESSION, "cwd": str(root)}
        payload.pop("agent_id", None)
        payload.pop("agent_type", None)
        rec.send(payload | changes)
        rec.advance(1)

    hostile_file = str(root / ("a" + HOSTILE.replace("/", "_") + ".py"))
    send("SessionStart.startup", model="claude-" + HOSTILE)
    send("UserPromptSubmit", prompt="please " + HOSTILE)
    send("SubagentStart", agent_id=AGENT, agent_type="type" + HOSTILE)
    write = {"file_path": hostile_file, "content": HOSTILE}
    Path(hostile_file).write_text(HOSTILE)
    send("PreToolUse.Write", tool_use_id="toolu_w1", tool_input=write, agent_id=AGENT)
    send("PostToolUse.Write", tool_use_id="toolu_w1", tool_input=write, agent_id=AGENT)
    for i in range(3):
        bash = {"command": "run " + HOSTILE, "description": HOSTILE}
        send(
            "PostToolUseFailure.Bash",
            tool_use_id=f"toolu_f{i}",
            tool_input=bash,
            error="Exit code 1\n" + HOSTILE,
        )
    send(
        "SubagentStop",
        agent_id=AGENT,
        agent_type="type" + HOSTILE,
        last_assistant_message=HOSTILE,
    )
    send("Stop", last_assistant_message=HOSTILE)
    _, answer = rec.send(
        fixture("SessionStart.compact", root) | {"session_id": SESSION, "cwd": str(root)}
    )
    given = injections.model_text("SessionStart", answer)
    assert given is not None, "a compaction restores the recorded state"
    injections.record(rec.conn, rec.now, SESSION, None, "SessionStart", *given, source="compact")
    injections.record(
        rec.conn, rec.now, SESSION, AGENT, "mcp" + HOSTILE, "mcp" + HOSTILE, HOSTILE, source=HOSTILE
    )
    send("UserPromptSubmit", prompt="again " + HOSTILE)


# Columns left as they are: what the code compares with its own words (statuses, kinds, event
# names), hashes and commits the snapshot store looks up. Ids and keys get the hostile text
# too: appended alike everywhere, rows still join.
KEPT = {
    "status",
    "from_status",
    "to_status",
    "kind",
    "operation",
    "scope",
    "category",
    "review",
    "outcome",
    "decision",
    "hash",
    "state_hash",
    "sha256",
    "seen_sha256",
    "payload_sha256",
    "fingerprint",
    "snapshot_commit",
    "git_head",
    "git_commit",
    "jj_commit_id",
    "jj_operation_id",
    "dedup_key",
    "state",
    "files",
    "snapshot_type",
    "event_type",
    "hook_event_name",
    "dispatcher",
    "transport",
    "via",
    "how",
    "name",
    "k",
    "v",
}


def poison(root: Path) -> None:
    """Every free text column of every table, hostile text appended (JSON left valid)."""
    conn = apsw.Connection(str(root / ".claude-session.db"))
    conn.setbusytimeout(5000)
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT LIKE 'memories_fts%' AND name NOT LIKE 'schema%'"
        )
    ]
    with conn:
        for table in tables:
            for column in conn.execute(f"PRAGMA table_info({table})").fetchall():
                name, kind = column[1], str(column[2]).upper()
                if kind != "TEXT" or name in KEPT:
                    continue
                if name.endswith(("_at", "_time")) or name == "timestamp":
                    continue
                try:
                    conn.execute(
                        f'UPDATE "{table}" SET "{name}" = "{name}" || ?'
                        f' WHERE "{name}" IS NOT NULL AND NOT json_valid("{name}")',
                        (HOSTILE,),
                    )
                except apsw.ConstraintError:  # a column of a few words the schema names
                    pass
    conn.close()


def kept(root: Path) -> bytes:
    """The project's database as it is now, whole in its main file (the WAL checkpointed)."""
    conn = apsw.Connection(str(root / ".claude-session.db"))
    conn.setbusytimeout(5000)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    return (root / ".claude-session.db").read_bytes()


def put_back(root: Path, saved: bytes) -> None:
    """The database as `kept` saw it, in the same file (its identity, which trust reads, kept)."""
    for name in (".claude-session.db-wal", ".claude-session.db-shm"):
        (root / name).unlink(missing_ok=True)
    with open(root / ".claude-session.db", "r+b") as f:
        f.write(saved)
        f.truncate()
