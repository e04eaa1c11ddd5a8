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
    # A wide console: its lines are compared whole (at 80 columns long paths fold).
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env |= {"HOME": str(home), "COLUMNS": "1000"}
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
    assert (project / ".claude" / "settings.local.json").exists()
    assert not (deep / ".claude").exists() and not (project / "src" / ".claude").exists()
    assert f"installing for the project at {project}" in done.stdout
    assert str(project / ".claude" / "settings.local.json") in done.stdout


def test_from_below_a_claude_folder_but_never_the_home_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)  # the user's own settings: not a project
    project = home / "work" / "thing"
    (project / ".claude").mkdir(parents=True)
    (project / "lib").mkdir()
    install_from(project / "lib", home)
    assert (project / ".claude" / "settings.local.json").exists()
    loose = home / "scratch"
    loose.mkdir()
    monkeypatch.setenv("HOME", str(home))
    from claude_session.services.setup import installer

    assert installer.project_root_above(loose) != home  # the home folder's .claude is no project
    assert installer.project_root_above(project / "lib") == project


def test_a_project_install_leaves_no_path_of_this_machine_in_the_shared_settings(
    tmp_path: Path,
) -> None:
    """The shared `.claude/settings.json` is committed: a teammate's Claude Code would run an
    interpreter path that exists only here. The hooks go to the personal settings.local.json
    (an older install's hooks leave the shared file), and they record."""
    import json
    import shlex

    import apsw
    from conftest import fixture

    from claude_session.services.setup import installer

    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    shared = project / ".claude" / "settings.json"
    shared.write_text(json.dumps(installer.with_ours({"model": "team-model"})))  # an old install
    done = subprocess.run(
        [CLI, "--project", str(project), "install"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "settings.local.json" in done.stdout and "teammate" in done.stdout
    text = shared.read_text()
    assert json.loads(text) == {"model": "team-model"}
    for machine_path in (PYTHON, str(Path(PYTHON).parent.parent), str(installer.hook_entry())):
        assert machine_path not in text
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = local["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert os.path.isabs(shlex.split(command)[0])  # machine-specific: only in the local file
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".claude/settings.local.json"], cwd=project
    )
    assert ignored.returncode == 0
    payload = fixture("PostToolUse.Bash", project)
    run = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(project)}
        | {"CLAUDE_SESSION_NO_DAEMON": "1", "CLAUDE_SESSION_STATE_DIR": str(tmp_path / "s")},
        cwd=project,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    conn = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT count(*) FROM events").fetchall() == [(1,)]
    conn.close()
    assert (
        subprocess.run(
            [CLI, "--project", str(project), "uninstall"], capture_output=True, timeout=120
        ).returncode
        == 0
    )
    assert "hooks" not in json.loads((project / ".claude" / "settings.local.json").read_text())
