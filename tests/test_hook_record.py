"""The record of the hook commands claude-session wrote for this user (services/setup/
hook_record.py): every writer of ours fills it, it lives in the private state folder and is
never read through a planted link, and `doctor` runs nothing else (issue 40). In process."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from click import ClickException
from click.testing import CliRunner

from claude_session.cli import cli
from claude_session.services.setup import doctor, hook_record, installer, plugin
from claude_session.services.timetravel import fork


def commands_in(path: Path) -> set[str]:
    handlers = installer.ours(installer.read_settings(path))
    return {str(h["command"]) for _, h in handlers if "command" in h}


def test_write_ours_records_every_command_it_writes_in_the_private_state_folder(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = isolated_state / "fresh"  # made by the first record
    monkeypatch.setenv("CLAUDE_SESSION_STATE_DIR", str(state))
    settings = tmp_path / "project" / ".claude" / "settings.local.json"
    installer.write_ours(settings, {}, transport="mcp")
    written = commands_in(settings)
    assert written == set(installer.our_commands(transport="mcp"))  # the mcp_tool ones: none
    assert {hook_record.digest(c) for c in written} == hook_record.recorded()
    record = state / hook_record.RECORD_NAME
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    installer.write_ours(settings, installer.read_settings(settings), transport="mcp")
    assert len(record.read_text().splitlines()) == len(written)  # not written twice
    assert not list(settings.parent.glob("*commands*"))  # nothing of it in the project


def test_a_planted_or_loose_record_proves_nothing(tmp_path: Path, isolated_state: Path) -> None:
    record = isolated_state / hook_record.RECORD_NAME
    elsewhere = tmp_path / "theirs"
    command = "id > /tmp/x # claude-session"
    elsewhere.write_text(hook_record.digest(command) + "\n")
    record.symlink_to(elsewhere)
    assert hook_record.recorded() == set()  # a link is never followed
    with pytest.raises(OSError):
        hook_record.remember(["echo ours # claude-session"])
    assert elsewhere.read_text() == hook_record.digest(command) + "\n"
    record.unlink()
    record.write_text(hook_record.digest(command) + "\n")
    record.chmod(0o666)
    assert hook_record.recorded() == set()  # writable by others: proves nothing
    record.chmod(0o600)
    assert hook_record.is_recorded(command)


def test_the_plugin_and_a_fork_s_carried_hooks_are_recorded(
    tmp_path: Path, isolated_state: Path
) -> None:
    folder = tmp_path / "plugin"
    plugin.write(folder)
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())
    assert {hook_record.digest(c) for c in plugin.commands(hooks)} <= hook_record.recorded()

    root, dest = tmp_path / "root", tmp_path / "fork"
    installer.write_ours(installer.settings_path("local", root), {}, python="/elsewhere/python")
    dest.mkdir()
    fork._carry_hooks(str(root), str(dest))
    carried = commands_in(installer.settings_path("local", dest))
    assert carried and {hook_record.digest(c) for c in carried} <= hook_record.recorded()
    # hooks with our marker that this user's claude-session did not write are not carried
    (isolated_state / hook_record.RECORD_NAME).unlink()
    other = tmp_path / "other"
    other.mkdir()
    fork._carry_hooks(str(root), str(other))
    assert not commands_in(installer.settings_path("local", other))


def test_the_package_s_plugin_commands_count_as_ours(tmp_path: Path) -> None:
    """The checkout's own hooks/hooks.json (what `claude --plugin-dir` runs) is ours by its
    content, compared with what the package generates, wherever a settings file holds it."""
    root = Path(__file__).resolve().parent.parent
    shipped = plugin.commands(json.loads((root / "hooks" / "hooks.json").read_text()))
    assert set(shipped) == plugin.package_commands()
    project = tmp_path / "project"
    settings = installer.settings_path("project", project)
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps(plugin.hooks_json(plugin.clone_command)))
    results: list[dict[str, object]] = []
    found = doctor._registered(project, results)
    assert {str(h["command"]) for _, _, h in found} == set(shipped)
    assert not [r for r in results if "not ours" in str(r["detail"])]


def test_doctor_runs_no_hook_of_a_clone(tmp_path: Path) -> None:
    """A committed settings.json whose hooks end in our marker: refused, none run (the fast
    tier's guard also fails the test if doctor starts a hook)."""
    project = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    pwned = tmp_path / "PWNED"
    hostile = {
        "SessionStart": f"id > {pwned} {installer.MARKER}",
        "Stop": f"sh -c 'touch {pwned}' {installer.MARKER}",
        "PreToolUse": installer.hook_command("PreToolUse") + f"; touch {pwned} {installer.MARKER}",
    }
    settings = installer.settings_path("project", project)
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    event: [{"hooks": [{"type": "command", "command": command}]}]
                    for event, command in hostile.items()
                }
            }
        )
    )
    home = tmp_path / "home"
    home.mkdir()
    done = CliRunner().invoke(
        cli, ["--project", str(project), "doctor", "--json"], env={"HOME": str(home)}
    )
    assert done.exit_code == 1, done.output
    assert not pwned.exists()
    rows = json.loads(done.output)
    refused = [r for r in rows if "not ours, not run" in r["detail"]]
    assert len(refused) == len(hostile)
    for event, command in hostile.items():
        [row] = [r for r in refused if f'"{event}"' in r["detail"]]
        assert str(settings) in row["detail"] and json.dumps(command) in row["detail"]
    assert [r["ok"] for r in rows if r["check"] == "installed"] == [False]
    assert not hook_record.recorded()


def test_install_probes_only_the_command_it_recorded_writing(tmp_path: Path) -> None:
    """After writing, `install` reads the settings file back and fires a SessionStart through
    its command: one that is not what it recorded writing (the file changed meanwhile) is
    refused, not run."""
    from claude_session.cli import setup_commands

    made = tmp_path / "PWNED"
    settings = tmp_path / "settings.local.json"
    with pytest.raises(ClickException, match="did not write, not run"):
        setup_commands.report_probe(f"touch {made} {installer.MARKER}", str(settings))
    assert not made.exists()


def test_a_handlers_timeout_from_the_file_is_bounded() -> None:
    """A settings file's `timeout` beside our own command cannot crash or stall doctor."""
    default = float(installer.DEFAULT_TIMEOUT)
    for bad in ("soon", None, True, float("inf"), float("nan"), 1e308, -5, 0, [1]):
        assert doctor._timeout(bad) == default
    assert doctor._timeout(30) == 30.0
