"""Project configuration: `<project>/.claude-session.json`, every key optional.

The defaults and the one validation live here, in the standard library, so that hooks, the
CLI, the daemon and doctor agree on every value (a lease of 0 minutes is invalid everywhere).
Hooks read the file with SQLite's JSON functions (`json` costs ~5 ms to import) and pass what
they found through the same `validate`; an invalid value falls back to its default there, and
`claude-session config` and `doctor` report it.
"""

import os

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    import apsw

CONFIG_NAME = ".claude-session.json"
CONFIG_CAP_BYTES = 64 * 1024

DEFAULTS: dict[str, object] = {
    # A file claim is a lease: it lasts this long after the agent's last activity.
    "claim_lease_minutes": 15.0,
    # On a Write/Edit of a file another live agent holds: "warn" (context for the model) or
    # "deny" (refuse the tool call, with the reason).
    "conflict_policy": "warn",
    # A running agent silent this long, while its session is live, becomes aborted_stale.
    "stale_after_minutes": 10.0,
    # A session with no event for this long is over: its running agents are closed out.
    "session_idle_minutes": 60.0,
    # The SessionStart hook starts the daemon if it is not running.
    "daemon_autostart": True,
    # The daemon exits after this long with no live session.
    "daemon_idle_exit_minutes": 30.0,
    # How often the daemon sweeps for stale agents, at the latest.
    "sweep_interval_seconds": 30.0,
    # From the 5th failure of the same thing, refuse further edits to the file at fault.
    "escalation_deny_edits": False,
    # A failed path stops being shown this long after it was recorded.
    "failed_path_ttl_days": 14.0,
    # Events at which a judge checks that the work is really done: any of TaskCompleted,
    # Stop, SubagentStop (comma-separated); "" (the default) leaves the judge off: it calls a
    # paid model, so it is opt-in (`install` on a terminal asks).
    "judge_events": "",
    # The judge: a command that reads a prompt on stdin and answers JSON
    # {"decision": "allow"|"block", "reason": "..."} (also inside `claude -p` JSON output).
    "judge_command": (
        "claude -p --model haiku --output-format json --max-turns 1"
        " --settings '{\"disableAllHooks\": true}'"
    ),
    "judge_timeout_seconds": 120.0,
    # What the judge may spend in a day (UTC), in USD, by the costs its command reported;
    # past it, the judge skips (the work goes ahead) and `status` says so.
    "judge_budget_usd_per_day": 1.0,
    # A hook whose 90th percentile run, as Claude Code times it (its transcripts'
    # durationMs), passes this many milliseconds: `doctor` warns, `status` and the status line
    # say so (ours or any other hook).
    "hook_budget_ms": 100.0,
    # A snapshot of the work tree (in claude-session's own snapshot repository, never the
    # user's) after each tool call that can change files and at each turn: what `revert`,
    # `diff` and `fork` go back to.
    "workspace_snapshots": True,
    # No hook waits for a snapshot: a Write/Edit keeps its file as it was for the snapshot
    # still pending. Above 0, a tool that names no file (Bash) waits at most this long for it,
    # so the frame before it is exact rather than perhaps holding part of its changes.
    "snapshot_wait_seconds": 0.0,
    # Files larger than this are left out of workspace snapshots.
    "snapshot_max_file_mb": 5.0,
    # Snapshots leave out files that hold secrets by their name (core/secret_files.py: `.env*`,
    # `*.pem`, `*.key`, `id_rsa*`...) and these too: gitignore patterns, comma-separated; a
    # `!PATTERN` takes a file back in (`!.env.example`).
    "snapshot_exclude": "",
    # Memories are put before the model: at SessionStart the preferences, facts and skills
    # that matter most, at each prompt the ones that match it.
    "memory_recall": True,
    # A resumed or compacted session is told only what changed since the recorded state it
    # still holds (read from its transcript); off: the whole recorded state every time.
    "restore_delta": True,
    # A memory about files that changed since it was recorded (content, deleted, moved):
    # "mark" gives it marked possibly stale, naming each file and when it changed; "hold"
    # keeps it back, the injection saying how many were (`memory list --stale` lists them).
    "memory_stale": "mark",
    # At most this many characters of memories per SessionStart and per prompt.
    "memory_budget_chars": 1500.0,
    # Memories kept at most (the least used learned ones go first; yours always stay).
    "memory_max_count": 20000.0,
    # The snapshot repository is kept under this size: past it, the snapshots of the oldest
    # ended sessions go first (their frames and states stay).
    "snapshot_store_max_mb": 2048.0,
    # OpenTelemetry traces of every session, sent by the daemon (off when empty;
    # else the standard OTEL_EXPORTER_OTLP_* variables of the process decide): the collector
    # or backend, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (http://host:4318; gRPC: :4317).
    "otel_endpoint": "",
    "otel_protocol": "http/protobuf",
    # Headers for the backend's auth, as OTEL_EXPORTER_OTLP_HEADERS: "key=value,key2=value2";
    # ${NAME} is taken from the environment, so the secret itself need not be in this file.
    "otel_headers": "",
    # Prompts, commands, file paths and error text in the spans (redacted); off: left out.
    "otel_log_content": False,
    # A span goes out this long after it ended: the transcripts' tokens and cost are in by then.
    "otel_export_delay_seconds": 30.0,
    # One export run (a pass of the daemon; each batch of `export-otel`) ends by
    # this long, however slowly the backend answers; what did not go out is tried again later.
    "otel_export_timeout_seconds": 30.0,
}
# The range of each numeric setting: above the first (at it too for those in FROM_LOW), at
# most the second. NaN and infinity are outside every range (NaN compares false), and so is
# a number too large for the arithmetic done with it (1e308 minutes overflows a timestamp).
RANGES: dict[str, tuple[float, float]] = {
    "claim_lease_minutes": (0, 7 * 24 * 60),
    "stale_after_minutes": (0, 7 * 24 * 60),
    "session_idle_minutes": (0, 7 * 24 * 60),
    "daemon_idle_exit_minutes": (0, 7 * 24 * 60),
    "sweep_interval_seconds": (0, 24 * 3600),
    "failed_path_ttl_days": (0, 3650),
    "judge_timeout_seconds": (0, 3600),
    "judge_budget_usd_per_day": (0, 10000),
    "hook_budget_ms": (0, 600000),
    "snapshot_wait_seconds": (0, 600),
    "snapshot_max_file_mb": (0, 65536),
    "memory_budget_chars": (0, 1000000),
    "memory_max_count": (0, 10000000),
    "snapshot_store_max_mb": (0, 1048576),
    "otel_export_delay_seconds": (0, 24 * 3600),
    "otel_export_timeout_seconds": (0, 3600),
}
FROM_LOW = frozenset({"snapshot_wait_seconds"})  # 0 is a value of these: off
CHOICES: dict[str, tuple[str, ...]] = {
    "conflict_policy": ("warn", "deny"),
    "otel_protocol": ("http/protobuf", "grpc"),
    "memory_stale": ("mark", "hold"),
}
JUDGE_EVENTS = ("TaskCompleted", "Stop", "SubagentStop")


