"""claude-session: Claude Code hook events recorded into a per-project SQLite database.

This module is imported by every hook process, so it defines the version and nothing else at
import time: `from claude_session import Project` (the library API, claude_session/project.py)
loads it when first asked for. Loaded by name, so that no module's `import claude_session`
(for the version) counts as an import of the library API, which sits above the services;
`__init__.pyi` tells type checkers what `Project` is.
"""

__version__ = "0.1.0"
__all__ = ["Project", "__version__"]


def __getattr__(name: str) -> object:
    if name == "Project":
        import importlib

        return importlib.import_module(f"{__name__}.project").Project
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
