"""Slower work above the core, one package per capability (no imports here: hooks import some
of these modules on their hot path, stdlib and apsw only). docs/design.md, "The services",
draws the tree and the one direction of imports between the packages:

- `snapshots`: the snapshot store (claude-session's own git directory per project), taking
  snapshots (the capture process), what a snapshot leaves out, restoring files from one.
- `timetravel`: frames and their addresses, the history between frames, revert, fork.
- `cost`: transcripts read for usage, costs, reconciliation with Claude Code's figures.
- `telemetry`: sessions as OpenTelemetry spans, and their export.
- `setup`: install/uninstall (hooks, MCP, plugin, status line), doctor, demo, payload models.
- `background`: the daemon's sweeps, and starting and finding it.

At the top, the small base every package may use (`config_file`, `gitstate`, `judge`), the
checks `status` and `doctor` share (`health`), and the few modules that read across the
packages (`queries`, `live`, `prune`). Above the services: claude_session/project/ (the
library API), then the MCP server (claude_session/mcp_server.py) and the web page
(claude_session/web/).
"""
