"""The MCP server's first module path, which users' MCP configurations name
(`python -m claude_session.services.mcp_server`, as `install --mcp` registers it): it runs
claude_session/mcp_server.py, which reads through the library API above the services."""

from __future__ import annotations

from ..mcp_server import *  # noqa: F403  (the server's names, for code that imported them here)
from ..mcp_server import build, main, project_root, said

__all__ = ["build", "main", "project_root", "said"]

if __name__ == "__main__":
    main()
