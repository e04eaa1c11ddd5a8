"""What Claude Code runs: `<python> -I -S <this file> EVENT`, the hook entry of every install.

`-I -S` skips `site` (its .pth processing costs milliseconds per event), so this file puts the
folder holding the `claude_session` package first on `sys.path` (site-packages for a wheel, the
checkout for a clone), then the site-packages of the venv the interpreter path names (apsw, for
a clone; without `site`, `sys.prefix` is not the venv's, but `sys.executable` is the unresolved
venv path written into the command). It lives inside the package, so every wheel carries it.
"""

import gc
import sys

if __name__ == "__main__":
    # A hook lives ~15 ms and leaves no cycles worth collecting: with the cyclic GC off from
    # the start, the imports below stop paying for collections (hookrt also turns it off).
    gc.disable()
    _package_parent = __file__.rpartition("/claude_session/")[0]
    _version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    _venv = sys.executable.rpartition("/bin/")[0]
    sys.path[:0] = [_package_parent, f"{_venv}/lib/python{_version}/site-packages"]

    from claude_session.runtime.hookrt import main

    main(sys.argv[1] if len(sys.argv) > 1 else "")
