"""`install` run from a subfolder installs for the project the folder is inside (its git
repository, `.claude` folder or database above) and says where; never into the subfolder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON

CLI = str(Path(PYTHON).parent / "claude-session")


def install_from(folder: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"} | {"HOME": str(home)}
    done = subprocess.run(
        [CLI, "install"], cwd=folder, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def test_from_a_subfolder_of_a_git_repository(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    done = install_from(deep, tmp_path)
    assert (project / ".claude" / "settings.json").exists()
    assert not (deep / ".claude").exists() and not (project / "src" / ".claude").exists()
    assert f"installing for the project at {project}" in done.stdout
    assert str(project / ".claude" / "settings.json") in done.stdout


def test_from_below_a_claude_folder_but_never_the_home_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)  # the user's own settings: not a project
    project = home / "work" / "thing"
    (project / ".claude").mkdir(parents=True)
    (project / "lib").mkdir()
    install_from(project / "lib", home)
    assert (project / ".claude" / "settings.json").exists()
    loose = home / "scratch"
    loose.mkdir()
    monkeypatch.setenv("HOME", str(home))
    from claude_session.services import installer

    assert installer.project_root_above(loose) != home  # the home folder's .claude is no project
    assert installer.project_root_above(project / "lib") == project
