"""Secret redaction, applied to every text before its first byte reaches disk.

`redact_json` walks a JSON document's decoded string values (SQLite's `json_tree`), so a secret
behind an escaped newline, a `\\u` escape or inside a JSON document nested in a string is seen
as the reader would see it; `redact` scans plain text. Both run before any truncation.

The scanner is plain string search, no regular expressions: importing `re` costs a hook
process ~7 ms, half its budget, and hand-written scans cannot backtrack catastrophically on
hostile input. Replacements never contain a quote or a backslash, and no span we replace does
either, so redacting JSON text keeps it valid.

Here: the entry points, the cheap tests that let most texts skip the scan, the secrets named
by what stands before them (assignments: `NAME=value`, `"name": "value"`, secret JSON member
names) and the replacing. Elsewhere: the token shapes, found by their shape alone
(core/token_spans.py, the families as data in core/token_shapes.py), options' values on a
command line (core/cmdline_secrets.py) and secrets behind an encoding (core/encoded.py).
"""

from .token_shapes import (
    ALNUM,
    B64,
    GENERIC,
    MARK,
    MARKERS,
    NAME,
    NOT_SECRET_VALUES,
    QUERY_NAMES,
    SECRET_MEMBER_WORDS,
    SECRET_NAME_PARTS,
    WORD,
)
from .token_spans import has_digit, high_entropy, lower, run, skip, twilio_spans, value_end
from .token_spans import spans as token_spans

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    import apsw


def might_contain_secret(text: str) -> bool:
    """A cheap superset test: False means `redact` would return the text unchanged."""
    return _might_hold_token(text) or _might_hold_value(text)


def _might_hold_value(text: str) -> bool:
    """A secret named by what stands before it: an assignment, or an option's value on a
    command line (core/cmdline_secrets.py)."""
    if ("=" in text or ":" in text) and _assignments(text, first_only=True):
        return True
    return _might_hold_option(text) and bool(_option_values(text))


def _might_hold_option(text: str) -> bool:
    """A cheap superset test of `cmdline_secrets.spans`, here so that most hooks, whose texts
    name no such option, never import that module (~0.5 ms). Case-sensitive, as it is."""
    if "-" in text:
        for word in ("pass", "pwd", "token", "secret", "key"):  # its _OPTION_WORDS
            if word in text:
                return True
        if "-p" in text and ("mysql" in text or "mariadb" in text):
            return True
    return "configure set" in text


def _option_values(text: str) -> "list[tuple[int, int, str]]":
    from .cmdline_secrets import spans

    return spans(text)


def _encodings(text: str) -> bool:
    """The text may hold a secret behind an encoding (core/encoded.py)."""
    from .encoded import worth_decoding

    return worth_decoding(text)


def _might_hold_token(text: str) -> bool:
    low = lower(text)
    for marker in MARKERS:  # a plain loop: twice as fast as any() over a generator here
        if marker in low:
            return True
    if "=" in text:
        for name in QUERY_NAMES:
            if f"{name}=" in low:
                return True
    return ("SK" in text or "AC" in text) and bool(twilio_spans(text))


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by a `[REDACTED:kind#fingerprint]` marker."""
    if not text or not (might_contain_secret(text) or _encodings(text)):
        return text
    spans = _find(text, assignments=True)
    return _replace(text, spans) if spans else text


def secret_name(name: str) -> bool:
    """Whether a name says its value is a secret (`deploy_token`, `DB_PASSWORD`, `apiKey`)."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def _redact_tokens(text: str) -> str:
    """Token-shaped secrets only: for the structure of a JSON document, whose member values
    (ids, paths) must not be taken for `name: value` assignments."""
    if not text or not (_might_hold_token(text) or _encodings(text)):
        return text
    spans = _find(text, assignments=False)
    return _replace(text, spans) if spans else text


