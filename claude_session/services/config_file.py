"""The configuration file, `.claude-session.json`: loading, setting, writing and trusting it,
for the CLI, the daemon and doctor. Its keys, defaults and one validation are core/config.py
(`core.config.validate`, which the hooks use too), so every reader agrees on every value."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import apsw

from ..core import trust
from ..core.config import check, config_path, read_text, untrusted, validate


class ConfigError(ValueError):
    """The file cannot be used as it is: one line that says why."""


class Loaded:
    """The effective values, the problems found, and what the file itself says."""

    def __init__(
        self, path: str, values: dict[str, object], problems: list[str], written: dict[str, Any]
    ) -> None:
        self.path = path
        self.values = values
        self.problems = problems
        self.written = written
        self.warnings: list[str] = []  # what was written but should not have been as it is


def load(root: str) -> Loaded:
    """The configuration; defaults when there is no file; ConfigError when it is not a JSON
    object at all (invalid values are `problems`, and keep their defaults)."""
    path = config_path(root)
    text = read_text(root)
    if text is None:
        if os.path.islink(path):
            raise ConfigError(f"{path} is a symbolic link; refusing to read it")
        if os.path.lexists(path):
            raise ConfigError(f"{path} is not a readable file")
        return Loaded(path, validate({})[0], [], {})
    try:
        written = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(written, dict):
        raise ConfigError(f"{path}: not a JSON object")
    values, problems = validate(written)
    why = untrusted(root, text)
    if why:  # not in effect anywhere until the user trusts it
        return Loaded(path, validate({})[0], [f"untrusted: {why}", *problems], written)
    return Loaded(path, values, problems, written)


def shown(value: object) -> object:
    """A value as people write it: counts and whole minutes as integers (15, not the 15.0
    validation makes of every number), a real fraction as it is (0.5)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def load_or_defaults(root: str) -> Loaded:
    """For work that must go on whatever the file says (the daemon, `fail`): the defaults when
    the file is unusable, with the reason as the one problem."""
    try:
        return load(root)
    except ConfigError as exc:
        return Loaded(config_path(root), validate({})[0], [str(exc)], {})


def parse_assignment(assignment: str) -> tuple[str, object]:
    """KEY=VALUE, the value as JSON when it is JSON (`true`, `5`, `"x"`), else as text."""
    key, sep, text = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"{assignment!r}: write KEY=VALUE")
    try:
        value: object = json.loads(text)
    except ValueError:
        value = text
    return key, value


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")  # RFC 3986's scheme: no `:`, no `@`


def safe_url(url: str) -> str:
    """`url` with nothing in it that authenticates, to send, store or print: the userinfo
    (`user:token@`) dropped whatever it holds, the query and the fragment dropped (tokens
    ride there). A password may hold `/`, `@`, `:` or `%`, so the userinfo is all up to the
    last `@` before the query (a path holding `@` loses its start: better than a token
    kept); what is left is parsed. An `@` only after a `?` or `#` cannot be told apart (a
    password holding `?`, or a query holding `@`): nothing after the scheme is kept. A git
    remote's scp-like form (`user@host:path`) too."""
    from urllib.parse import urlsplit

    scheme, sep, rest = url.strip().partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):  # scp-like (its password may hold `://`)
        return url.strip().rpartition("@")[2]
    cut = min((rest.find(mark) for mark in "?#" if mark in rest), default=len(rest))
    rest, tail = rest[:cut], rest[cut:]
    if "@" in rest:
        rest = rest.rpartition("@")[2]
    elif "@" in tail:
        return f"{scheme}://"
    try:
        parts = urlsplit(f"{scheme}://{rest}")
    except ValueError:  # an unparseable authority (a stray `[`): nothing of it is shown
        return f"{scheme}://"
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def shown_setting(key: str, value: object) -> object:
    """A value as `config` prints it: the endpoint without credentials, a header's literal
    value hidden (a `${NAME}` reference is shown: it is not the secret)."""
    if key == "otel_endpoint" and isinstance(value, str) and value:
        return safe_url(value)
    if key == "otel_headers" and isinstance(value, str) and value:
        pairs = []
        for pair in value.split(","):
            name, sep, said = pair.partition("=")
            hidden = sep and not _a_reference(said)
            pairs.append(f"{name}=[REDACTED]" if hidden else pair)
        return ",".join(pairs)
    return shown(value)


def _a_reference(value: str) -> bool:
    """Whether a header value names its secret (`${NAME}`, or text around it such as
    `Bearer ${TOKEN}`) rather than holding it, or is empty."""
    text = value.strip()
    if not text:
        return True
    while "${" in text:
        before, _, after = text.partition("${")
        name, closed, text = after.partition("}")
        if not closed or not name.replace("_", "a").isalnum():
            return False
        text = before + " " + text
    return text.strip() in ("", "Bearer", "Basic", "Token", "Api-Key", "ApiKey")


