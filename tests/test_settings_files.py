"""settings.json as users keep it: a symbolic link (dotfile managers) is edited where it points
and stays a link; every backup is 0600, uniquely named, and kept with our state, never in the
project where it could be committed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from conftest import PYTHON

CLI = str(Path(PYTHON).parent / "claude-session")


def install(project: Path) -> None:
    done = subprocess.run(
        [CLI, "--project", str(project), "install"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_symlinked_settings_file_is_edited_through_the_link(
    project: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text(json.dumps({"model": "keep-me"}))
    real.chmod(0o640)
    (project / ".claude").mkdir()
    link = project / ".claude" / "settings.local.json"  # where a project install writes
    os.symlink(real, link)
    install(project)
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    data = json.loads(real.read_text())
    assert data["model"] == "keep-me" and "SessionStart" in data["hooks"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file keeps its mode


def test_backups_are_private_unique_and_out_of_the_project(
    project: Path, isolated_state: Path
) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text("{}")
    install(project)
    install(project)  # twice within a second
    backups = sorted((isolated_state / "backups").iterdir())
    assert len(backups) == 2 and backups[0].name != backups[1].name
    assert all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups)
    assert not [p for p in project.rglob("*") if ".bak" in p.name]