def redact_json(conn: "apsw.Connection", text: str, depth: int = 0) -> str:
    """A JSON document with each decoded string value redacted (and a value under a secret
    member name, such as "password" or "apiKey", replaced whole); keys are checked too.
    Text that is not JSON is redacted as plain text."""
    try:
        values = conn.execute(
            "SELECT fullkey, key, atom FROM json_tree(?1) WHERE type = 'text'", (text,)
        ).fetchall()
    except Exception:  # not JSON (apsw.SQLError: malformed JSON)
        return redact(text)
    # Token shapes are looked for once in the whole document (a `\\u` escape could hide
    # one); per value then only when some could be there.
    tokens = "\\u" in text or _might_hold_token(text)
    changes: list[tuple[str, str]] = []
    for path, key, value in values:
        if not isinstance(value, str) or len(value) < 4:
            continue
        if value.startswith(MARK) and _only_a_marker(value):  # redacted already
            continue
        path = str(path)
        if isinstance(key, str) and _secret_member(key) and _worth_hiding(value):
            changes.append((path, _marker("field", value)))
            continue
        if value.lstrip()[:1] in ("{", "[") and depth < 8:  # a JSON document inside a string
            cleaned = redact_json(conn, value, depth + 1)
        elif tokens or _might_hold_value(value):
            cleaned = redact(value)
        else:
            continue
        if cleaned != value:
            changes.append((path, cleaned))
    for start in range(0, len(changes), 50):
        chunk = changes[start : start + 50]
        args = ", ".join("?, ?" for _ in chunk)
        flat = [item for pair in chunk for item in pair]
        text = str(conn.execute(f"SELECT json_set(?, {args})", (text, *flat)).fetchall()[0][0])
    if not changes and not tokens:
        return text  # the whole text was looked at above: no token shape anywhere in it
    # Member names are not values: a secret used as a key is caught on the text itself. Spans
    # never include a quote or a backslash, so the document stays valid.
    return _redact_tokens(text)


# --- finding ---------------------------------------------------------------------------------


def _find(text: str, assignments: bool, decode: bool = True) -> "list[tuple[int, int, str]]":
    """Spans (start, end, kind) of secrets in `text`, possibly overlapping: the token shapes
    (core/token_spans.py) and, with `assignments`, the values named secret (below) and
    command-line options' values (core/cmdline_secrets.py); with
    `decode`, also the runs whose decoding (percent, `\\u`, base64) holds one."""
    spans: list[tuple[int, int, str]] = []
    if decode and _encodings(text):
        from . import encoded

        spans += encoded.spans(text, lambda plain: _find(plain, assignments, decode=False))
    spans += token_spans(text)
    if assignments:
        spans += _assignments(text)
        if _might_hold_option(text):
            spans += _option_values(text)
    return spans


# --- assignments -----------------------------------------------------------------------------


def _assignments(text: str, first_only: bool = False) -> "list[tuple[int, int, str]]":
    """NAME=value, NAME: "value", "name": "value", export NAME='value': the value is hidden
    when the name says secret (KEY, TOKEN, SECRET, PASS, PWD, AUTH, CREDENTIAL), or when the
    value is a long random string whatever the name (the high-entropy fallback)."""
    spans: list[tuple[int, int, str]] = []
    n = len(text)
    ends = _RunEnds(text)
    for sep in "=:":
        i = text.find(sep)
        while i >= 0:
            span = _assignment_at(text, i, sep, n, ends)
            if span is not None:
                spans.append(span)
                if first_only:
                    return spans
            i = text.find(sep, i + 1)
    return spans


