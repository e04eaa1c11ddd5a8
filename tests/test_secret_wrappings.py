"""Secrets in any wrapping: every distinctive token family glued to a word, URL-encoded once
and twice, base64 (standard and URL-safe), JSON-escaped, inside a URL and inside a path, never
reach the database; generated with hypothesis, then through the installed hook command."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

from conftest import fixture, run_hook
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_session.core.redact import redact

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
# (prefix, body alphabet, body length): the families whose prefix no word ends with.
FAMILIES = [
    ("ghp_", ALNUM, 36),
    ("github_pat_", ALNUM + "_", 60),
    ("glpat-", ALNUM + "-", 20),
    ("npm_", ALNUM, 36),
    ("sk-ant-api03-", ALNUM + "-", 40),
    ("sk-proj-", ALNUM + "-", 40),
    ("sk_live_", ALNUM, 24),
    ("whsec_", ALNUM, 32),
    ("xoxb-", "0123456789-", 24),
    ("AKIA", UPPER, 16),
    ("pypi-AgEIcHlwaS5vcmc", ALNUM + "-_", 80),
    ("dckr_pat_", ALNUM + "-_", 27),
    ("hf_", ALNUM, 34),
    ("hvs.", ALNUM, 91),
    ("dop_v1_", "0123456789abcdef", 64),
    ("shpat_", "0123456789abcdef", 32),
    ("AGE-SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    ("ya29.", ALNUM + "-_", 60),
]


@st.composite
def tokens(draw: st.DrawFn) -> str:
    prefix, alphabet, size = draw(st.sampled_from(FAMILIES))
    return prefix + draw(st.text(alphabet=alphabet, min_size=size, max_size=size))


def wrappings(token: str) -> dict[str, str]:
    """Each wrapping of `token`, and the part of it that must not survive."""
    assignment = f"token={token}"
    return {
        "glued": f"key_{token}.py",
        "url-encoded": quote(assignment, safe=""),
        "url-encoded twice": quote(quote(assignment, safe=""), safe=""),
        "percent after a word": f"a%20{token}",
        "base64": base64.b64encode(token.encode()).decode(),
        "base64 of an assignment": base64.b64encode(f"export {assignment}".encode()).decode(),
        "url-safe base64": base64.urlsafe_b64encode(token.encode()).decode().rstrip("="),
        "json-escaped": f"\\u{ord(token[0]):04x}" + token[1:],
        "inside a url": f"https://api.example.com/v1/{token}/items?x=1",
        "inside a path": f"/tmp/cache/{token}/file.txt",
    }


def secret_of(kind: str, wrapped: str, token: str) -> str:
    """What of the wrapped text would give the token away."""
    if kind.startswith(("base64", "url-safe", "url-encoded")):
        return wrapped.rsplit("%3D", 1)[-1] if kind == "url-encoded" else wrapped
    return token[len(token) // 2 :]  # its random half


@settings(max_examples=80, deadline=None)
@given(token=tokens(), words=st.lists(st.sampled_from(["run", "x", "--flag", "&&"]), max_size=3))
def test_no_wrapping_hides_a_token(token: str, words: list[str]) -> None:
    for kind, wrapped in wrappings(token).items():
        text = " ".join([*words, wrapped, *words])
        out = redact(text)
        assert secret_of(kind, wrapped, token) not in out, (kind, text, out)
        assert "[REDACTED:" in out, (kind, text, out)


@settings(max_examples=40, deadline=None)
@given(user=st.text(alphabet=ALNUM, min_size=1, max_size=8),
       first=st.sampled_from(ALNUM),  # `password=$NAME` names a variable: not a secret
       rest=st.text(alphabet=ALNUM + "/@:!$", min_size=5, max_size=15))  # fmt: skip
def test_url_encoded_credentials_are_hidden(user: str, first: str, rest: str) -> None:
    password = first + rest
    for encoded in (
        quote(f"{user}:{password}@db.example.com", safe=""),
        quote(quote(f"{user}:{password}@db.example.com", safe=""), safe=""),
        "x=" + quote(f"password={password}x9x9x9", safe=""),
    ):
        out = redact(f"connect {encoded} now")
        assert quote(password, safe="") not in out or len(password) < 4, (encoded, out)
        assert "[REDACTED:" in out, (encoded, out)


def test_ordinary_text_is_left_alone() -> None:
    """What looks like an encoding but hides no secret is kept as it was."""
    for text in (
        "see%3A%20page%20%40home",
        "task-0123456789abcdefghijkl is done",
        "/home/dev/project/src/module/file_with_a_long_name.py",
        "sha256 " + "ab" * 32,
        base64.b64encode(b"just a sentence about nothing secret at all").decode(),
    ):
        assert redact(text) == text


def test_wrapped_tokens_never_reach_the_database_through_the_hook(project: Path) -> None:
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    wrapped = wrappings(token)
    payload = fixture("PostToolUse.Bash", project)
    payload["tool_input"]["command"] = " ; ".join(wrapped.values())
    payload["tool_response"]["stdout"] = json.dumps(wrapped)
    run_hook("PostToolUse", payload, project)
    write = fixture("PostToolUse.Write", project)  # a path in a claim and a tool call
    write["tool_input"]["file_path"] = str(project / f"notes-{wrapped['glued']}")
    run_hook("PostToolUse", write, project)
    stored = b"".join(
        p.read_bytes() for p in project.glob(".claude-session.db*") if p.is_file()
    ).decode("latin-1")
    for kind, text in wrapped.items():
        assert secret_of(kind, text, token) not in stored, kind
