"""The MCP hook server's entry: what Claude Code starts as the `claude-session-hooks` MCP server
of a session, `<python> -I -S <this file>`, the receiving end of the `mcp_tool` hook transport
(runtime/mcp_transport.py).

`-I -S` as for hook.py: no `site`, and this file puts the folder holding the `claude_session`
package first on `sys.path`, then the site-packages of the venv the interpreter path names.
Claude Code starts the server in the project, which `-I` keeps off `sys.path`.
"""

import sys

if __name__ == "__main__":
    _package_parent = __file__.rpartition("/claude_session/")[0]
    _version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    _venv = sys.executable.rpartition("/bin/")[0]
    sys.path[:0] = [_package_parent, f"{_venv}/lib/python{_version}/site-packages"]

    from claude_session.runtime.mcp_transport import main

    main()