def config_path(root: str) -> str:
    return os.path.join(root, CONFIG_NAME)


def validate(found: "dict[str, object]") -> "tuple[dict[str, object], list[str]]":
    """The defaults overlaid with every valid value of `found`, and one line per problem
    (unknown keys too: a typo would otherwise silently keep the default)."""
    values = dict(DEFAULTS)
    problems: list[str] = []
    for key, value in found.items():
        problem = check(key, value)
        if problem:
            problems.append(f"{key}: {problem}")
        else:
            values[key] = float(value) if isinstance(DEFAULTS[key], float) else value  # type: ignore[arg-type]
    return values, problems


def megabytes(values: "dict[str, object]", key: str) -> int:
    """A size setting given in megabytes (`snapshot_max_file_mb`...), in bytes."""
    value = values.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        value = DEFAULTS[key]  # validated values are numbers; never a 0 that would prune all
    return int(float(value) * 1024 * 1024)  # type: ignore[arg-type]


def check(key: str, value: object) -> str | None:
    """Why `value` is not valid for `key`, or None."""
    if key not in DEFAULTS:
        return f"unknown setting; known: {', '.join(sorted(DEFAULTS))}"
    default = DEFAULTS[key]
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, float):
        return _out_of_range(key, value)
    if not isinstance(value, str):
        return "must be a string"
    if key in CHOICES and value not in CHOICES[key]:
        return f"must be one of {', '.join(CHOICES[key])}"
    if key == "judge_events":
        unknown = sorted({e.strip() for e in value.split(",") if e.strip()} - set(JUDGE_EVENTS))
        if unknown:
            return f"unknown events {', '.join(unknown)}; use {', '.join(JUDGE_EVENTS)}"
    if key == "judge_command" and not value.strip():
        return "must not be empty"
    if key == "snapshot_exclude" and any(c in value for c in "\n\r\0"):
        return "must be gitignore patterns on one line, separated by commas"
    if key == "otel_endpoint" and value and not value.startswith(("http://", "https://")):
        return "must be a URL starting with http:// or https:// (or empty: off)"
    if key == "otel_headers" and any("=" not in pair for pair in value.split(",") if pair.strip()):
        return "must be key=value pairs separated by commas"
    return None


