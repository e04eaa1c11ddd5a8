"""What Claude Code runs: `<python> -I -S <this file> EVENT`, the hook entry of every install.

`-I -S` skips `site` (its .pth processing costs milliseconds per event), so this file puts the
folder holding the `claude_session` package first on `sys.path` (site-packages for a wheel, the
checkout for a clone), then the site-packages of the venv the interpreter path names (apsw, for
a clone; without `site`, `sys.prefix` is not the venv's, but `sys.executable` is the unresolved
venv path written into the command). It lives inside the package, so every wheel carries it.

Environment switches: `CLAUDE_SESSION_DISABLED=1` records nothing; `CLAUDE_SESSION_DROP_EVENTS`
(comma-separated event names, e.g. `PreToolUse,PostToolUse`) makes those events exit 0 without
being recorded, as if their hooks had been lost: for tests and drills of the transcript
reconciliation (services/cost/reconcile.py), which adds them back from Claude Code's transcript.
"""

import gc
import sys


def import_apsw_lean() -> None:
    """Import apsw without the `collections` package (~2 ms of a ~25 ms hook, measured).

    apsw's init asks for `collections.abc` only to fetch the ABCs (Mapping, ...), which live in
    `_collections_abc` (which `os` loads anyway); importing a dotted name imports its parent,
    and `collections/__init__` is the cost. For the length of apsw's init, `collections.abc`
    is that same module and `collections` an empty placeholder; both are removed afterwards,
    so a later `import collections` is the real one. Any surprise: the plain import.
    """
    import _collections_abc

    modules = sys.modules
    if "collections" in modules or "apsw" in modules:
        return
    modules["collections"] = type(sys)("collections")
    modules["collections.abc"] = _collections_abc
    try:
        import apsw  # noqa: F401
    except BaseException:
        pass  # the plain import in hookrt says what is wrong, if anything
    finally:
        del modules["collections"], modules["collections.abc"]


if __name__ == "__main__":
    # A hook lives ~15 ms and leaves no cycles worth collecting: with the cyclic GC off from
    # the start, the imports below stop paying for collections (hookrt also turns it off).
    gc.disable()
    _package_parent = __file__.rpartition("/claude_session/")[0]
    _version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    _venv = sys.executable.rpartition("/bin/")[0]
    sys.path[:0] = [_package_parent, f"{_venv}/lib/python{_version}/site-packages"]

    # The daemon answers most hooks: apsw and the core load only when it does not.
    from claude_session.runtime.relay import main

    main(sys.argv[1] if len(sys.argv) > 1 else "", import_apsw_lean)
