"""Secrets behind an encoding: percent-encoding (once or twice), JSON `\\u` escapes and base64.

A token an agent passes through a URL (`?next=%3Fkey%3Dghp_...`), a shell (`a%20sk-ant-...`),
a JSON string or `base64` is still the token: each run of text that holds such an encoding is
decoded and scanned as the reader would see it, and when the decoded text holds a secret the
whole run is redacted (its encoded form is the secret too). Standard library only, no `re`,
no `urllib` (which imports `re`): the hooks call this for every text that may hold one.
"""

import binascii

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable

    Find = Callable[[str], list[tuple[int, int, str]]]

# What ends a run of encoded text: whitespace, quotes, brackets and separators of a command.
_RUN_END = frozenset(" \t\r\n\"'<>`|,;()[]{}")
_HEX = frozenset("0123456789abcdefABCDEF")
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
_B64_TEXT = _B64 | frozenset(" \t\r\n")
B64_SHORTEST = 24  # the shortest token we know (20 characters) takes 28 in base64; margin
B64_LONGEST = 8192  # longer runs are data (an image, a bundle), not a wrapped token


def worth_decoding(text: str) -> bool:
    """A cheap test: the text may hold an encoded secret (a `%XX`, a `\\u`, a long base64 run)."""
    percent = text.find("%")
    while percent >= 0:
        if text[percent + 1 : percent + 2] in _HEX and text[percent + 2 : percent + 3] in _HEX:
            return True
        percent = text.find("%", percent + 1)
    if "\\u" in text:
        return True
    return any(_b64_word(word) for word in text.split())


def _b64_word(word: str) -> bool:
    return B64_SHORTEST <= len(word) <= B64_LONGEST and set(word) <= _B64


def spans(text: str, find: "Find") -> "list[tuple[int, int, str]]":
    """(start, end, kind) of each run of `text` whose decoding holds a secret `find` sees."""
    if len(text) > B64_LONGEST and set(text) <= _B64_TEXT:
        # a base64 blob (`base64 file`, MIME lines): decoded once, whole, not line by line
        decoded = _b64decode(text)
        secrets = find(decoded) if decoded else []
        return [(0, len(text), secrets[0][2])] if secrets else []
    found = []
    for start, end in _runs(text):
        run = text[start:end]
        if "%" in run and _encoded_userinfo(run):
            found.append((start, end, "url_password"))
            continue
        for decoded in _decodings(run):
            secrets = find(decoded)
            if secrets:
                found.append((start, end, secrets[0][2]))
                break
    return found


def _encoded_userinfo(run: str) -> bool:
    """`user%3Apass%40host` (once or twice encoded): a colon and then an at sign that were both
    encoded are credentials, whatever the password holds."""
    for form in (run, _unquote(run)):
        low = form.lower()
        colon = low.find("%3a")
        at = low.find("%40", colon + 3) if colon > 0 else -1
        # user and password are words, not prose: no encoded space between them
        if at > colon + 3 and "%20" not in low[:at] and "+" not in low[colon:at]:
            return True
    return False


def _runs(text: str) -> "list[tuple[int, int]]":
    """The runs that hold a `%XX`, a `\\u` escape, or are long base64 words, each once."""
    out: list[tuple[int, int]] = []
    n = len(text)
    for marker in ("%", "\\u"):
        i = text.find(marker)
        while i >= 0:
            start, end = i, i
            while start > 0 and text[start - 1] not in _RUN_END:
                start -= 1
            while end < n and text[end] not in _RUN_END:
                end += 1
            if not out or (start, end) != out[-1]:
                out.append((start, end))
            i = text.find(marker, end)
    at = 0
    for word in text.split():
        if len(word) < B64_SHORTEST:
            continue  # found by position only when it may be one
        at = text.find(word, at)
        stripped = word.strip("\"'`()[]{}<>,;|")
        if _b64_word(stripped):
            start = text.find(stripped, at)
            out.append((start, start + len(stripped)))
        at += len(word)
    return sorted(set(out))


def _decodings(run: str) -> "list[str]":
    """What the run may say: percent-decoded once and twice, JSON-unescaped, base64-decoded."""
    out = []
    once = _unquote(run)
    if once != run:
        out.append(once)
        twice = _unquote(once)
        if twice != once:
            out.append(twice)
    if "\\u" in run:
        out.append(_unescape(run))
    if _b64_word(run):
        decoded = _b64decode(run)
        if decoded:
            out.append(decoded)
    return out


def _unquote(text: str) -> str:
    """Percent-decoding as a URL's reader does it (`+` stays: it is not a space in a path)."""
    if "%" not in text:
        return text
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "%" and text[i + 1 : i + 2] in _HEX and text[i + 2 : i + 3] in _HEX:
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out += ch.encode("utf-8", "surrogatepass")
            i += 1
    return out.decode("utf-8", "replace")


def _unescape(text: str) -> str:
    """`\\uXXXX` escapes decoded (the rest as it is)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        digits = text[i + 2 : i + 6]
        if text.startswith("\\u", i) and len(digits) == 4 and all(c in _HEX for c in digits):
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _b64decode(word: str) -> str | None:
    """Standard or URL-safe base64 that decodes to text, else None."""
    data = "".join(word.split()).replace("-", "+").replace("_", "/").rstrip("=")
    data += "=" * (-len(data) % 4)
    try:
        raw = binascii.a2b_base64(data)
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
