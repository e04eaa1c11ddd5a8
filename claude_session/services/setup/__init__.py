"""Setting claude-session up and checking it (no imports here).

- `installer`: hooks in Claude Code's settings files (`with_ours`, `settings_path`...).
- `plugin`, `mcp_install`, `statusline_setup`: the plugin, the MCP server's registration,
  the status line.
- `hook_sources`: where Claude Code finds our hooks for a project (`Found`).
- `hook_record`: the hook commands we wrote for this user (sha256, per-user): `doctor` runs
  no other.
- `hook_client`: talking to the MCP hook server as Claude Code does (for `doctor`).
- `doctor`: every check; `payloads`: a payload checked against core/hook_payload.py, and
  pydantic models of hook outputs (CLI, doctor and tests only: never hooks).
- `demo`: a recorded session played through the real hooks.
"""
