"""Token-shaped secrets, found by their shape alone (a prefix and a body, a JWT, a private key
block, a credential in a URL or an Authorization header...), and the plain string scans
core/redact.py's assignments share (`run`, `skip`, `value_end`, `high_entropy`). `spans`
gives them all; core/redact.py replaces them. What the families are is data, in
core/token_shapes.py.

Plain string search, no regular expressions (see core/redact.py): stdlib only, on the hook's
path.
"""

from .token_shapes import (
    ALNUM,
    AWS_PREFIXES,
    B64,
    DASHED,
    DIGITS,
    HEX,
    NAME,
    PREFIXED,
    QUERY_NAMES,
    SLACK_HOOKS,
    TWILIO_PREFIXES,
    UPPER_DIGITS,
    URL_END,
    VALUE_END,
    WORD,
)


def spans(text: str) -> "list[tuple[int, int, str]]":
    """Spans (start, end, kind) of every token-shaped secret in `text`, possibly overlapping."""
    found = _private_blocks(text)
    found += _prefixed(text)
    found += _aws_keys(text)
    found += twilio_spans(text)
    found += _jwts(text)
    found += _slack_webhooks(text)
    found += _authorization(text)
    found += _url_credentials(text)
    found += _curl_user(text)
    found += _query_params(text)
    return found


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # keeps length


def lower(text: str) -> str:
    """`text` in lower case with every character where it was, so a position found in it holds
    in `text`. `str.lower` is many times faster than a translation table on a long text; only
    U+0130 grows when lowered (then the table, ASCII letters only), and only the Kelvin sign
    becomes an ASCII letter (`k`): at worst one more place looked at."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_LOWER)


def _boundary(text: str, i: int) -> bool:
    """No word character right before position i; an escape such as `\\n` counts as none."""
    return i == 0 or text[i - 1] not in WORD or (i >= 2 and text[i - 2] == "\\")


def _word_ends(text: str, i: int) -> bool:
    """No word character at position i."""
    return i == len(text) or text[i] not in WORD


def run(text: str, i: int, allowed: "frozenset[str]") -> int:
    """The end of the run of `allowed` characters starting at i."""
    n = len(text)
    while i < n and text[i] in allowed:
        i += 1
    return i


def skip(text: str, i: int, chars: str) -> int:
    n = len(text)
    while i < n and text[i] in chars:
        i += 1
    return i


def value_end(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] not in VALUE_END:
        i += 1
    return i


def _occurrences(haystack: str, needle: str) -> "list[int]":
    found = []
    i = haystack.find(needle)
    while i >= 0:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


# Prefixes no word ends with: a token glued to a word (`token_ghp_...`, `%3Dghp_...`,
# `key_sk-ant-...`) is still the token. `sk-` alone and `SG.` end words (`task-`, `MSG.`).
_ANYWHERE = ("sk-ant-", "sk-proj-", "sk-svcacct-")


def _prefixed(text: str) -> "list[tuple[int, int, str]]":
    spans = []
    for prefix, kind, body, shortest in PREFIXED:
        if prefix not in text:
            continue  # most are absent: a search without a call, for each of 40-odd
        for i in _occurrences(text, prefix):
            if prefix in ("sk-", "SG."):
                glued = prefix == "sk-" and text.startswith(_ANYWHERE, i)
                if not glued and not _boundary(text, i):
                    continue
            end = run(text, i + len(prefix), body)
            if end - i - len(prefix) >= shortest:
                spans.append((i, end, kind))
    return spans


def _fixed_length(
    text: str, prefixes: "tuple[str, ...]", body: "frozenset[str]", length: int, kind: str
) -> "list[tuple[int, int, str]]":
    """Tokens of exactly `length` characters: a prefix, then `body` characters, whole words."""
    spans = []
    for prefix in prefixes:
        for i in _occurrences(text, prefix):
            end = run(text, i + len(prefix), body)
            # glued to a word before it (`key_AKIA...`) when the prefix is distinctive
            start_ok = _boundary(text, i) or kind == "aws_key"
            if start_ok and end - i == length and _word_ends(text, end):
                spans.append((i, end, kind))
    return spans


def _aws_keys(text: str) -> "list[tuple[int, int, str]]":
    return _fixed_length(text, AWS_PREFIXES, UPPER_DIGITS, 20, "aws_key")


def twilio_spans(text: str) -> "list[tuple[int, int, str]]":
    return _fixed_length(text, TWILIO_PREFIXES, HEX, 34, "twilio_key")


def _jwts(text: str) -> "list[tuple[int, int, str]]":
    spans = []
    for i in _occurrences(text, "eyJ"):
        head = run(text, i, DASHED)
        if head - i < 10 or head >= len(text) or text[head] != ".":
            continue
        body = run(text, head + 1, DASHED)
        if body - head - 1 < 10:
            continue
        end = body
        if body < len(text) and text[body] == ".":
            end = run(text, body + 1, DASHED)
        spans.append((i, end, "jwt"))
    return spans


def _private_blocks(text: str) -> "list[tuple[int, int, str]]":
    spans = []
    for i in _occurrences(text, "-----BEGIN"):
        header_end = text.find("-----", i + 10)
        if header_end < 0 or "PRIVATE KEY" not in text[i:header_end]:
            continue
        close = text.find("-----END", header_end)
        if close < 0:
            end = len(text)  # cut off: hide the rest
        else:
            tail = text.find("-----", close + 8)
            end = len(text) if tail < 0 else tail + 5
        spans.append((i, _no_quote_end(text, i, end), "private_key"))
    low = lower(text)
    for i in _occurrences(low, "<private>"):
        close = low.find("</private>", i)
        end = len(text) if close < 0 else close + len("</private>")
        spans.append((i, _no_quote_end(text, i, end), "private"))
    return spans


def _no_quote_end(text: str, start: int, end: int) -> int:
    """Inside JSON text a span must stop before a quote: it would end the string."""
    quote = text.find('"', start, end)
    return end if quote < 0 else quote


def _slack_webhooks(text: str) -> "list[tuple[int, int, str]]":
    spans = []
    for marker in SLACK_HOOKS:
        for i in _occurrences(text, marker):
            start = i + len(marker)
            end = run(text, start, DASHED | frozenset("/"))
            if end - start >= 8:
                spans.append((start, end, "slack_webhook"))
    return spans


def _authorization(text: str) -> "list[tuple[int, int, str]]":
    """`Authorization: <scheme> <credential>` and `Bearer <token>` anywhere."""
    spans = []
    low = lower(text)
    for i in _occurrences(low, "authorization"):
        j = i + len("authorization")
        j = skip(text, j, " \t\"'\\")
        if j >= len(text) or text[j] not in ":=":
            continue
        j = skip(text, j + 1, " \t\"'\\")
        word_end = run(text, j, ALNUM)
        scheme = low[j:word_end]
        if scheme in ("bearer", "basic", "token", "digest", "negotiate", "apikey", "bot"):
            j = skip(text, word_end, " \t")
        end = value_end(text, j)
        if end - j >= 4:
            spans.append((j, end, "authorization"))
    for i in _occurrences(low, "bearer"):
        j = skip(text, i + 6, " \t")
        if j == i + 6:
            continue
        end = run(text, j, B64)
        if end - j >= 8:
            spans.append((j, end, "bearer"))
    return spans


def _url_credentials(text: str) -> "list[tuple[int, int, str]]":
    """scheme://user:password@host (and a bare token as the user part)."""
    spans = []
    for i in _occurrences(text, "://"):
        start = i + 3
        end = start
        n = len(text)
        while end < n and text[end] not in URL_END and text[end] not in "/@?#":
            end += 1
        if end >= n or text[end] != "@":
            continue
        userinfo = text[start:end]
        colon = userinfo.find(":")
        if colon >= 0 and end - (start + colon + 1) >= 1:
            spans.append((start + colon + 1, end, "url_password"))
        elif colon < 0 and high_entropy(userinfo):
            spans.append((start, end, "url_token"))
    return spans


