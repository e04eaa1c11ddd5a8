# What type checkers see of the package: `__init__.py` loads these on first use (a hook's
# `import claude_session` stays cheap, and imports nothing above the core).
from .project import (
    Agent as Agent,
)
from .project import (
    Claim as Claim,
)
from .project import (
    CostReport as CostReport,
)
from .project import (
    Diff as Diff,
)
from .project import (
    Error as Error,
)
from .project import (
    FailedPath as FailedPath,
)
from .project import (
    Frame as Frame,
)
from .project import (
    HooksReport as HooksReport,
)
from .project import (
    Injection as Injection,
)
from .project import (
    Listing as Listing,
)
from .project import (
    LiveView as LiveView,
)
from .project import (
    Memory as Memory,
)
from .project import (
    MemoryAdded as MemoryAdded,
)
from .project import (
    MemoryChanged as MemoryChanged,
)
from .project import (
    NotFound as NotFound,
)
from .project import (
    Project as Project,
)
from .project import (
    ProjectError as ProjectError,
)
from .project import (
    RecordedEvent as RecordedEvent,
)
from .project import (
    Refreshed as Refreshed,
)
from .project import (
    Session as Session,
)
from .project import (
    SessionRow as SessionRow,
)
from .project import (
    SessionView as SessionView,
)
from .project import (
    StateChange as StateChange,
)
from .project import (
    StateSet as StateSet,
)
from .project import (
    StateValue as StateValue,
)
from .project import (
    Status as Status,
)
from .project import (
    TrustChanged as TrustChanged,
)
from .project import (
    Untrusted as Untrusted,
)
from .project import (
    Verdict as Verdict,
)

__version__: str
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
