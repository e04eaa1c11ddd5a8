"""Secret redaction, applied to every text before its first byte reaches disk.

It works on raw JSON text as well as on plain text: no pattern consumes a double quote or a
backslash except as a whole JSON escape, so redacting a valid JSON document leaves it valid.
A cheap keyword prefilter keeps `re` (about 3 ms to import) off the path of clean payloads.
"""

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

# Lower-case markers; a text containing none of them cannot match any pattern below.
_KEYWORDS = (
    "akia",
    "asia",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk-",
    "xox",
    "-----begin",
    "bearer",
    "passw",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "accesskey",
    "credential",
    "<private",
)

_compiled: "list[tuple[Any, Any]] | None" = None


def _patterns() -> "list[tuple[Any, Any]]":
    global _compiled
    if _compiled is None:
        import re

        unit = r'(?:[^"\\]|\\.)'  # one character of a JSON string, escapes kept whole
        value = r"[^\s\"'\\,;&(){}\[\]<>`]"
        _compiled = [
            (
                re.compile(r"(?is)<private>" + unit + r"*?(?:</private>|(?=\"))"),
                "[REDACTED:private]",
            ),
            (
                re.compile(
                    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----"
                    + unit
                    + r"*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|(?=\"))"
                ),
                "[REDACTED:private_key]",
            ),
            (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _fingerprint("aws_key")),
            (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,255}"), _fingerprint("github_token")),
            (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,255}\b"), _fingerprint("github_token")),
            (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{16,}"), _fingerprint("api_key")),
            (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), _fingerprint("slack_token")),
            (
                re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"),
                lambda m: m.group(1) + "[REDACTED:bearer]",
            ),
            (
                re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s:/@\"\\]+):([^\s/@\"\\]+)@"),
                lambda m: f"{m.group(1)}{m.group(2)}:[REDACTED:url_password]@",
            ),
            (
                # name=value, name: value, "name": "value" (also inside JSON strings).
                re.compile(
                    r"(?i)\b([a-z0-9_\-]*(?:passw(?:or)?d|pwd|secret|token|api[_\-]?key"
                    r"|access[_\-]?key|credentials?)[a-z0-9_\-]*)"
                    r"((?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?)"
                    r"(?!\[REDACTED)(?=" + value + r"*[A-Za-z])(" + value + r"{4,})(?![\w(\[.])"
                ),
                lambda m: f"{m.group(1)}{m.group(2)}[REDACTED:assignment]",
            ),
        ]
    return _compiled


def _fingerprint(kind: str) -> "Any":
    """Replacement naming the kind and a short hash, so one secret seen twice can be matched."""

    def replace(match: "Any") -> str:
        from hashlib import sha256

        return f"[REDACTED:{kind}#{sha256(match.group(0).encode()).hexdigest()[:8]}]"

    return replace


def might_contain_secret(text: str) -> bool:
    low = text.lower()
    if "://" in low and "@" in low:
        return True
    return any(word in low for word in _KEYWORDS)


def redact(text: str) -> str:
    """Return `text` with every recognised secret replaced by a `[REDACTED:kind]` marker."""
    if not text or not might_contain_secret(text):
        return text
    for pattern, replacement in _patterns():
        text = pattern.sub(replacement, text)
    return text