def _curl_user(text: str) -> "list[tuple[int, int, str]]":
    """`curl -u user:pass`, `--user user:pass`, `--user=user:pass`."""
    spans = []
    for flag in (" -u", "--user"):
        for i in _occurrences(text, flag):
            j = i + len(flag)
            if j < len(text) and text[j] == "=":
                j += 1
            elif j >= len(text) or text[j] not in " \t":
                continue
            j = skip(text, j, " \t\"'\\")
            end = value_end(text, j)
            colon = text.find(":", j, end)
            if colon >= 0 and end - colon > 1:
                spans.append((colon + 1, end, "basic_auth"))
    return spans


def _query_params(text: str) -> "list[tuple[int, int, str]]":
    """?key=..., &token=..., &sig=... in URLs."""
    spans = []
    for sep in "?&;":
        for i in _occurrences(text, sep):
            name_end = run(text, i + 1, NAME)
            if name_end >= len(text) or text[name_end] != "=":
                continue
            if text[i + 1 : name_end].lower() not in QUERY_NAMES:
                continue
            end = name_end + 1
            while end < len(text) and text[end] not in URL_END and text[end] not in "&#;":
                end += 1
            if end - name_end - 1 >= 4:
                spans.append((name_end + 1, end, "query_param"))
    return spans


def has_digit(value: str) -> bool:
    return any(c in DIGITS for c in value)


def high_entropy(value: str) -> bool:
    """A long random-looking token: base64/hex alphabet, letters and digits, high entropy."""
    if len(value) < 20 or not all(c in B64 for c in value):
        return False
    if not has_digit(value) or not any(c.isalpha() for c in value):
        return False
    if value[0] in "/~." or value.count("/") >= 2 or _longest_lower_run(value) >= 8:
        return False  # a path or words, not a random token
    if all(c in HEX for c in value.lower()):
        return len(value) >= 32 and _entropy(value.lower()) >= 3.0
    return _entropy(value) >= 4.0


def _longest_lower_run(value: str) -> int:
    longest = run = 0
    for c in value:
        run = run + 1 if "a" <= c <= "z" else 0
        longest = max(longest, run)
    return longest


def _entropy(value: str) -> float:
    from math import log2

    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    total = len(value)
    return -sum(n / total * log2(n / total) for n in counts.values())
