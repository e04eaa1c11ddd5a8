"""Project configuration: `<project>/.claude-session.json`, every key optional.

The defaults live here, once. The pydantic model in `config_model` validates the file for the
CLI and the daemon (and builds its defaults from DEFAULTS); hooks cannot afford pydantic, json
or tomllib (~5-20 ms to import), so they read the file through SQLite's JSON functions and keep
the default for any key that is missing or of the wrong type.
"""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import apsw

CONFIG_NAME = ".claude-session.json"

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
    # The SessionStart hook starts the background process if it is not running.
    "daemon_autostart": True,
    # The background process exits after this long with no live session.
    "daemon_idle_exit_minutes": 30.0,
    # How often the background process sweeps for stale agents, at the latest.
    "sweep_interval_seconds": 30.0,
    # From the 5th failure of the same thing, refuse further edits to the file at fault.
    "escalation_deny_edits": False,
    # A failed path stops being shown this long after it was recorded.
    "failed_path_ttl_days": 14.0,
    # Events at which a judge checks that the work is really done: any of TaskCompleted,
    # Stop, SubagentStop (comma-separated); "" turns the judge off.
    "judge_events": "TaskCompleted",
    # The judge: a command that reads a prompt on stdin and answers JSON
    # {"decision": "allow"|"block", "reason": "..."} (also inside `claude -p` JSON output).
    "judge_command": (
        "claude -p --model haiku --output-format json --max-turns 1"
        " --settings '{\"disableAllHooks\": true}'"
    ),
    "judge_timeout_seconds": 120.0,
}
CHOICES: dict[str, tuple[str, ...]] = {"conflict_policy": ("warn", "deny")}
JUDGE_EVENTS = ("TaskCompleted", "Stop", "SubagentStop")


def config_path(root: str) -> str:
    return os.path.join(root, CONFIG_NAME)


def for_hooks(root: str, scratch: "apsw.Connection") -> dict[str, object]:
    """The configuration with defaults, read with SQLite's JSON functions.

    Invalid values fall back to their default silently here; `claude-session config` reports
    them. A missing file costs one failed open.
    """
    values = dict(DEFAULTS)
    try:
        with open(config_path(root), encoding="utf-8", errors="replace") as f:
            text = f.read(64 * 1024)
    except OSError:
        return values
    try:
        found = scratch.execute(
            "SELECT key, value, type FROM json_each(?) WHERE json_valid(?)", (text, text)
        ).fetchall()
    except Exception:
        return values
    for key, value, kind in found:
        default = DEFAULTS.get(key)
        if isinstance(default, bool):
            if kind in ("true", "false"):
                values[key] = bool(value)
        elif isinstance(default, float):
            if kind in ("integer", "real") and value >= 0:
                values[key] = float(value)
        elif isinstance(default, str) and value in CHOICES.get(key, (value,)):
            values[key] = value
    return values
