"""A corpus of realistic fake secrets, planted in every field Claude Code sends and in several
encodings, through the real hook entry: no planted secret may appear in any byte the tool wrote
(database, WAL, spool, log) or printed. Plus a property test of the scanner itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, fixture, run_hook
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_session.core.redact import redact

CLI = str(Path(PYTHON).parent / "claude-session")

# (what is planted, the part that must never be stored). All fake, all shaped like the real ones.
CORPUS: dict[str, tuple[str, str]] = {
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    "google": ("AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    "stripe_live": ("sk_live_51H8x2bKZ9qLmN3pR4sT6uV8wX0yA2cE", "51H8x2bKZ9qLmN3pR4sT6uV8wX0yA2cE"),
    "stripe_restricted": ("rk_live_51H8x2bKZ9qLmN3pR4sT6uV8", "51H8x2bKZ9qLmN3pR4sT6uV8"),
    "stripe_webhook": ("whsec_5Qm9kFz2Lp8Rt3Wv7Xy1Bc4Nd6Gh0Jk", "5Qm9kFz2Lp8Rt3Wv7Xy1Bc4Nd6Gh0Jk"),
    "slack_token": (
        "xoxb-2048392048-1029384756102-aBcDeFgHiJkLmNoPqRsTuVwX",
        "1029384756102-aBcDeFgHiJkLmNoPqRsTuVwX",
    ),
    "slack_webhook": (
        "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/xYz9AbC8dEf7GhI6jKl5MnO4",
        "xYz9AbC8dEf7GhI6jKl5MnO4",
    ),
    "gitlab": ("glpat-xK9mP2vQ7rT4wY6zA1bC", "xK9mP2vQ7rT4wY6zA1bC"),
    "npm": ("npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    "twilio_key": ("SK2c8a6e4b0d9f1e3a5c7b9d1f3e5a7c9b", "2c8a6e4b0d9f1e3a5c7b9d1f3e5a7c9b"),
    "twilio_token": ("TWILIO_AUTH_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a3928"),
    "heroku": ("HRKU-AAbbCCdd-1122-3344-5566-77889900aabbcc", "AAbbCCdd-1122-3344-5566"),
    "heroku_legacy": ("HEROKU_API_KEY=2c8a6e4b-0d9f-1e3a-5c7b-9d1f3e5a7c9b", "0d9f-1e3a-5c7b"),
    "sendgrid": (
        "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012",
        "wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012",
    ),
    "openai": ("sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Ef3Hi5", "Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9"),
    "anthropic": ("sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0", "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"),
    "aws_access": ("AKIAIOSFODNN7EXAMPL3", "IOSFODNN7EXAMPL3"),
    "aws_secret": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
    ),
    "ghp": ("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0K1l2"),
    "gho": ("gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0K1l2"),
    "ghu": ("ghu_Z1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "Z1b2C3d4E5f6G7h8I9j0K1l2"),
    "ghs": ("ghs_Y1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "Y1b2C3d4E5f6G7h8I9j0K1l2"),
    "ghr": ("ghr_X1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "X1b2C3d4E5f6G7h8I9j0K1l2"),
    "github_pat": ("github_pat_11ABCDEFG0_abcdefghij0123456789KLMN", "abcdefghij0123456789KLMN"),
    "private_key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7xQk3Lm9Np2Rt5Vw8Yz\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA7xQk3Lm9Np2Rt5Vw8Yz",
    ),
    "basic_header": ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
    "token_header": ("authorization: token 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a3928"),
    "bearer": ("curl -H 'Bearer 7Hk2Lp9Qx4Rt8Vw3Yz6Bc1Nd5'", "7Hk2Lp9Qx4Rt8Vw3Yz6Bc1Nd5"),
    "url_password": ("https://deploy:Tr0ub4dor-3xyz@git.example.com/r.git", "Tr0ub4dor-3xyz"),
    "curl_user": ("curl -u admin:S3cretPassw0rd https://api.example.com", "S3cretPassw0rd"),
    "query_key": ("https://api.example.com/v1?key=Q2FsbG1lSXNobWFlbA&x=1", "Q2FsbG1lSXNobWFlbA"),
    "query_token": ("https://x.example.com/a?token=tk4Rt8Vw3Yz6Bc1", "tk4Rt8Vw3Yz6Bc1"),
    "query_sig": ("https://s3.example.com/o?sig=Zm9vYmFyYmF6cXV4&a=b", "Zm9vYmFyYmF6cXV4"),
    "query_signature": ("GET /f?x=1&signature=c2lnbmF0dXJlMTIz", "c2lnbmF0dXJlMTIz"),
    "query_password": ("https://h.example.com/l?password=pw9Lm2Qx7", "pw9Lm2Qx7"),
    "query_access_token": ("https://g.example.com/?access_token=at7Hk2Lp9Qx4", "at7Hk2Lp9Qx4"),
    "env_password": ("DATABASE_PASSWORD=correct-horse-battery-9", "correct-horse-battery-9"),
    "env_secret": ('export STRIPE_SECRET="s3cr3t-v4lue-42"', "s3cr3t-v4lue-42"),
    "env_auth": ("MY_AUTH=au7h-v4lue-0042", "au7h-v4lue-0042"),
    "env_credential": ("SERVICE_CREDENTIALS='cr3d-v4lue-0042'", "cr3d-v4lue-0042"),
    "env_pwd": ("ADMIN_PWD=pwd-v4lue-0042", "pwd-v4lue-0042"),
    "env_token": ("API_TOKEN: tok3n-v4lue-0042", "tok3n-v4lue-0042"),
    "json_password": ('{"db": {"password": "hunter2-Ex4mple"}}', "hunter2-Ex4mple"),
    "high_entropy": ("BUILD_SEED=Zx8Kq2Lm9Pw4Rt7Vy1Bn6Cf3Hj5", "Zx8Kq2Lm9Pw4Rt7Vy1Bn6Cf3Hj5"),
    "pypi": (
        "pypi-AgEIcHlwaS5vcmc6EfkaQsj4DQHZ6GWoOgpSM0GoqdTnUnl7Ua-3IVaBL7mOYe76M8q6kfIETxX5N1YC1"
        "9ec4YVUngLWrUfHeXHeb138nnfEzFUUnDmuy2pEg8gCbFukOEDnChPVXDCtZr09E",
        "6EfkaQsj4DQHZ6GWoOgpSM0GoqdTnUnl7Ua-3IVaBL7mOYe76M8q6kfIETxX5N1YC1",
    ),
    "docker": ("dckr_pat_WlD9Mf59h9d5xq59DZ3uSy3GaBA", "WlD9Mf59h9d5xq59DZ3uSy3GaBA"),
    "huggingface": ("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", "oKviuUHNjVblzWANmHwIKnZvkHuEObfFAE"),
    "vault": (
        "hvs.CAESISTAOeXiIbOk4EYKFm3CncjPdwZhmHTofnePeJmTfdwWazOkDHEiAHFMsopfT61tPkZLseMeayTEs"
        "AKHb9t0sX9",
        "ISTAOeXiIbOk4EYKFm3CncjPdwZhmHTofnePeJmTfdwWazOkDHEiAHFMsopfT61tPkZLseMeayTEs",
    ),
    "vault_batch": (
        "hvb.AAAAAQ80ZqpxQN3KiDHvbQp2P8p69ua8frZr7WFh4WHSymySVnDZGUXX2UiJypJLBur4ViMMuf6HyDRcff7"
        "cYG4_5vCV4TgXmP_Zu57fbHZin_KLdAG3h4cL_G73bk1nK-OY9Ml62o",
        "80ZqpxQN3KiDHvbQp2P8p69ua8frZr7WFh4WHSymySVnDZGUXX2UiJypJLBur4ViMMuf6HyDRcff7",
    ),
    "digitalocean": (
        "dop_v1_3400c23ec0dedbd50ae8430e494f5bdbd8d5fe9763ad75d7fcc574a6a44f8e46",
        "3400c23ec0dedbd50ae8430e494f5bdbd8d5fe9763ad75d7fcc574a6a44f8e46",
    ),
    "shopify": ("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", "8b36b0df1901cdb74c54acae05d0352e"),
    "age": (
        "AGE-SECRET-KEY-1Y8RTRXZ6A34K8RC3R8GQ429CCD8C9FK0HNUUS38GQE9EKTRUUYN34LPXXV",
        "Y8RTRXZ6A34K8RC3R8GQ429CCD8C9FK0HNUUS38GQE9EKTRUUYN34LPXXV",
    ),
    "google_oauth": (
        "ya29.a08iHKgMkM2UYHuPKHXspuPawu1SPp_F9QexFJ_BKC1Q0URL70FE0ymJzETP2KGhK-p4zuGBlVuzUfqt",
        "8iHKgMkM2UYHuPKHXspuPawu1SPp_F9QexFJ_BKC1Q0URL70FE0ymJzETP2KGhK-p4zuGBlVuzUfqt",
    ),
    # credentials given as an option's value on a command line
    "option_password": ("mysql -h db -u app --password horse-battery-staple app", "horse-battery"),
    "option_equals": ("dbtool --db-password=correcthorsebattery --ping", "correcthorsebattery"),
    "option_token": ("deploy --token Vq7Rt2Lp9Xk4Mn8Bz3Wc --env prod", "Vq7Rt2Lp9Xk4Mn8Bz3Wc"),
    "mysql_glued": ("mysqldump -h db -u root -pStapleHorseBattery app", "StapleHorseBattery"),
    "sshpass": ("sshpass -p batterystaplehorse ssh deploy@host", "batterystaplehorse"),
    "aws_configure_secret": (
        "aws configure set aws_secret_access_key Q9xLm2Rt7Vw4Yz8Bc1Nd5Fg3Hj6Kp0SxTuWvE",
        "Q9xLm2Rt7Vw4Yz8Bc1Nd5Fg3Hj6Kp0SxTuWvE",
    ),
    "aws_configure_session": (
        "aws configure set aws_session_token IQoJb3JpZ2luX2VjEHgaCXVzLWVhc3QtMSJHMEUCIQD",
        "IQoJb3JpZ2luX2VjEHgaCXVzLWVhc3QtMSJHMEUCIQD",
    ),
}
PLANTED = "\n".join(text for text, _ in CORPUS.values())


def encodings(text: str) -> dict[str, str]:
    """The same text as a JSON string value would decode to, reached in different ways."""
    return {
        "plain": text,
        "after_newline": "line one\n" + text,
        "after_tab": "\t" + text,
        "nested_json": json.dumps({"inner": text}),
    }


def _escape_all_strings(text: str) -> str:
    """The JSON text with every character of every string value escaped as \\uXXXX."""
    value = json.loads(text)

    def encode(item: Any) -> str:
        if isinstance(item, str):
            return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in item) + '"'
        if isinstance(item, dict):
            return "{" + ",".join(f"{json.dumps(k)}:{encode(v)}" for k, v in item.items()) + "}"
        if isinstance(item, list):
            return "[" + ",".join(encode(v) for v in item) + "]"
        return json.dumps(item)

    return encode(value)


# (fixture, where in the payload the text goes)
FIELDS: list[tuple[str, tuple[str, ...]]] = [
    ("UserPromptSubmit", ("prompt",)),
    ("PreToolUse.Bash", ("tool_input", "command")),
    ("PostToolUse.Bash", ("tool_response", "stdout")),
    ("PostToolUse.Write", ("tool_input", "content")),
    ("PostToolUse.Edit", ("tool_input", "new_string")),
    ("PostToolUseFailure.Bash", ("error",)),
    ("PostCompact", ("compact_summary",)),
    ("Stop", ("last_assistant_message",)),
    ("SubagentStop", ("last_assistant_message",)),
]


def planted(name: str, path: tuple[str, ...], text: str, project: Path) -> dict[str, Any]:
    payload = fixture(name, project)
    target = payload
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = text
    return payload


def every_byte_written(*folders: Path) -> bytes:
    data = b""
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data += path.read_bytes()
    return data


def assert_nothing_leaked(data: bytes, where: str) -> None:
    text = data.decode("utf-8", "replace")
    leaked = [name for name, (_, secret) in CORPUS.items() if secret in text]
    assert not leaked, f"{leaked} leaked into {where}"


@pytest.mark.parametrize("encoding", ["plain", "after_newline", "after_tab", "nested_json"])
def test_no_planted_secret_reaches_disk_from_any_field(
    project: Path, isolated_state: Path, encoding: str
) -> None:
    printed = b""
    for name, path in FIELDS:
        payload = planted(name, path, encodings(PLANTED)[encoding], project)
        result = run_hook(payload["hook_event_name"], payload, project)
        printed += result.stdout.encode() + result.stderr.encode()
    assert_nothing_leaked(every_byte_written(project, isolated_state), "the files written")
    assert_nothing_leaked(printed, "what the hooks printed")
    shown = subprocess.run(
        [CLI, "--project", str(project), "events", "--payload", "--json", "--limit", "100"],
        capture_output=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert b"REDACTED" in shown.stdout
    assert_nothing_leaked(shown.stdout + shown.stderr, "`events --payload`")


def test_unicode_escaped_payloads_are_redacted_too(project: Path, isolated_state: Path) -> None:
    """Every character of every string sent as \\uXXXX: what is stored is what it decodes to."""
    for name, path in FIELDS:
        payload = planted(name, path, PLANTED, project)
        run_hook(payload["hook_event_name"], _escape_all_strings(json.dumps(payload)), project)
    assert_nothing_leaked(every_byte_written(project, isolated_state), "the files written")


def test_a_secret_in_a_capped_payload_is_redacted_before_the_cut(project: Path) -> None:
    """A huge payload is capped by cutting long strings: redaction comes first, so no prefix
    of a secret survives the cut."""
    payload = fixture("PostToolUse.Bash", project)
    payload["tool_response"]["stdout"] = "x" * 8190 + " " + PLANTED + " " + "y" * 400_000
    run_hook("PostToolUse", payload, project)
    assert_nothing_leaked(every_byte_written(project), "a capped payload")
    data = every_byte_written(project).decode("utf-8", "replace")
    assert "ghp_A1b2" not in data  # not even the start of a token


def test_clean_text_is_left_alone() -> None:
    for text in (
        "def check_password(self, value: str) -> bool:",
        "token = get_token()",
        "self.api_key = api_key",
        "File created successfully at: /home/dev/project/src/migrate_users.py",
        '"totalTokens": 1234, "session_id": "560819af-56fc-4528-be0a-32a24d1aa819"',
        "see https://example.com/path?q=1&page=2",
        "git push -u origin main",
        "key: str",
    ):
        assert redact(text) == text, text


SEPARATORS = st.sampled_from([" ", "\n", "\t", '"', "'", "=", ":", "(", ",", "; "])
NOISE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=NOISE,
    after=NOISE,
    left=SEPARATORS,
    right=SEPARATORS,
    case=st.sampled_from(sorted(CORPUS)),
)
def test_a_planted_secret_never_survives_whatever_surrounds_it(
    before: str, after: str, left: str, right: str, case: str
) -> None:
    text, secret = CORPUS[case]
    out = redact(before + left + text + right + after)
    assert secret not in out
    # and inside a JSON document, through the decoded walk
    import apsw

    from claude_session.core.redact import redact_json

    document = json.dumps({"a": [before + left + text + right + after], "b": after})
    stored = redact_json(apsw.Connection(":memory:"), document)
    assert secret not in stored
    json.loads(stored)  # still valid JSON
