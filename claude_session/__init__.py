"""claude-session: Claude Code hook events recorded into a per-project SQLite database.

This module is imported by every hook process, so it defines the version and nothing else.
"""

__version__ = "0.1.0"