def allowed(key: str) -> str:
    """A numeric setting's range, as its error says it."""
    low, high = RANGES[key]
    if key in FROM_LOW:
        return f"from {low:g} to {high:g}"
    return f"greater than {low:g} and at most {high:g}"


def _out_of_range(key: str, value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number {allowed(key)}"
    low, high = RANGES[key]
    if (low <= value if key in FROM_LOW else low < value) and value <= high:
        return None
    # A float as Python writes it (inf, nan); an integer too long to show is not written out.
    said = f"{value!r}" if isinstance(value, float) or abs(value) < 10**30 else "a huge number"
    return f"must be {allowed(key)}, not {said}"


def for_hooks(root: str, scratch: "apsw.Connection") -> "dict[str, object]":
    """The configuration with defaults, read with SQLite's JSON functions; invalid values keep
    their default (the CLI and doctor report them). A missing file costs one failed open.
    `CLAUDE_SESSION_NO_SNAPSHOTS` (probes, doctor) turns workspace snapshots off."""
    values = _for_hooks(root, scratch)
    if os.environ.get("CLAUDE_SESSION_NO_SNAPSHOTS"):
        values["workspace_snapshots"] = False
    return values


def _for_hooks(root: str, scratch: "apsw.Connection") -> "dict[str, object]":
    text = read_text(root)
    if text is None or untrusted(root, text):
        return dict(DEFAULTS)
    try:
        found = scratch.execute(
            "SELECT key, value, type FROM json_each(?1) WHERE json_valid(?1)"
            " AND json_type(?1) = 'object'",
            (text,),
        ).fetchall()
        strict = found or scratch.execute("SELECT json_valid(?1)", (text,)).fetchall()[0][0]
    except Exception:
        return dict(DEFAULTS)
    if not strict:
        return validate(_as_the_cli_reads(text))[0]
    values: dict[str, object] = {}
    for key, value, kind in found:
        if kind in ("true", "false"):
            value = kind == "true"
        elif kind in ("object", "array", "null"):
            value = None  # invalid for every setting
        values[str(key)] = value
    return validate(values)[0]


def _as_the_cli_reads(text: str) -> "dict[str, object]":
    """A file that is not strict JSON, read as the CLI reads it (Python's `json`), so that a
    value only it takes (`Infinity`, `NaN`) costs its own key, as `config` reports, not the
    whole file. `json` is imported only here: a file as `config --set` writes it never gets
    this far."""
    import json

    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return {}  # not JSON at all: the defaults, as `config` and `doctor` say
    return found if isinstance(found, dict) else {}


def untrusted(root: str, text: str) -> str | None:
    """Why this configuration must not be used (a clone's, or edited since it was trusted)."""
    from .trust import config_problem

    return config_problem(config_path(root), text)


def read_text(root: str) -> str | None:
    """The file's text (capped), or None when there is none. A link planted at the path is
    not followed."""
    try:
        fd = os.open(config_path(root), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, CONFIG_CAP_BYTES).decode("utf-8", "replace")
    except OSError:  # a directory, an unreadable device: no configuration (doctor says why)
        return None
    finally:
        os.close(fd)


def number(values: "dict[str, object]", key: str) -> float:
    """A numeric setting of validated `values`."""
    value = values[key]
    return float(value) if isinstance(value, int | float) else float(str(DEFAULTS[key]))