class _RunEnds:
    """Where a value (or its random part) that starts at k ends, each run walked once: every
    start inside a run already walked ends where it did. Without it, text with thousands of
    `=` in one run (`a=ba=b...`, a hostile payload) took time quadratic in its length (28 s
    for 22 KB)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = (0, -1)  # (start, end) of the last value run walked
        self.b64 = (0, -1)
        self.budget = JUDGED_CHARS

    def judged(self, k: int, end: int) -> int:
        """Where the judgement of the value text[k:end] stops: the whole value while the text's
        budget of judged characters lasts (any ordinary text), then its first SHORT_JUDGEMENT
        characters (a text with thousands of values in one run: each a suffix of the last)."""
        if end - k <= self.budget:
            self.budget -= end - k
            return end
        return min(end, k + SHORT_JUDGEMENT)

    def value_end(self, k: int) -> int:
        start, end = self.value
        if not start <= k <= end:
            end = value_end(self.text, k)
            self.value = (k, end)
        return end

    def b64_end(self, k: int) -> int:
        start, end = self.b64
        if not start <= k <= end:
            end = run(self.text, k, B64)
            self.b64 = (k, end)
        return end


JUDGED_CHARS = 1 << 20  # a text's values judged whole, in all (a 256 KiB payload: 4 times over)
SHORT_JUDGEMENT = 64  # past that budget, a value is judged by its start


def _assignment_at(
    text: str, i: int, sep: str, n: int, ends: "_RunEnds | None" = None
) -> "tuple[int, int, str] | None":
    # The name: word characters right before the separator (optionally quoted, spaced).
    j = i - 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    quoted_name = j >= 0 and text[j] in "\"'"
    if quoted_name:
        j -= 1
        if j >= 0 and text[j] == "\\":
            j -= 1
    name_end = j + 1
    while j >= 0 and text[j] in NAME:
        j -= 1
    name = text[j + 1 : name_end].lstrip("-.")  # `--password=...` names `password`
    if not name or (sep == "=" and i + 1 < n and text[i + 1] == "="):
        return None
    if sep == "=" and i > 0 and text[i - 1] in "!<>=+-*/%|&^~:":
        return None  # a comparison or an augmented assignment
    if sep == ":" and i + 1 < n and text[i + 1] in "/:":
        return None  # a URL or a C++ scope
    # The value: optionally spaced, optionally quoted (\" inside JSON text).
    k = skip(text, i + 1, " \t")
    quote = ""
    if k < n and text[k] == "\\" and k + 1 < n and text[k + 1] in "\"'":
        quote = text[k + 1]
        k += 2
    elif k < n and text[k] in "\"'":
        quote = text[k]
        k += 1
    if quote:
        end = k
        while end < n and text[end] not in (quote, "\\", "\n"):
            end += 1
    else:
        end = ends.value_end(k) if ends is not None else value_end(text, k)
        called = end < n and text[end] in "(["
        if called and _looks_like_code(text[k : ends.judged(k, end) if ends else end]):
            return None  # a call or an index: code, not a value
    value = text[k : ends.judged(k, end) if ends else end]
    if not _worth_hiding(value):
        return None
    upper = name.upper()
    if any(part in upper for part in SECRET_NAME_PARTS):
        code = not quote and (sep == ":" or _looks_like_code(value))
        # `key: str`, `token = self.token`: unquoted code, unless it looks like a secret
        if code and not (has_digit(value) and len(value) >= 8) and not high_entropy(value):
            return None
        return (k, end, "assignment")
    token_end = ends.b64_end(k) if ends is not None else run(text, k, B64)
    if high_entropy(text[k : ends.judged(k, token_end) if ends else token_end]):
        return (k, token_end, "high_entropy")
    return None


def _worth_hiding(value: str) -> bool:
    return (
        len(value) >= 4
        and not _only_a_marker(value)
        and not value.startswith("$")
        and value.lower() not in NOT_SECRET_VALUES
        and not all(c == "*" or c == "x" or c == "X" for c in value)
    )


def _only_a_marker(value: str) -> bool:
    """Already redacted: the value is one marker, nothing after it. A value that only starts
    with one (a command's output after `claude-session state get`, a marker a cap cut short)
    is scanned like any other: what follows may be a secret."""
    return value.startswith(MARK) and value.find("]") == len(value) - 1


def _looks_like_code(value: str) -> bool:
    """An identifier or dotted name (`self.token`, `get_key`), not a literal."""
    if not all(c in WORD or c == "." for c in value):
        return False
    return "." in value or not has_digit(value)


# --- JSON member names -----------------------------------------------------------------------


_MEMBERS_SEEN: dict[str, bool] = {}  # payloads repeat their member names: decide each once


def _secret_member(key: str) -> bool:
    """A JSON member name that holds a secret: `password`, `apiKey`, `x-api-key`, ...; not
    `author` or `keyword` (whole words only)."""
    known = _MEMBERS_SEEN.get(key)
    if known is None:
        known = _MEMBERS_SEEN[key] = _names_a_secret(key)
    return known


def _names_a_secret(key: str) -> bool:
    words: list[str] = []
    current = ""
    for c in key:
        if c.isupper() and current and not current[-1].isupper():
            words.append(current)
            current = c.lower()
        elif c in ALNUM:
            current += c.lower()
        else:
            if current:
                words.append(current)
            current = ""
    if current:
        words.append(current)
    return any(w in SECRET_MEMBER_WORDS for w in words) or "".join(words) in ("apikey",)


# --- replacing -------------------------------------------------------------------------------


def _replace(text: str, spans: "list[tuple[int, int, str]]") -> str:
    """Replace the union of the spans, left to right; overlapping spans merge."""
    merged: list[tuple[int, int, str]] = []
    # At one start, the specific kind names the marker, not the generic assignment rules.
    for start, end, kind in sorted(spans, key=lambda s: (s[0], s[2] in GENERIC, -s[1])):
        if merged and start < merged[-1][1]:
            last_start, last_end, last_kind = merged[-1]
            merged[-1] = (last_start, max(last_end, end), last_kind)
            continue
        merged.append((start, end, kind))
    out = []
    pos = 0
    for start, end, kind in merged:
        out.append(text[pos:start])
        out.append(_marker(kind, text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _marker(kind: str, secret: str) -> str:
    """Names the kind and a short hash, so one secret seen twice can be matched."""
    from hashlib import sha256

    return f"{MARK}{kind}#{sha256(secret.encode('utf-8', 'replace')).hexdigest()[:8]}]"
