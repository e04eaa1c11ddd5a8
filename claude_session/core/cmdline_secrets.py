"""Credentials given as values on a command line: `--password VALUE`, `--token=VALUE`,
`-storepass VALUE`, `sshpass -p VALUE`, mysql's glued `-pVALUE`, `aws configure set
aws_secret_access_key VALUE`.

Part of redaction (core/redact.py calls `spans`): the value is a secret because of the option
that names it, not because of its shape, so a short word such as `letmein` is hidden too. To
keep ordinary commands as they are, an option counts only when its last word names a secret
(`--token`, `--api-key`; not `--token-file`, `--password-stdin`, `--no-password`, `--max-token`),
and `-p` only where it means a password: glued to its value after mysql and its kin (mysql's
`-p db` prompts and names a database; `ssh -p 22`, `mkdir -p`, `git push -p`, `docker run
-p8080:80` are no credentials), and `-p VALUE` or `-pVALUE` among sshpass's own options. A
variable reference (`$PASS`, `${TOKEN}`, `"$(pass show x)"`) is not a secret: it names one.
Plain string search, no `re` (see core/redact.py).
"""

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # keeps length
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_OPTION = _ALNUM | frozenset("_-")
_NAME = _OPTION | frozenset(".")
# What ends an unquoted value (core/token_shapes.py's VALUE_END) and what separates two commands.
_VALUE_END = frozenset(" \t\r\n\"'\\,;&(){}[]<>`|")
_COMMAND_END = frozenset("\n;|&(`")
_QUOTES = "\"'"

# The last word of an option that takes a secret as its value (`--db-password`, `-storepass`).
_SECRET_OPTION_WORDS = frozenset(
    (
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "token",
        "secret",
        "apikey",
        "storepass",  # keytool
        "keypass",
        "srcstorepass",
        "deststorepass",
        "srckeypass",
        "destkeypass",
        "passin",  # openssl
        "passout",
    )
)
# `--X-key VALUE` is a secret for these X (not `--key path`, `--sort-key name`).
_KEY_QUALIFIERS = frozenset(("api", "secret", "access", "auth", "client", "account", "master"))
# An option starting with one of these words is a switch or a limit, not a credential.
_NOT_CREDENTIAL_FIRST = frozenset(
    (
        *("no", "ask", "prompt", "show", "print", "require", "skip", "allow", "disable"),
        *("enable", "use", "with", "without", "max", "min", "num", "save", "store", "forget"),
    )
)
# The words of the options, searched for first: far fewer than the dashes of a text (and what
# core/redact.py's `_might_hold_option` looks for before importing this module).
_OPTION_WORDS = ("pass", "pwd", "token", "secret", "key")
# Commands whose `-pVALUE` (glued) is the password.
_GLUED_P = frozenset(
    (
        "mysql",
        "mysqldump",
        "mysqladmin",
        "mysqlimport",
        "mysqlcheck",
        "mysqlshow",
        "mysqlpump",
        "mysqlslap",
        "mysqlbinlog",
        "mariadb",
        "mariadb-dump",
        "mariadb-admin",
        "mariadb-import",
        "mariadb-check",
        "mariadb-show",
        "mariadb-slap",
        "mariadb-binlog",
    )
)
# Placeholders in usage text (`--password PASSWORD`, `--token <value>`) and the words of prose
# that follow an option named in a sentence ("pass --token explicitly when it is set"): kept.
_PLACEHOLDERS = frozenset(
    (
        *("value", "values", "option", "options", "flag", "flags", "argument", "arguments"),
        *("parameter", "parameters", "string", "switch", "here", "there", "instead", "also"),
        *("only", "when", "where", "which", "while", "that", "this", "then", "than", "with"),
        *("without", "from", "into", "must", "should", "will", "works", "support", "usage"),
        *("handling", "explicitly", "again", "first", "every", "each", "both", "like", "once"),
    )
)
_NOT_SECRET_VALUES = frozenset(("true", "false", "null", "none", "undefined", "yes", "no"))


