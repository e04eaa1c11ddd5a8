"""The token families and the command-line credentials of round 4 (issue 40), each through the
real hook into every byte written; the ordinary commands that look like them stored as they
came; and a session's PyPI token, which left raw copies in the database and its WAL, searched
for in the database, the WAL and the spool.

Every family here is in tests/test_secrets.py's CORPUS too, so the wrappings, the cuts and the
property tests cover it; this module names each one and each form of a command line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw
import pytest
from conftest import fixture, query, run_hook, spooled
from test_faults import hold_write_lock
from test_secrets import every_byte_written

from claude_session.core.redact import redact

# (token, what of it must never be stored, the marker's kind)
TOKENS: dict[str, tuple[str, str]] = {
    "pypi": (
        "pypi-AgEIcHlwaS5vcmcCJDk3ZTQ4ZjQxLWE0NmYtNGQ2Yy1iYjQ4LWZkOGMzNTk1YzU5NQACKlszLCI3Nm"
        "I5MzFkZi0zYzFhLTQ5OTktOTc0Yi0yMzQ4ZDUyNjMyMmEiXQAABiBtb2NrLXRva2VuLWZvci10ZXN0cw",
        "pypi_token",
    ),
    "test.pypi": (
        "pypi-AgENdGVzdC5weXBpLm9yZwIkNjE3YjQwZDAtOGIxYy00YzY4LWE1ZmUtYjEzOGQ2NjMyMjdjAAIq"
        "WzMsImNmNmJhOTc0LWQ0YzQtNGI3Ny1iYTM1LWYzMjFjNTk2MGFlZiJdAAAGIHRlc3QtdG9rZW4",
        "pypi_token",
    ),
    "docker_pat": ("dckr_pat_Hq8sV2mKx9LbR4tYw7ZcN3pFgJ6", "docker_token"),
    "docker_oat": ("dckr_oat_Xu5rT9kLm2QwE8yNb4VcZ7sHdP1", "docker_token"),
    "huggingface": ("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", "huggingface_token"),
    "vault_service": ("hvs.CAESIJ" + "k9Lm2Qx7Rt4Vw8Yz3Bc6Nd1Fg5Hj0Kp" * 3, "vault_token"),
    "vault_batch": ("hvb.AAAAAQ" + "Lm2Qx7Rt4Vw8Yz3Bc6Nd1Fg5Hj0Kp_k9-" * 4, "vault_token"),
    "vault_recovery": ("hvr.AAAAAQ" + "Rt4Vw8Yz3Bc6Nd1Fg5Hj0Kpk9Lm2Qx7" * 3, "vault_token"),
    "digitalocean_personal": ("dop_v1_" + "5e1f0a9b7c3d2e8f" * 4, "digitalocean_token"),
    "digitalocean_oauth": ("doo_v1_" + "a7c3d2e8f5e1f0b9" * 4, "digitalocean_token"),
    "digitalocean_refresh": ("dor_v1_" + "0b9a7c3d2e8f5e1f" * 4, "digitalocean_token"),
    "shopify_access": ("shpat_" + "4f1e9a0b7c2d3e8f" * 2, "shopify_token"),
    "shopify_custom_app": ("shpca_" + "8f4f1e9a0b7c2d3e" * 2, "shopify_token"),
    "shopify_private_app": ("shppa_" + "3e8f4f1e9a0b7c2d" * 2, "shopify_token"),
    "shopify_shared_secret": ("shpss_" + "7c2d3e8f4f1e9a0b" * 2, "shopify_token"),
    "age": (
        "AGE-SECRET-KEY-1"
        + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"[::-1]
        + "GF2TVDW0S3JN54KHCE6MUA7L9X",
        "age_secret_key",
    ),
    "google_oauth": (
        "ya29.a0AfB_byC" + "Rt4Vw8Yz3Bc6Nd1Fg5Hj0Kp-k9Lm2Qx7" * 2,
        "google_oauth_token",
    ),
}

# (a command line, the credential in it that must never be stored)
COMMAND_LINES: dict[str, tuple[str, str]] = {
    "--password VALUE": ("mysql -h db -u app --password staplehorsebattery app", "staplehorse"),
    "--password=VALUE": ("mysql -h db -u app --password=staplehorsebattery app", "staplehorse"),
    "--password 'VALUE'": ("mysql --password 'staple horse battery' app", "staple horse"),
    "--db-password=VALUE": ("migrate --db-password=horsebatterystaple up", "horsebattery"),
    "--token VALUE": ("deploy --token Lp9Xk4Mn8Bz3WcVq7Rt2 --env prod", "Lp9Xk4Mn8Bz3WcVq"),
    "--api-key VALUE": ("client --api-key Mn8Bz3WcVq7Rt2Lp9Xk4 list", "Mn8Bz3WcVq7Rt2Lp"),
    "mysql -pVALUE": ("mysql -h db -u root -pbatterystaplehorse app", "batterystaple"),
    "mysql -p'VALUE'": ("mysql -u root -p'battery staple horse' app", "battery staple"),
    "mysqldump -pVALUE": ("mysqldump -u root -phorsestaplebattery app > d.sql", "horsestaple"),
    "mariadb -pVALUE": ("mariadb -uroot -pstaplebatteryhorse", "staplebattery"),
    "mysqladmin -pVALUE": ("mysqladmin -u root -pbatteryhorsestaple status", "batteryhorse"),
    "docker exec mysql -pVALUE": (
        "docker exec -it db mysql -uroot -phorsebatterystaple",
        "horsebattery",
    ),
    "sshpass -p VALUE": ("sshpass -p staplehorsebattery ssh deploy@host", "staplehorse"),
    "sshpass -pVALUE": ("sshpass -pstaplehorsebattery scp f deploy@host:", "staplehorse"),
    "sshpass -v -p VALUE": ("sshpass -v -p staplehorsebattery ssh -p 22 h", "staplehorse"),
    "aws configure set aws_secret_access_key VALUE": (
        "aws configure set aws_secret_access_key Bz3WcVq7Rt2Lp9Xk4Mn8/Qw5Er6Ty7Ui8Op9As0",
        "Bz3WcVq7Rt2Lp9Xk4Mn8",
    ),
    "aws configure set aws_session_token VALUE": (
        "aws configure set --profile ci aws_session_token FwoGZXIvYXdzEBYaDHhAbCdEfGhIjKlMnOp",
        "FwoGZXIvYXdzEBYaDHhA",
    ),
    "keytool -storepass VALUE": (
        "keytool -list -keystore k.jks -storepass batteryhorse",
        "batteryh",
    ),
}

# Commands that only look like the ones above: stored as they came.
NOT_SECRETS = [
    "docker run -p 8080:80 nginx",
    "docker run -p8080:80 nginx",
    "docker run --name mysql -p3306:3306 mysql:8",
    "python -m http.server -p8080",
    "git push -p origin main",
    "ssh -p 22 deploy@host",
    "ssh -p2222 deploy@host",
    "mkdir -p build/output",
    "pytest -p no:randomly -q",
    "gh release upload --token-file /run/secrets/gh v1.0 dist.tar.gz",
    "docker login --password-stdin -u deploy registry.example.com",
    "mysql -u root -p app_db",
    "mysql --no-password app_db",
    "ansible-playbook --ask-vault-pass site.yml",
    "curl --token $TOKEN https://api.example.com",
    "deploy --token ${DEPLOY_TOKEN} --env prod",
    'mysql -u root -p"$MYSQL_PASSWORD" app',
    "mysql -u root -p$MYSQL_PASSWORD app",
    'sshpass -p "$SSHPASS" ssh deploy@host',
    "sshpass -e ssh -p 2222 deploy@host",
    "aws configure set region eu-west-1",
    "aws configure set aws_secret_access_key $AWS_SECRET_ACCESS_KEY",
    "llm --max-token 4096 prompt.txt",
    "  --password PASSWORD    the password to connect with",
    "  --api-key API_KEY      your key",
    "subprocess.run(['mysql', '-u', user, '-p' + password])",
    "the shopify_ config and hf_hub_download(repo_id) and hvs.values()",
    'git commit -m "pass --token explicitly when it is set"',
    "Use --password when prompted, or the --api-key flag.",
]


def stored_payloads(project: Path) -> str:
    return "\n".join(row[0] for row in query(project, "SELECT payload FROM events"))


def bash_event(project: Path, command: str, stdout: str, n: int) -> dict[str, object]:
    payload = fixture("PostToolUse.Bash", project)
    payload["tool_use_id"] = f"toolu_family_{n:04d}"
    payload["tool_input"]["command"] = command
    payload["tool_response"]["stdout"] = stdout
    return payload


@pytest.mark.parametrize("family", sorted(TOKENS))
def test_each_token_family_never_reaches_disk(
    family: str, project: Path, isolated_state: Path
) -> None:
    token, kind = TOKENS[family]
    body = token[len(token) // 3 :]  # what would give it away past its prefix
    command = f"publish --verbose {token}"
    run_hook("PostToolUse", bash_event(project, command, f"using {token}\nok", 1), project)
    written = every_byte_written(project, isolated_state)
    assert body.encode() not in written
    assert f"[REDACTED:{kind}#".encode() in written


@pytest.mark.parametrize("form", sorted(COMMAND_LINES))
def test_each_credential_given_on_a_command_line_never_reaches_disk(
    form: str, project: Path, isolated_state: Path
) -> None:
    command, secret = COMMAND_LINES[form]
    run_hook("PostToolUse", bash_event(project, command, "done", 1), project)
    prompt = fixture("UserPromptSubmit", project)
    prompt["prompt"] = f"run this for me:\n{command}\nthen report"
    run_hook("UserPromptSubmit", prompt, project)
    written = every_byte_written(project, isolated_state)
    assert secret.encode() not in written
    assert b"[REDACTED:command_credential#" in written


def test_ordinary_commands_are_stored_as_they_came(project: Path) -> None:
    for text in NOT_SECRETS:
        assert redact(text) == text
    run_hook("PostToolUse", bash_event(project, "\n".join(NOT_SECRETS), "ok", 1), project)
    (payload,) = query(project, "SELECT payload FROM events")
    assert json.loads(payload[0])["tool_input"]["command"] == "\n".join(NOT_SECRETS)
    assert "REDACTED" not in stored_payloads(project)


def test_options_naming_no_secret_keep_their_values() -> None:
    """Fast: what the option scanner must leave, case by case."""
    for text in NOT_SECRETS:
        assert redact(text) == text, text


# Hostile texts for the command-line scanner, each ~100-300 KB (a payload's size): each hit
# must not read the text again (a scan from each `-p` back to where its command began took
# minutes here), so each takes well under a second.
HOSTILE = {
    "many -p after one mysql": "mysql" + " -px" * 25_000,
    "many commands": "mysql -pa; " * 25_000,
    "many sshpass options": "sshpass -f " * 25_000,
    "many configure set": "aws configure set " * 15_000,
    "many option values": "--token x" * 25_000,
    "many variables": "--token $x " * 25_000,
    "one long option": "-" + "token" * 50_000,
    # thousands of assignments in one value run, each value a suffix of the one before: the
    # assignment scanner walked each to its end (22 KB of `a=b` took 28 s before)
    "many assignments in one run": "a=b" * 80_000,
    "many secret-named ones": "token=x" * 35_000,
    "many random ones": "x=1a2b3c4d5e6f7g8h9" * 12_000,
    "many names": "ab=" * 80_000,
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_hostile_command_lines_take_linear_time(shape: str) -> None:
    """This process's CPU time, not the wall clock: a busy machine or a stage run at a lower
    priority (test.sh's other Pythons) must not fail it, a quadratic redaction still does."""
    started = time.process_time()
    redact(HOSTILE[shape])
    assert time.process_time() - started < 5


def test_a_sessions_pypi_token_is_in_no_byte_of_the_database_its_wal_or_the_spool(
    project: Path, isolated_state: Path
) -> None:
    """What a real session did: a PyPI token in a prompt, in `uv publish --token`, in a printed
    `.pypirc`, and one more event while the database was locked (into the spool), with the
    database held open by another reader as the daemon holds it (so the WAL stays)."""
    token = TOKENS["pypi"][0]
    pieces = [token[i : i + 24] for i in range(len("pypi-AgEIcHlwaS5vcmc"), len(token) - 24, 24)]
    prompt = fixture("UserPromptSubmit", project)
    prompt["prompt"] = f"publish with this token: {token}"
    run_hook("UserPromptSubmit", prompt, project)
    database = project / ".claude-session.db"
    reader = apsw.Connection(str(database))  # as the daemon does: the WAL is not removed
    try:
        run_hook("PreToolUse", _pre_bash(project, f"uv publish --token {token}", 2), project)
        pypirc = f"[pypi]\n  username = __token__\n  password = {token}\n"
        event = bash_event(project, "cat ~/.pypirc && twine upload dist/*", pypirc, 3)
        run_hook("PostToolUse", event, project)
        holder = hold_write_lock(project, 8)
        try:
            later = bash_event(project, f"twine upload -u __token__ -p {token} dist/*", "", 4)
            run_hook("PostToolUse", later, project)
        finally:
            holder.kill()
        assert spooled(project), "the event written while the database was locked is spooled"
        wal = Path(f"{database}-wal")
        assert wal.exists() and wal.stat().st_size > 0
        files = {
            "the database": database.read_bytes(),
            "its WAL": wal.read_bytes(),
            "the spool": b"".join(path.read_bytes() for path in spooled(project)),
            "any file written": every_byte_written(project, isolated_state),
        }
        for where, data in files.items():
            found = [piece for piece in pieces if piece.encode() in data]
            assert not found, f"{len(found)} pieces of the PyPI token in {where}"
        assert b"[REDACTED:pypi_token#" in files["its WAL"] + files["the database"]
    finally:
        reader.close()


def _pre_bash(project: Path, command: str, n: int) -> dict[str, object]:
    payload = fixture("PreToolUse.Bash", project)
    payload["tool_use_id"] = f"toolu_family_{n:04d}"
    payload["tool_input"]["command"] = command
    return payload
