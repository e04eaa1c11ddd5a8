"""claude-session: Claude Code hook events recorded into a per-project SQLite database.

This module is imported by every hook process, so it defines the version and nothing else at
import time: the library API (`from claude_session import Project`, claude_session/project/)
and its types load when first asked for. Loaded by name, so that no module's
`import claude_session` (for the version) counts as an import of the library API, which sits
above the services; `__init__.pyi` tells type checkers what each name is.
"""

__version__ = "0.1.0"
__all__ = [
    "Agent",
    "Claim",
    "CostReport",
    "Diff",
    "Error",
    "FailedPath",
    "Frame",
    "HooksReport",
    "Injection",
    "Listing",
    "LiveView",
    "Memory",
    "MemoryAdded",
    "MemoryChanged",
    "NotFound",
    "Project",
    "ProjectError",
    "RecordedEvent",
    "Refreshed",
    "Session",
    "SessionRow",
    "SessionView",
    "StateChange",
    "StateSet",
    "StateValue",
    "Status",
    "TrustChanged",
    "Untrusted",
    "Verdict",
    "__version__",
]


def __getattr__(name: str) -> object:
    if name in __all__ and name != "__version__":
        import importlib

        return getattr(importlib.import_module(f"{__name__}.project"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