def spans(text: str, kind: str = "command_credential") -> "list[tuple[int, int, str]]":
    """(start, end, kind) of each credential given as an option's value in `text`."""
    found: list[tuple[int, int, str]] = []
    if "-" in text:
        found += _secret_options(text, kind)
        if "-p" in text:
            found += _glued_p(text, kind)
    if "sshpass" in text:
        found += _sshpass(text, kind)
    if "configure set" in text:
        found += _configure_set(text, kind)
    return found


def _secret_options(text: str, kind: str) -> "list[tuple[int, int, str]]":
    """`--NAME VALUE`, `--NAME=VALUE`, `-NAME VALUE` where NAME names a secret."""
    out = []
    seen = set()
    for word in _OPTION_WORDS:
        i = text.find(word)
        while i >= 0:
            # Each run of option characters is walked once (the search goes on past it), and
            # so is each value taken: a long hostile text costs a few passes, not one a hit.
            start = i
            while start > 0 and text[start - 1] in _OPTION:
                start -= 1
            end = i + len(word)
            while end < len(text) and text[end] in _OPTION:
                end += 1
            i = text.find(word, end)
            if start in seen or not text.startswith("-", start):
                continue
            seen.add(start)
            if start > 0 and text[start - 1] not in " \t\r\n\"'(=[{,":
                continue  # inside a word (`a-token`), not an option
            name = text[start:end].lstrip("-")
            if end - start - len(name) > 2 or not _secret_option(name):
                continue
            value = _value_after(text, end, allow_equals=True)
            if value is not None:
                out.append((*value, kind))
                i = text.find(word, value[1])
    return out


def _secret_option(name: str) -> bool:
    words = [w for w in name.translate(_LOWER).replace("_", "-").split("-") if w]
    if not words or words[0] in _NOT_CREDENTIAL_FIRST:
        return False
    last = words[-1]
    if last in _SECRET_OPTION_WORDS:
        return True
    return last == "key" and len(words) >= 2 and words[-2] in _KEY_QUALIFIERS


def _value_after(text: str, i: int, allow_equals: bool) -> "tuple[int, int] | None":
    """The span of the option's value that starts at i (after `=` or blanks), when it may be a
    secret: not another option, not a variable reference, not a placeholder."""
    n = len(text)
    if allow_equals and i < n and text[i] == "=":
        i += 1
    elif i < n and text[i] in " \t":
        while i < n and text[i] in " \t":
            i += 1
    else:
        return None
    return _value_at(text, i)


def _value_at(text: str, i: int) -> "tuple[int, int] | None":
    n = len(text)
    quote = ""
    if i + 1 < n and text[i] == "\\" and text[i + 1] in _QUOTES:  # \" inside JSON text
        quote = text[i + 1]
        i += 2
    elif i < n and text[i] in _QUOTES:
        quote = text[i]
        i += 1
    if i < n and (text[i] in "-$%" or text.startswith("[REDACTED:", i)):
        return None  # an option, a variable or a marker: known before reading it all
    end = i
    if quote:
        while end < n and text[end] not in (quote, "\\", "\n"):
            end += 1
    else:
        while end < n and text[end] not in _VALUE_END:
            end += 1
    value = text[i:end]
    if not _worth_hiding(value):
        return None
    return (i, end)


def _worth_hiding(value: str) -> bool:
    if len(value) < 4 or value[0] in "-$%" or value.startswith("[REDACTED:"):
        return False  # too short, an option, a variable (`$X`, `%X%`) or already a marker
    plain = value.translate(_LOWER).strip("<>[]{}").rstrip(".,:!?").replace("_", "")
    plain = plain.replace("-", "")
    if plain in _NOT_SECRET_VALUES or plain in _PLACEHOLDERS or plain in _SECRET_OPTION_WORDS:
        return False
    if plain.endswith(("password", "token", "secret", "apikey")) and value.upper() == value:
        return False  # `--token API_TOKEN`: a placeholder in usage text
    return not all(c in "*xX." for c in value)