def credential_warnings(key: str, value: object) -> list[str]:
    """What a value writes into `.claude-session.json` that authenticates: a literal header
    value (suggesting `${NAME}`, taken from the environment when sent), or an endpoint's
    `user:password@`. The file is often committed or shared; the value is kept (the user
    asked for it), and said."""
    out = []
    if key == "otel_headers" and isinstance(value, str):
        for pair in value.split(","):
            name, sep, said = pair.partition("=")
            if sep and not _a_reference(said):
                out.append(
                    f"otel_headers: {name.strip()} holds a literal value, written into the"
                    f" file as it is; write {name.strip()}=${{NAME}} and set NAME in the"
                    " environment instead (see docs/guides/opentelemetry.md)"
                )
    if key == "otel_endpoint" and isinstance(value, str) and safe_url(value) != value.strip():
        out.append(
            "otel_endpoint: credentials in the URL (user:password@, a query) are written into"
            f" the file as they are; set {safe_url(value)} and put them in otel_headers as"
            " ${NAME}"
        )
    return out


def set_values(root: str, assignments: list[str]) -> Loaded:
    """Apply KEY=VALUE assignments: every one is checked first, then the file is replaced
    atomically. Nothing is written when any assignment is invalid."""
    current = load(root)
    if current.problems and current.problems[0].startswith("untrusted: "):
        raise ConfigError(
            f"not changed: {current.path} is not trusted; read it, then `claude-session trust`"
        )
    updated = dict(current.written)
    warnings: list[str] = []
    for assignment in assignments:
        key, value = parse_assignment(assignment)
        problem = check(key, value)
        if problem:
            raise ConfigError(f"not changed: {key}: {problem}")
        updated[key] = value
        warnings += credential_warnings(key, value)
    write(root, updated)
    text = read_text(root)
    if text is not None:
        trust.record_config(config_path(root), text)  # written by this user, through us
    loaded = load(root)
    loaded.warnings = warnings
    return loaded


def write(root: str, values: dict[str, Any]) -> None:
    path = config_path(root)
    if os.path.islink(path):
        raise ConfigError(f"{path} is a symbolic link; refusing to replace it")
    tmp = f"{path}.{os.getpid()}.tmp"
    # 0600: it may hold a header's secret. A new file replaces the old, so an older, wider
    # one is tightened the first time we write it.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (json.dumps(values, indent=2) + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def trust_state(root: str) -> dict[str, str | None]:
    """Whether the project's database and configuration are trusted, and why not."""
    from ..core.paths import db_path

    text = read_text(root)
    return {
        "database": trust.database_problem(db_path(root)),
        "configuration": untrusted(root, text) if text is not None else None,
    }


ADOPTED_COUNTS = {  # what `trust` would put before the model, table by table
    "sessions": "SELECT count(*) FROM sessions",
    "memories": "SELECT count(*) FROM memories",
    "open errors": "SELECT count(*) FROM error_log WHERE resolved_at IS NULL",
    "failed approaches": "SELECT count(*) FROM failed_paths",
    "project state keys": "SELECT count(*) FROM project_state",
    "fork records": "SELECT count(*) FROM branches",
}


def adoption(root: str) -> dict[str, Any]:
    """What `trust` would adopt, before it does: for each file not trusted now, why not and
    what it holds (the database's rows that would reach the model; the configuration's
    settings, the commands it would have us run among them)."""
    from ..core import db
    from ..core.paths import db_path

    state = trust_state(root)
    found: dict[str, Any] = {}
    path = db_path(root)
    if state["database"] is not None:
        counts: dict[str, int | None] = {}
        try:
            conn = db.connect(path, readonly=True, create=False, migrate=False)
        except db.DatabaseError:
            conn = None
        for name, sql in ADOPTED_COUNTS.items():
            try:
                counts[name] = db.as_int(conn.execute(sql).fetchall()[0][0]) if conn else None
            except apsw.Error:  # an earlier or foreign schema: not counted
                counts[name] = None
        if conn is not None:
            conn.close()
        found["database"] = {"path": path, "why": state["database"], "holds": counts}
    text = read_text(root)
    if text is not None and state["configuration"] is not None:
        try:
            values = json.loads(text)
        except ValueError:
            values = None
        settings = (
            {k: shown_setting(k, v) for k, v in values.items()} if isinstance(values, dict) else {}
        )
        found["configuration"] = {
            "path": config_path(root),
            "why": state["configuration"],
            "settings": settings,
        }
    return found


def trust_project(root: str) -> list[str]:
    """The user vouches for the project's database and configuration as they are now."""
    from ..core.paths import db_path

    done = []
    path = db_path(root)
    if os.path.exists(path) and not os.path.islink(path):
        from ..core import db

        conn = db.connect(path, create=False)  # an earlier version's: migrated, so it has an id
        try:
            if trust.record_database(path, conn):
                done.append(path)
        finally:
            conn.close()
    text = read_text(root)
    if text is not None:
        trust.record_config(config_path(root), text)
        done.append(config_path(root))
    return done


def revoke(root: str) -> int:
    from ..core.paths import db_path

    return trust.forget([db_path(root), config_path(root)])
