"""What Claude Code runs for its status line: `<python> -I -S <this file>`.

Like the hook entry beside it (`hook.py`, whose notes on `-I -S` and `sys.path` hold here too):
no `site`, the cyclic GC off, apsw imported without the `collections` package, and only the
standard library and apsw after that. Claude Code runs this on every new assistant message, so
it has to stay a few milliseconds above a bare interpreter. The line itself is made by
`claude_session.core.statusline`, which `claude-session statusline` calls too.
"""

import gc
import sys

if __name__ == "__main__":
    gc.disable()  # a ~15 ms process leaves no cycles worth collecting
    _package_parent = __file__.rpartition("/claude_session/")[0]
    _version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    _venv = sys.executable.rpartition("/bin/")[0]
    sys.path[:0] = [_package_parent, f"{_venv}/lib/python{_version}/site-packages"]

    from claude_session.hook import import_apsw_lean

    import_apsw_lean()
    from claude_session.core.statusline import main

    main()
