"""The hostile repository as a user meets it (SECURITY.md promise 4): claude-session installed
for the user (`install --scope user`, from a wheel in a fresh venv), a clone of a repository
that commits our database (with fork records naming a folder of the user's and the clone's own
`.git`), a spool, held files, a snapshot store and a configuration, and the real Claude Code CLI
2.1.330 working there against a scripted Messages API on 127.0.0.1: a prompt, a compaction, a
resumed prompt. No request the model received holds any of the repository's planted text;
nothing of it ran; the user's folder and the clone's `.git` are whole after `fork --remove`;
`status` says what was ignored.

The repository commits no `.claude/settings.json` here: in `claude -p` Claude Code runs a
project's hooks itself (it asks for workspace trust only when interactive), which is Claude
Code's doing, not ours; that `doctor` runs none of them is tests/test_hostile_repository.py's
and tests/test_doctor_runs_only_ours.py's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, query
from fake_api import FakeAnthropic, is_compaction, text
from hostile_repo import MARK, PARTS, cloned, everything_under
from test_e2e_claude import claude_binary, claude_env, run_claude

pytestmark = pytest.mark.e2e


class Model:
    """Answers every prompt with text; keeps every request it was sent."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        self.bodies.append(json.dumps(body))
        if is_compaction(body):
            return [text("<summary>work on app.py</summary>")]
        return [text("Done.")]


@pytest.mark.parametrize(
    "parts",
    [
        frozenset(PARTS) - {"settings"},
        # no database: the user's first hook makes their own, trusted one; the committed
        # spool and held files must not be taken into it
        frozenset({"spool", "answered", "snapshot_store", "config"}),
    ],
    ids=["with-a-database", "spool-into-the-users-own-database"],
)
def test_a_hostile_clone_reaches_neither_the_model_nor_the_users_files(
    tmp_path: Path, wheel_install: WheelInstall, parts: frozenset[str]
) -> None:
    binary = claude_binary()
    home = tmp_path / "home"
    home.mkdir()
    clone, victim = cloned(tmp_path, parts)
    model = Model()
    env = claude_env(home, "http://127.0.0.1:9")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [wheel_install.cli, "--project", str(clone), *args],
            capture_output=True,
            text=True,
            env=env | {"COLUMNS": "1000"},
            timeout=120,
        )

    installed = cli("install", "--scope", "user")
    assert installed.returncode == 0, installed.stderr
    with FakeAnthropic(model) as api:
        first = run_claude(binary, clone, home, api, "TASK-HOSTILE: look at app.py")
        session = first["session_id"]
        run_claude(binary, clone, home, api, "/compact", "--resume", session)
        run_claude(binary, clone, home, api, "what next?", "--resume", session)
        run_claude(binary, clone, home, api, "TASK-HOSTILE: a new session")
    assert len(model.bodies) >= 4
    for body in model.bodies:
        assert MARK not in body  # nothing planted reached the model, in any request

    for target in (victim, clone / ".git"):
        removed = cli("fork", "--remove", str(target), "--yes", "--force")
        assert removed.returncode != 0 and "Traceback" not in removed.stderr
    assert everything_under(victim) == {str(victim / "work.txt"): b"keep me\n"}
    assert (clone / ".git" / "HEAD").exists()
    assert not list(tmp_path.rglob("PWNED-*"))  # neither the judge nor anything else ran

    status = json.loads(cli("status", "--json").stdout)
    problems = " ".join(status["now"]["problems"])
    if "database" in parts:
        assert "the database is not trusted" in problems
    else:  # the user's own database: trusted, and none of the forged events in it
        assert "the database is not trusted" not in problems
        assert (
            query(clone, "SELECT count(*) FROM events WHERE session_id = 'forged-session'")[0][0]
            == 0
        )
    assert "the configuration is not trusted" in problems
    assert "not written by this user's claude-session" in problems  # the spool, set aside
    # the user's own session was recorded all the same
    assert query(clone, "SELECT count(*) FROM events WHERE session_id = ?", (session,))[0][0] > 0
