"""The library API: what claude-session recorded about a project, read from Python.

    from claude_session import Project

    with Project(".") as project:
        for session in project.sessions():
            print(session.session_id, session.status, session.tool_calls)

`Project(path)` finds the database the way the CLI does (`path` itself, else the nearest folder
up holding a `.claude-session.db`). It is the one door of every front end: the CLI, the MCP
server and the web page read and write through it, and nothing else.

Reading never writes, anywhere (the project,
the per-user state and data folders): no database is created where there is none
(`Project.exists` is False and every method answers empty), the spool is not ingested, nothing
is migrated (a database an older version wrote is refused with the command that upgrades it),
Claude Code's transcripts are not read for costs (what the hooks, the daemon or a CLI command
already read is what there is), no state folder nor snapshot store is made, and no git that
writes is run. A database nobody has open (no -wal) is read as it is on disk (SQLite's
`immutable`, so not even a -wal or -shm file is made), and read through SQLite's own -wal and
-shm again as soon as a writer appears; one in use is read through the files its writers made.

Trust: every record comes from the project's database, whose trust `Project.trusted` says (a
database that came with a clone is not: core/trust.py). Memories mix two databases (the
project's and the user's global one): each Memory's `trusted` is 1 only when its row says so
and its database is trusted; a row of an untrusted database is 0, whatever it claims.

Writing is asked for by name: `refresh()` (migrate, take in the spool, read the transcripts'
new bytes), `upgrade()` (migrate, and only when an older version wrote it), the memory verbs
(`add_memory`, `edit_memory`, `forget_memory`, `accept_memory`, `memory_outcome`,
`verify_memory`), `set_state`/`unset_state`, and `trust`/`revoke_trust`;
each runs in one transaction and answers with a dataclass saying what it did.

Every method returns frozen dataclasses (claude_session/records.py) whose fields are the names
the CLI's `--json` prints: `dataclasses.asdict(row)` gives the row that command shows. Errors
are `ProjectError` and its kinds (`NotFound`, `Untrusted`). The parts: `opening` (finding and
opening the databases), `reads`, `memory_reads` (the memory listing, one memory with its
files, the possibly stale), `views` (the web page's whole-page reads), `writes`.
"""

from __future__ import annotations

from ..records import (
    Agent,
    Claim,
    CostReport,
    Diff,
    Error,
    FailedPath,
    Frame,
    HooksReport,
    Injection,
    Listing,
    LiveView,
    Memory,
    MemoryAdded,
    MemoryChanged,
    RecordedEvent,
    Refreshed,
    Session,
    SessionRow,
    SessionView,
    StateChange,
    StateSet,
    StateValue,
    Status,
    TrustChanged,
    Verdict,
)
from .memory_reads import ProjectMemories
from .opening import NotFound, ProjectError, Untrusted, find_root, search_memories
from .reads import ProjectReads
from .views import ProjectViews
from .writes import ProjectWrites

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
    "find_root",
    "search_memories",
]


class Project(ProjectReads, ProjectMemories, ProjectViews, ProjectWrites):
    """A project recorded by claude-session. `Project(path)`: `path` or the nearest folder up
    with a database; `exists` says whether there is one (without, every read answers empty
    and `refresh` makes none unless events wait in the spool). Close it (`close()`, or use
    it as a context manager)."""
