"""Claude Code DirectoryAdded hook. Every hook script is this one with another event name."""

import sys

# Started as `<venv>/bin/python -I -S <this file>`: without `site` (~3 ms saved per event) the
# checkout and the venv's site-packages (for apsw) are added here. See hooks/README.md.
venv = sys.executable.rpartition("/bin/")[0]
site = f"{venv}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
sys.path[:0] = [__file__.rpartition("/hooks/")[0], site]

from claude_session.hookrt import main

main("DirectoryAdded")
