"""What `install` writes into Claude Code's settings and the runtime answers to, defined once:
the installer (services/setup) builds its commands and mcp_tool hooks from these, the hook
runtime, the MCP hook server and the relay check against the same names (tests/test_wiring.py
installs into a scratch HOME and checks every entry written against the runtime).

Imports nothing: the hook runtime loads it on every event.
"""

# Claude Code's exit status for "block" (a command hook's contract).
CLAUDE_BLOCK_EXIT = 2
# The runtime's own status for a deliberate block: not 2, which python itself exits with when
# it cannot open the script. The installed shell guard turns BLOCK_EXIT into
# CLAUDE_BLOCK_EXIT and every other status into 0 (a broken install never blocks).
BLOCK_EXIT = 3

# The interpreter's flags in every command we install (no user site, no site-packages scan:
# the hook imports only the standard library, apsw and our package beside its entry).
INTERPRETER_FLAGS = ("-I", "-S")
# The entries inside the package that the installed commands name.
HOOK_ENTRY = "hook.py"
MCP_HOOK_ENTRY = "mcp_hook_server.py"
STATUSLINE_ENTRY = "statusline.py"

# The MCP hook server (runtime/mcp_transport.py): its name as `install` registers it, and the one
# tool every mcp_tool hook calls. The tool is never offered to the model, but Claude Code
# lists every mcp_tool hook's tool among the tools used in a compaction's summary, so its name
# says it is not the model's.
MCP_HOOK_SERVER = "claude-session-hooks"
HOOK_TOOL = "called_by_claude_code_not_the_model"
# The end of every command hook `install` writes: how ours are told from other hooks (in
# settings, and in the commands Claude Code's transcripts name).
MARKER = "# claude-session"
# How Claude Code's transcripts name an mcp_tool hook's run: SERVER/TOOL.
HOOK_RUN_NAME = f"{MCP_HOOK_SERVER}/{HOOK_TOOL}"
# The memory MCP server (claude_session/mcp_server.py), as `install --with-mcp` registers it.
MCP_SERVER = "claude-session"

# Seconds Claude Code gives each hook, as `install` writes them. SessionEnd's value also raises
# Claude Code's 1.5 s budget for SessionEnd hooks. The judge's events wait for it
# (judge_timeout_seconds, default 120). The runtime's own deadlines stay under these (the
# relay's ANSWER_SECONDS; tests/test_wiring.py checks it).
HOOK_TIMEOUTS = {
    "SessionStart": 15,
    "PreCompact": 20,
    "SessionEnd": 5,
    "TaskCompleted": 180,
    "Stop": 180,
    "SubagentStop": 180,
}
DEFAULT_HOOK_TIMEOUT = 10

# A hook run that Claude Code's transcript names as ours is taken (into `hooks`, `doctor`,
# the status line, OTel) only when our own log has it: the agent can append lines to its own
# transcript, our command's name and any durationMs in them. Taken: hook_events holds a run
# of that event in that session, delivered by Claude Code (source 'hook'), that started
# within the hook's timeout (plus CLOCK_SLACK_SECONDS either side) before the line's time,
# and the durationMs is within that timeout (Claude Code stops the hook there). Other hooks'
# runs are not ours to confirm: their figures are what the transcript says, within its bounds.
CLOCK_SLACK_SECONDS = 5


def timeout_sql(event: str) -> str:
    """SQL: the seconds Claude Code gives our hook of the event in column `event`."""
    cases = " ".join(f"WHEN '{name}' THEN {seconds}" for name, seconds in HOOK_TIMEOUTS.items())
    return f"(CASE {event} {cases} ELSE {DEFAULT_HOOK_TIMEOUT} END)"


def taken_sql(run: str) -> str:
    """SQL: whether the hook_runs row `run` (a table name or alias) is taken into figures."""
    limit = timeout_sql(f"{run}.event")
    return (
        f"({run}.ours = 0 OR (coalesce({run}.duration_ms, 0) <= {limit} * 1000"
        f" AND EXISTS (SELECT 1 FROM hook_events mine WHERE mine.started_at BETWEEN"
        f" {run}.at - {limit} - {CLOCK_SLACK_SECONDS} AND {run}.at + {CLOCK_SLACK_SECONDS}"
        f" AND mine.session_id = {run}.session_id AND mine.event_type = {run}.event"
        " AND mine.source = 'hook')))"
    )
