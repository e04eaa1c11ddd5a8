"""Snapshots and secrets (issue 30, family 8): a file that holds secrets by its name (`.env*`,
`*.pem`, `*.key`, `id_rsa*`, `*.p12`, tool credential files) never reaches the snapshot store,
whatever the project's own `.gitignore` says; `snapshot_exclude` adds rules and takes some
back (`!`); a store that already holds one (an older version's snapshots) gives it up with
`prune --purge PATH`; and a revert never touches such a file, names it in its plan, and its
undo stays byte for byte.

The store is searched as an attacker would search it: every object git holds, decompressed
(`cat-file --batch-all-objects`), and every other byte under our state folder."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import fixture, query, run_cli, run_hook, wait_for, write_config
from workbench import Workbench, git, tree

from claude_session.core import secret_files
from claude_session.services.snapshots import snapshot_rules, workspace
from claude_session.services.timetravel import revert

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
SECRETS = {
    ".env": f"GITHUB_TOKEN={TOKEN}\n",
    ".env.production": "DATABASE_URL=postgres://app:hunter2-prod-pw@db/app\n",
    "deploy/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAC0\n",
    "certs/server.key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n",
    "certs/server.pem": "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBg\n",
    "client.p12": "p12-bytes-0f5e1d2c3b4a59687766\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
    ".aws/credentials": "[default]\naws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz\n",
}
MARKERS = {path: text.splitlines()[-1].encode() for path, text in SECRETS.items()}


def store_bytes(project: Path) -> bytes:
    """Everything the snapshot store holds, decompressed: every object git has."""
    git_dir = workspace.snapshot_dir(str(project))
    done = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    )
    return done.stdout


def state_bytes() -> bytes:
    """Every byte of every file under our state folder (before-images, logs, the store's
    raw files), read as they are."""
    out = []
    for folder, _, names in os.walk(os.environ["CLAUDE_SESSION_STATE_DIR"]):
        for name in names:
            full = os.path.join(folder, name)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as f:
                    out.append(f.read())
    return b"\n".join(out)


def snapshotted(project: Path) -> set[str]:
    """The paths any snapshot of the store holds."""
    git_dir = workspace.snapshot_dir(str(project))
    paths: set[str] = set()
    for commit in set(workspace.refs(str(project)).values()):
        done = subprocess.run(
            ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "--name-only", commit],
            capture_output=True,
            check=True,
        )
        paths |= {p.decode() for p in done.stdout.split(b"\0") if p}
    return paths


def write_secrets(root: Path) -> None:
    for path, text in SECRETS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


@pytest.fixture
def bench(project: Path) -> Iterator[Workbench]:
    (project / "app.py").write_text("VALUE = 1\n")
    # The project's own rules would take `.env` back in: ours still leave it out.
    (project / ".gitignore").write_text("*.log\n!.env\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    wb = Workbench(project)
    wb.start()
    wb.prompt()
    yield wb
    wb.close()


def test_the_installed_hooks_never_put_a_secret_file_into_the_store(project: Path) -> None:
    """Through the real hook processes, as Claude Code runs them: the agent writes secret
    files with Write and with Bash, beside an ordinary file; the capture process takes the
    snapshots. No byte of any secret is anywhere in our state, the ordinary file is."""
    session = "5ec0e7f1-0000-4000-8000-000000000001"
    (project / "app.py").write_text("VALUE = 1\n")

    def send(name: str, **changes: object) -> None:
        payload = fixture(name, project) | {"session_id": session, "cwd": str(project)}
        payload.pop("agent_id", None)
        payload.pop("agent_type", None)
        run_hook(name.split(".")[0], payload | changes, project)

    send("SessionStart.startup")
    send("UserPromptSubmit", prompt="set up the deployment")
    for number, (path, text) in enumerate(SECRETS.items()):
        use = f"toolu_secret_{number:03d}"
        tool_input = {"file_path": str(project / path), "content": text}
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        if path.startswith(".env"):  # an edit of a file that is already there
            (project / path).write_text("OLD=1\n" + text)
        send("PreToolUse.Write", tool_use_id=use, tool_input=tool_input)
        (project / path).write_text(text)
        send("PostToolUse.Write", tool_use_id=use, tool_input=tool_input)
    ordinary = "ORDINARY_CONTENT_7f3a = 2\n"
    command = {"command": "echo ... > app.py", "description": "edit"}
    send("PreToolUse.Bash", tool_use_id="toolu_secret_bash", tool_input=command)
    (project / "app.py").write_text(ordinary)
    send("PostToolUse.Bash", tool_use_id="toolu_secret_bash", tool_input=command)
    send("Stop")

    def all_captured() -> bool:
        rows = query(project, "SELECT count(*) FROM vcs_tags WHERE status = 'pending'")
        return rows[0][0] == 0

    assert wait_for(all_captured, 60)
    assert wait_for(lambda: ordinary.encode() in store_bytes(project), 30)
    everything = store_bytes(project) + state_bytes()
    for path, marker in MARKERS.items():
        assert marker not in everything, path
    assert TOKEN.encode() not in everything
    assert not set(SECRETS) & snapshotted(project)
    assert "app.py" in snapshotted(project)


def test_a_store_that_holds_a_secret_gives_it_up_with_prune_purge(
    bench: Workbench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshots an older version took hold `.env`. The next snapshot leaves it out, `doctor`
    names it, and `prune --purge .env` takes its content out of every snapshot: the frames
    still diff and revert, an earlier revert's undo still works, and a revert to a frame whose
    snapshot held it never deletes the file that is there now."""
    root = bench.root
    with monkeypatch.context() as old_version:
        old_version.setattr(snapshot_rules, "rules", lambda root: [])
        bench.write(".env", SECRETS[".env"].encode())
        bench.write("app.py", b"VALUE = 2\n")
        early = bench.last_frame()
    assert ".env" in snapshotted(root)
    bench.write("app.py", b"VALUE = 3\n")
    assert MARKERS[".env"] in store_bytes(root)
    bench.revert(f"{bench.session}:{early}")  # an earlier revert, to undo after the purge
    assert (root / "app.py").read_text() == "VALUE = 2\n"

    doctor = run_cli(root, "doctor", "--json")
    rows = {r["check"]: r for r in json.loads(doctor.stdout)}
    assert not rows["secret files in snapshots"]["ok"]
    assert ".env" in rows["secret files in snapshots"]["detail"]
    assert "prune --purge" in rows["secret files in snapshots"]["detail"]

    dry = run_cli(root, "prune", "--purge", ".env", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["would_purge"][0]["snapshots_holding"] >= 2
    assert MARKERS[".env"] in store_bytes(root)  # a dry run changes nothing
    done = run_cli(root, "prune", "--purge", str(root / ".env"), "--yes", "--json")
    assert done.returncode == 0, done.stderr
    purged = json.loads(done.stdout)["purged"][0]
    assert purged["path"] == ".env" and purged["snapshots_rewritten"] >= 2
    assert purged["snapshots_still_holding"] == 0
    assert purged["left_out_by_rule"] == ".env*"
    assert MARKERS[".env"] not in store_bytes(root) + state_bytes()
    assert ".env" not in snapshotted(root)
    doctor = run_cli(root, "doctor", "--json")
    assert {r["check"]: r for r in json.loads(doctor.stdout)}["secret files in snapshots"]["ok"]

    # The frames point at the rewritten snapshots: diff and the undo still work.
    first = bench.frames()[0][0]
    diff = run_cli(root, "diff", f"{bench.session}:{first}", f"{bench.session}:{early}", "--json")
    assert diff.returncode == 0, diff.stderr
    assert "+VALUE = 2" in diff.stdout and TOKEN not in diff.stdout
    before_undo = tree(root)
    bench.undo()
    assert (root / "app.py").read_text() == "VALUE = 3\n"
    assert (root / ".env").read_text() == SECRETS[".env"]
    assert {k: v for k, v in tree(root).items() if k != "app.py"} == {
        k: v for k, v in before_undo.items() if k != "app.py"
    }
    # A frame before `.env` was written: its snapshot never held it; one after: it was
    # purged. Neither makes a revert delete or rewrite the file.
    for frame in (first, early):
        plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
        assert ".env" not in [c.path for c in plan.changes]
        assert ".env" in [p for p, _ in plan.left]
    before = tree(root)
    bench.revert(f"{bench.session}:{first}")
    assert (root / ".env").read_text() == SECRETS[".env"]
    bench.undo()
    assert tree(root) == before


def test_a_revert_leaves_every_secret_file_and_says_so(bench: Workbench) -> None:
    """Secret files the session wrote after the frame stay as they are (no snapshot has them,
    so a revert cannot bring them back, and must not delete them); the plan names each with
    the rule; revert then undo leave the project byte for byte as it was."""
    root = bench.root
    frame = bench.last_frame()
    for path, text in SECRETS.items():
        bench.write(path, text.encode())
    bench.write("app.py", b"VALUE = 2\n")
    plan = revert.plan(bench.rec.conn, str(root), f"{bench.session}:{frame}")
    assert [c.path for c in plan.changes] == ["app.py"]
    left = dict(plan.left)
    for path in SECRETS:
        assert path in left, path
        assert "secret file" in left[path]
    shown = run_cli(root, "revert", f"{bench.session}:{frame}", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert ".env" in shown.stdout and "secret file" in shown.stdout
    before = tree(root)
    bench.revert(f"{bench.session}:{frame}")
    assert (root / "app.py").read_text() == "VALUE = 1\n"
    for path, text in SECRETS.items():
        assert (root / path).read_text() == text
    bench.undo()
    assert tree(root) == before
    assert not set(SECRETS) & snapshotted(root)


def test_snapshot_exclude_adds_rules_and_takes_some_back(bench: Workbench) -> None:
    """`snapshot_exclude`: `*.sqlite` and a folder are left out too; `!.env.example` (a file
    meant to be shared) is taken back in, though the default `.env*` matches it."""
    root = bench.root
    write_config(root, {"snapshot_exclude": "*.sqlite, private/, !.env.example"})
    bench.write("data.sqlite", b"rows")
    bench.write("private/notes.txt", b"mine")
    bench.write(".env.example", b"GITHUB_TOKEN=\n")
    bench.write(".env", SECRETS[".env"].encode())
    paths = snapshotted(root)
    assert ".env.example" in paths
    assert not {"data.sqlite", "private/notes.txt", ".env"} & paths
    shown = run_cli(root, "config", "--json")
    settings = {s["key"]: s for s in json.loads(shown.stdout)["settings"]}
    assert settings["snapshot_exclude"]["value"] == "*.sqlite, private/, !.env.example"
    bad = run_cli(root, "config", "--set", "snapshot_exclude=a\nb")
    assert bad.returncode != 0


def test_doctor_says_what_snapshots_leave_out(bench: Workbench) -> None:
    root = bench.root
    write_secrets(root)
    done = run_cli(root, "doctor", "--json")
    rows = {r["check"]: r for r in json.loads(done.stdout)}
    row = rows["snapshot rules"]
    assert row["ok"]
    assert "8 files here" in row["detail"]
    assert ".env" in row["detail"] and "snapshot_exclude" in row["detail"]


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "a/b/.env.local",
        ".envrc",
        "x/server.pem",
        "tls.key",
        "home/id_rsa",
        "home/id_ed25519.pub",
        "store.p12",
        "a.pfx",
        ".netrc",
        ".git-credentials",
        "sub/.pypirc",
        ".npmrc",
        ".pgpass",
        "credentials.json",
        ".aws/credentials",
        "deep/.docker/config.json",
        ".kube/config",
        ".envs/dev/vars",
    ],
)
def test_the_hooks_cheap_check_agrees_with_git(path: str, tmp_path: Path) -> None:
    """The hook's stdlib check of the default names and git's own matching of the same rules
    say the same of secret paths and of ordinary ones beside them."""
    ordinary = path.replace("env", "nv").replace("id_", "ix_").replace("cred", "crad")
    ordinary = ordinary.replace(".p", ".q").replace(".k", ".j").replace(".n", ".m")
    ordinary = ordinary.replace(".d", ".e").replace(".git", ".gut")
    for candidate, expected in ((path, True), (ordinary, False)):
        assert secret_files.named_secret(candidate) is expected, candidate
        spec = snapshot_rules.matcher(list(secret_files.DEFAULT_PATTERNS))
        assert bool(spec.check_file(candidate).include) is expected, candidate
        root = tmp_path / candidate.replace("/", "_")
        full = root / candidate
        full.parent.mkdir(parents=True)
        full.write_text("x")
        (root / "keep.txt").write_text("y")
        commit = workspace.capture(str(root), label=f"check-{time.time()}").commit
        git_dir = workspace.snapshot_dir(str(root))
        listed = subprocess.run(
            ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", commit],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert (candidate not in listed) is expected, candidate
