"""Redaction: every planted secret goes, JSON stays valid, ordinary text stays."""

from __future__ import annotations

import json

import pytest

from claude_session.core.redact import might_contain_secret, redact

CASES = {
    "AKIAIOSFODNN7EXAMPLE": "aws_key",
    "ghp_" + "a1B2" * 9: "github_token",
    "github_pat_11AAAA_" + "b" * 40: "github_token",
    "sk-ant-api03-" + "c" * 40: "api_key",
    "sk-proj-" + "d" * 40: "api_key",
    "xoxb-1234567890-abcdefghij": "slack_token",
}


@pytest.mark.parametrize("secret", sorted(CASES))
def test_token_shapes_are_replaced_with_kind_and_fingerprint(secret: str) -> None:
    text = json.dumps({"prompt": f"use {secret} please", "again": secret})
    out = redact(text)
    assert secret not in out
    value = json.loads(out)
    assert f"[REDACTED:{CASES[secret]}#" in value["prompt"]
    assert value["again"] in value["prompt"]  # the same secret, the same fingerprint


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("export PASSWORD=hunter2x", "hunter2x"),
        ('{"password": "hunter2x"}', "hunter2x"),
        ("db_password: 'hunter2x'", "hunter2x"),
        ("curl -H 'Authorization: Bearer abc.def.ghijklmnop'", "abc.def.ghijklmnop"),
        ("postgres://user:pa55word@host:5432/db", "pa55word"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXk",
        ),
        ("note <Private>my diary</PRIVATE> end", "my diary"),
        ("API_KEY=abcd1234efgh", "abcd1234efgh"),
    ],
)
def test_assignments_urls_keys_and_private_tags(text: str, gone: str) -> None:
    out = redact(text)
    assert gone not in out and "[REDACTED" in out
    # the same inside a JSON string, with escapes, stays valid JSON
    wrapped = json.dumps({"v": text})
    assert gone not in json.loads(redact(wrapped))["v"]


@pytest.mark.parametrize(
    "text",
    [
        "token = get_token()",
        '"totalTokens": 1234',
        "def check_password(self, value):",
        "print('hello')\n",
        "see https://example.com/path?q=1",
    ],
)
def test_ordinary_code_and_numbers_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_prefilter_skips_clean_payloads() -> None:
    assert not might_contain_secret('{"tool_input": {"command": "python3 hello.py"}}')
    assert might_contain_secret("Bearer xyz")


def test_escaped_quotes_inside_secrets_keep_json_valid() -> None:
    text = json.dumps({"cmd": 'mysql --password="s3cr3t\\"x" -e "select 1"'})
    assert "s3cr3t" not in redact(text)
    json.loads(redact(text))