def _names_a_glued_p_command(words: str) -> bool:
    """Whether one of these words runs mysql or its kin: the end of each word after a path, a
    quote or an `=` (`/usr/bin/mysql`, `"mysql`, `X=mysql`)."""
    for word in words.split():
        j = len(word)
        while j > 0 and (word[j - 1] in _NAME or word[j - 1] == "/"):
            j -= 1
        if word[j:].rsplit("/", 1)[-1] in _GLUED_P:
            return True
    return False


def _glued_p(text: str, kind: str) -> "list[tuple[int, int, str]]":
    """`-pVALUE` after mysql, mariadb and their tools, in the same command: their password."""
    out: list[tuple[int, int, str]] = []
    if "mysql" not in text and "mariadb" not in text:
        return out
    # One pass: the text between two hits is read once, to see whether a command ends in it
    # (`;`, `|`, `&`, a new line...) and whether mysql is named since the command began.
    looked = 0
    named = False
    i = text.find("-p")
    while i >= 0:
        piece = text[looked:i]
        cut = max(piece.rfind(c) for c in _COMMAND_END)
        if cut >= 0:
            named = False
            piece = piece[cut + 1 :]
        named = named or _names_a_glued_p_command(piece)
        looked = i
        j = i + 2
        option = i == 0 or text[i - 1] in " \t\"'"
        if named and option and j < len(text) and text[j] not in " \t\r\n=-":
            value = _value_at(text, j)
            if value is not None and not _port_mapping(text[value[0] : value[1]]):
                out.append((*value, kind))
                j = looked = value[1]
        i = text.find("-p", j)
    return out


def _port_mapping(value: str) -> bool:
    """`3306:3306` (`docker run --name mysql -p3306:3306`): ports, not a password."""
    return ":" in value and all(c in "0123456789:." for c in value)


def _sshpass(text: str, kind: str) -> "list[tuple[int, int, str]]":
    """`sshpass -p VALUE` or `-pVALUE`: read sshpass's own options, up to the command it runs
    (whose `-p`, such as ssh's port, is not a password)."""
    out = []
    i = text.find("sshpass")
    while i >= 0:
        at = i + len("sshpass")
        while True:
            while at < len(text) and text[at] in " \t":
                at += 1
            if not text.startswith("-", at):
                break  # the command sshpass runs
            end = at
            while end < len(text) and text[end] not in _VALUE_END:
                end += 1
            option = text[at:end]
            if option == "-p":
                quoted = end < len(text) and text[end] in _QUOTES  # -p'secret'
                value = _value_at(text, end) if quoted else _value_after(text, end, False)
                if value is not None:
                    out.append((*value, kind))
                break
            if option.startswith("-p"):
                value = _value_at(text, at + 2)
                if value is not None:
                    out.append((*value, kind))
                break
            at = end
            if option in ("-f", "-d", "-P"):  # an option with a value of its own
                while at < len(text) and text[at] in " \t":
                    at += 1
                while at < len(text) and text[at] not in _VALUE_END:
                    at += 1
        i = text.find("sshpass", at)  # on from what was read: each option is read once
    return out


def _configure_set(text: str, kind: str) -> "list[tuple[int, int, str]]":
    """`aws configure set [--profile p] aws_secret_access_key VALUE` (any NAME that names a
    secret: KEY, TOKEN, SECRET, PASS...; `profile.x.aws_session_token` too)."""
    out = []
    i = text.find("configure set")
    while i >= 0:
        at = i + len("configure set")
        i = text.find("configure set", at)
        words = text[at : at + 1024].split(None, 6)[:6]  # a window: never the whole tail
        k = 0
        while k < len(words) and words[k].startswith("--"):
            k += 1 if "=" in words[k] else 2  # `--profile p`, `--profile=p`
        if k >= len(words):
            continue
        name = words[k].rsplit(".", 1)[-1].upper()
        if not any(part in name for part in ("KEY", "TOKEN", "SECRET", "PASS")):
            continue
        name_at = text.find(words[k], at)
        value = _value_after(text, name_at + len(words[k]), allow_equals=False)
        if value is not None:
            out.append((*value, kind))
    return out
