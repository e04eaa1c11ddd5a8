# What type checkers see of the package: `__init__.py` loads `Project` on first use (a hook's
# `import claude_session` stays cheap, and imports nothing above the core).
from .project import Project as Project

__version__: str
__all__ = ["Project", "__version__"]
