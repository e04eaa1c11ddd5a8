"""Running our hook as another, unprivileged user (`nobody`), wherever the checkout is.

Root switches to `nobody` for real. Any other user cannot switch, but can become `nobody` in a
user namespace of its own (`unshare --user --map-user=65534`): the process then has nobody's
uid and passwd entry (no home, no HOME), which is what the tests look at, while the files it
creates belong to the real user. Where neither works, `become_nobody` says why, and the test
skips with that reason (./test.sh prints every skip's reason at the end of the run).

What the other user runs must be readable by it: a checkout under a folder only its owner can
read (`mktemp -d`, `/root`) is not, and neither is a pyenv interpreter under /root. So
`scratch_install` copies the package and apsw into a venv in a world-readable scratch folder,
made from an interpreter of this Python version that the other user can run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import claude_session

NOBODY = pwd.getpwnam("nobody")
UNSHARE = ("--user", f"--map-user={NOBODY.pw_uid}", f"--map-group={NOBODY.pw_gid}", "--")
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def become_nobody() -> tuple[list[str], dict[str, Any]] | str:
    """The argv prefix and subprocess arguments that run a program as `nobody`, or the reason
    this process cannot."""
    if os.geteuid() == 0:
        return [], {"user": NOBODY.pw_uid, "group": NOBODY.pw_gid, "extra_groups": []}
    unshare = shutil.which("unshare")
    if unshare is None:
        return "not root, and no unshare (util-linux) to become nobody in a user namespace"
    probe = subprocess.run([unshare, *UNSHARE, "id", "-u"], capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != str(NOBODY.pw_uid):
        why = probe.stderr.strip() or probe.stdout.strip()
        return f"not root, and this machine allows no user namespace ({why})"
    return [unshare, *UNSHARE], {}


def runnable_interpreter(prefix: list[str], switch: dict[str, Any]) -> str | None:
    """An interpreter of this Python version that the other user can run (not one inside a
    folder only we can read, as a pyenv one under /root is)."""
    base = getattr(sys, "_base_executable", sys.executable)
    candidates = [os.path.realpath(base), f"/usr/bin/python{VERSION}"]
    candidates += [f"/usr/local/bin/python{VERSION}"]
    for candidate in dict.fromkeys(candidates):
        if not os.path.exists(candidate):
            continue
        try:
            said = subprocess.run(
                [*prefix, candidate, "-I", "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                env={"PATH": "/usr/bin:/bin"},
                cwd="/",
                **switch,
            )
        except PermissionError:  # root's switch: the exec itself is refused
            continue
        if said.returncode == 0 and said.stdout.strip() == str(sys.version_info[:2]):
            return candidate
    return None


def scratch_install(interpreter: str) -> Path:
    """A venv in a new world-readable folder of /tmp holding a copy of this package and apsw,
    as a wheel install lays them out; its folder (the caller removes it)."""
    scratch = Path(tempfile.mkdtemp(prefix="cs-other-user-", dir="/tmp"))
    venv = scratch / "venv"
    subprocess.run([interpreter, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / f"lib/python{VERSION}/site-packages"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(claude_session.__file__).parent, site / "claude_session", ignore=ignore)
    import apsw

    ours = Path(apsw.__file__).parent.parent
    for item in ours.glob("apsw*"):
        if item.is_dir():
            shutil.copytree(item, site / item.name, ignore=ignore)
        else:
            shutil.copy(item, site / item.name)
    for path in [scratch, *scratch.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755)
    return scratch
