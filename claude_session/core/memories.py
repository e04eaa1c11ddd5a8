"""Memories: the one writer of `memories` and `memory_uses` (stdlib + apsw: hooks learn and
recall too).

A memory has a category (fact, learning, preference, context, skill) and a scope (global:
every project, in the user-level database; project; session). Its text is redacted before it
is stored. The same text seen again in the same scope strengthens the memory instead of adding
a second one (a fingerprint of the normalised text). Search is SQLite FTS5, ranked by bm25.
"""

import apsw

from .db import rows
from .frames import content_hash
from .redact import redact

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

CATEGORIES = ("fact", "learning", "preference", "context", "skill")
SCOPES = ("global", "project", "session")
SOURCES = ("user", "agent", "learned", "import")
TEXT_CAP = 4000
COLUMNS = (
    "id, category, scope, text, tags, source, session_id, agent_id, tool_use_id, project,"
    " strength, created_at, updated_at, last_used_at, use_count, supersedes"
)


class MemoryProblem(ValueError):
    """A memory that cannot be stored as asked (bad category, scope, empty text)."""


def fingerprint(text: str) -> str:
    """The same memory written with other spacing, case or punctuation: one fingerprint."""
    return content_hash(" ".join(_words(text)))[:32]


def _words(text: str) -> "list[str]":
    words: list[str] = []
    word: list[str] = []
    for c in text.lower():
        if c.isalnum() or c == "_":
            word.append(c)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return words


def clean_text(text: str) -> str:
    """A memory's text as stored: one line unless written on several, redacted, capped."""
    return redact(" ".join(text.split()) if "\n" not in text else text.strip())[:TEXT_CAP]


def tags_json(tags: "Iterable[str]") -> str:
    """A JSON array of clean tags, built by hand (no `json` import in hooks)."""
    clean = []
    for tag in tags:
        tag = " ".join(str(tag).split())[:40]
        if tag and tag not in clean:
            clean.append(tag)
    quoted = ['"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in clean[:20]]
    return "[" + ",".join(quoted) + "]"


def add(
    conn: apsw.Connection,
    text: str,
    category: str,
    scope: str,
    now: float,
    *,
    tags: "Iterable[str]" = (),
    source: str = "user",
    session_id: str | None = None,
    agent_id: str | None = None,
    tool_use_id: str | None = None,
    project: str | None = None,
    supersedes: int | None = None,
    key: str | None = None,
) -> "tuple[int, bool]":
    """Store a memory, or strengthen the same one: (id, True when new). `key` names what the
    memory is about when its text varies (a learning about one failing command): the same key
    strengthens the memory and its text becomes the latest."""
    if category not in CATEGORIES:
        raise MemoryProblem(f"unknown category {category!r}: use one of {', '.join(CATEGORIES)}")
    if scope not in SCOPES:
        raise MemoryProblem(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    if source not in SOURCES:
        raise MemoryProblem(f"unknown source {source!r}")
    text = clean_text(text)
    if not text:
        raise MemoryProblem("a memory needs some text")
    if scope == "session" and not session_id:
        raise MemoryProblem("a session memory needs its session")
    found = conn.execute(
        "INSERT INTO memories (category, scope, text, tags, source, session_id, agent_id,"
        " tool_use_id, project, fingerprint, created_at, updated_at, supersedes, holder)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12,"
        " CASE WHEN ?2 = 'session' THEN ?6 ELSE '' END)"
        " ON CONFLICT (scope, holder, fingerprint) WHERE forgotten_at IS NULL"
        " DO UPDATE SET strength = strength + 1, updated_at = ?11,"
        " tool_use_id = coalesce(?8, tool_use_id),"
        " text = CASE WHEN ?13 THEN excluded.text ELSE text END"
        " RETURNING id, strength",
        (
            category,
            scope,
            text,
            tags_json(tags),
            source,
            session_id,
            agent_id,
            tool_use_id,
            project,
            fingerprint(key or text),
            now,
            supersedes,
            key is not None,
        ),
    ).fetchall()
    memory_id, strength = found[0]
    return int(memory_id), strength == 1  # type: ignore[arg-type]


def get(conn: apsw.Connection, memory_id: int) -> "dict[str, Any] | None":
    found = rows(
        conn, f"SELECT {COLUMNS} FROM memories WHERE id = ? AND forgotten_at IS NULL", (memory_id,)
    )
    return found[0] if found else None


# What `memory export` writes of each memory and `memory import` puts back. `id` and
# `supersedes` name memories of the exporting database (an import links a memory to the one it
# supersedes when both are in the file); `fingerprint` keeps a keyed memory (a learning about one
# failing command) strengthened by its next occurrence instead of duplicated.
EXPORTED = (
    "id",
    "category",
    "scope",
    "text",
    "tags",
    "source",
    "session_id",
    "agent_id",
    "tool_use_id",
    "project",
    "strength",
    "use_count",
    "created_at",
    "updated_at",
    "last_used_at",
    "supersedes",
    "fingerprint",
)
PROVENANCE = ("session_id", "agent_id", "tool_use_id", "project")
NAME_CAP = 4096  # a session, agent or tool call id, or a project's path


def exportable(conn: apsw.Connection, scope: str | None = None) -> "list[dict[str, Any]]":
    """Every live memory with all that restoring it elsewhere needs, oldest first."""
    where, params = _listing(None, scope, None)
    return rows(
        conn,
        f"SELECT {COLUMNS}, fingerprint FROM memories WHERE {where} ORDER BY id",
        params,
    )


def restore(
    conn: apsw.Connection, record: "Mapping[str, object]", now: float
) -> "tuple[int, bool]":
    """Put an exported memory back as it was (source, session, strength, use count, times), or
    find it already here: (id, True when added).

    Unlike `add`, a memory already here (same scope and session, and the same fingerprint or
    text) is left as it is, not strengthened, so importing a file twice changes nothing. Text
    and tags are redacted as `add` redacts. A session memory keeps its session id even when
    this database never saw that session: the id is a plain column (no session row is made
    up), and the memory reaches that session if it ever runs here (a resumed session keeps its
    id). A bad record raises MemoryProblem saying why, and nothing is written for it."""
    category = _one_of(record, "category", CATEGORIES, None)
    scope = _one_of(record, "scope", SCOPES, None)
    source = _one_of(record, "source", SOURCES, "import")
    raw = record.get("text")
    if raw is not None and not isinstance(raw, str):
        raise MemoryProblem(f"text must be a string, not {type(raw).__name__}")
    text = clean_text(raw or "")
    if not text:
        raise MemoryProblem("a memory needs some text")
    tags = record.get("tags")
    if tags is not None and (
        not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)
    ):
        raise MemoryProblem("tags must be a list of strings")
    names = {name: _name(record, name) for name in PROVENANCE}
    if scope == "session" and not names["session_id"]:
        raise MemoryProblem("a session memory needs its session_id")
    strength = _count(record, "strength", 1)
    use_count = _count(record, "use_count", 0)
    created = _time(record, "created_at")
    created = now if created is None else created
    updated = _time(record, "updated_at")
    own = fingerprint(text)
    given = record.get("fingerprint")
    if given is not None and not (
        isinstance(given, str) and len(given) == 32 and set(given) <= set("0123456789abcdef")
    ):
        raise MemoryProblem("fingerprint must be 32 lowercase hexadecimal digits")
    holder = names["session_id"] if scope == "session" else ""
    found = conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND holder = ? AND forgotten_at IS NULL"
        " AND fingerprint IN (?, ?) LIMIT 1",
        (scope, holder, given or own, own),
    ).fetchall()
    if found:
        return int(found[0][0]), False  # type: ignore[arg-type]
    conn.execute(
        "INSERT INTO memories (category, scope, text, tags, source, session_id, agent_id,"
        " tool_use_id, project, holder, fingerprint, strength, created_at, updated_at,"
        " last_used_at, use_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            category,
            scope,
            text,
            tags_json(redact(t) for t in tags or ()),
            source,
            names["session_id"],
            names["agent_id"],
            names["tool_use_id"],
            names["project"],
            holder,
            given or own,
            strength,
            created,
            created if updated is None else updated,
            _time(record, "last_used_at"),
            use_count,
        ),
    )
    return conn.last_insert_rowid(), True


def link_supersedes(conn: apsw.Connection, memory_id: int, superseded: int) -> None:
    """An imported memory names the one it replaces by that one's id here, not the exporter's."""
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (superseded, memory_id))


def _one_of(
    record: "Mapping[str, object]", field: str, allowed: "tuple[str, ...]", default: str | None
) -> str:
    value = record.get(field)
    if value is None and default is not None:
        return default
    if value is None:
        raise MemoryProblem(f"no {field}: use one of {', '.join(allowed)}")
    if value not in allowed:
        raise MemoryProblem(f"unknown {field} {_shown(value)}: use one of {', '.join(allowed)}")
    return str(value)


def _name(record: "Mapping[str, object]", field: str) -> str | None:
    value = record.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MemoryProblem(f"{field} must be a string, not {type(value).__name__}")
    if len(value) > NAME_CAP:
        raise MemoryProblem(f"{field} is longer than {NAME_CAP} characters")
    return value


def _count(record: "Mapping[str, object]", field: str, lowest: int) -> int:
    value = record.get(field)
    if value is None:
        return lowest
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise MemoryProblem(f"{field} must be a whole number from {lowest} up, not {_shown(value)}")
    return value


def _time(record: "Mapping[str, object]", field: str) -> float | None:
    value = record.get(field)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value < 1e12  # also NaN (never in range) and infinity
    ):
        raise MemoryProblem(f"{field} must be Unix seconds, not {_shown(value)}")
    return float(value)


def _shown(value: object) -> str:
    """A wrong value in a message, short (an import file may hold anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def edit(
    conn: apsw.Connection,
    memory_id: int,
    now: float,
    *,
    text: str | None = None,
    category: str | None = None,
    tags: "Iterable[str] | None" = None,
) -> bool:
    if category is not None and category not in CATEGORIES:
        raise MemoryProblem(f"unknown category {category!r}: use one of {', '.join(CATEGORIES)}")
    new_text = redact(text.strip())[:TEXT_CAP] if text is not None else None
    conn.execute(
        "UPDATE memories SET text = coalesce(?2, text), category = coalesce(?3, category),"
        " tags = coalesce(?4, tags), fingerprint = coalesce(?5, fingerprint), updated_at = ?6"
        " WHERE id = ?1 AND forgotten_at IS NULL",
        (
            memory_id,
            new_text,
            category,
            tags_json(tags) if tags is not None else None,
            fingerprint(new_text) if new_text else None,
            now,
        ),
    )
    return conn.changes() > 0


def forget(conn: apsw.Connection, memory_id: int, now: float) -> bool:
    conn.execute(
        "UPDATE memories SET forgotten_at = ?2 WHERE id = ?1 AND forgotten_at IS NULL",
        (memory_id, now),
    )
    return conn.changes() > 0


def _listing(
    category: str | None, scope: str | None, session_id: str | None
) -> "tuple[str, list[object]]":
    where = ["forgotten_at IS NULL"]
    params: list[object] = []
    if category:
        where.append("category = ?")
        params.append(category)
    if scope:
        where.append("scope = ?")
        params.append(scope)
    if session_id:
        where.append("(scope != 'session' OR session_id = ?)")
        params.append(session_id)
    return " AND ".join(where), params


def listed(
    conn: apsw.Connection,
    *,
    category: str | None = None,
    scope: str | None = None,
    session_id: str | None = None,
    limit: int = 200,
) -> "list[dict[str, Any]]":
    """Memories, most used and strongest first."""
    where, params = _listing(category, scope, session_id)
    return rows(
        conn,
        f"SELECT {COLUMNS} FROM memories WHERE {where}"
        " ORDER BY use_count + strength DESC, updated_at DESC LIMIT ?",
        (*params, limit),
    )


def count_listed(
    conn: apsw.Connection, *, category: str | None = None, scope: str | None = None
) -> int:
    """How many memories `listed` would give without a limit (for a listing's "N more")."""
    where, params = _listing(category, scope, None)
    found = conn.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchall()
    return int(found[0][0]) if isinstance(found[0][0], int) else 0


def fts_query(text: str) -> str:
    """A safe FTS5 query from any text: its words, each quoted, OR-ed (ranked by bm25)."""
    # The longest words first (the most telling, and an OR of fewer terms is faster).
    kept = [w for w in dict.fromkeys(_words(text)) if len(w) > 2 and w not in STOPWORDS]
    kept = sorted(kept, key=len, reverse=True)[:10]
    return " OR ".join(f'"{w}"' for w in kept)


STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "have",
        "has",
        "was",
        "were",
        "are",
        "you",
        "your",
        "our",
        "not",
        "but",
        "can",
        "will",
        "what",
        "when",
        "where",
        "which",
        "who",
        "how",
        "why",
        "all",
        "any",
        "use",
        "using",
        "then",
        "than",
        "there",
        "their",
        "them",
        "they",
        "its",
        "also",
        "just",
        "like",
        "make",
        "made",
        "does",
        "did",
        "doing",
        "done",
        "please",
        "about",
        "should",
        "would",
        "could",
    ]
)


def search(
    conn: apsw.Connection,
    query: str,
    *,
    limit: int = 10,
    categories: "Iterable[str] | None" = None,
    session_id: str | None = None,
) -> "list[dict[str, Any]]":
    """The memories matching `query`, best first (bm25; text weighs more than tags)."""
    match = fts_query(query)
    if not match:
        return []
    where = ["m.forgotten_at IS NULL"]
    params: list[object] = [match]
    if categories:
        chosen = list(categories)
        where.append(f"m.category IN ({', '.join('?' for _ in chosen)})")
        params += chosen
    if session_id is not None:
        where.append("(m.scope != 'session' OR m.session_id = ?)")
        params.append(session_id)
    return rows(
        conn,
        f"SELECT {', '.join('m.' + c.strip() for c in COLUMNS.split(','))},"
        " bm25(memories_fts, 1.0, 0.5) AS rank FROM memories_fts"
        " JOIN memories m ON m.id = memories_fts.rowid"
        f" WHERE memories_fts MATCH ? AND {' AND '.join(where)}"
        " ORDER BY rank LIMIT ?",
        (*params, limit),
    )


def given(conn: apsw.Connection, session_id: str) -> "set[tuple[str, int]]":
    """(scope, id) of every memory this session already received."""
    return {
        (str(scope), int(memory_id))
        for scope, memory_id in conn.execute(
            "SELECT scope, memory_id FROM memory_uses WHERE session_id = ?", (session_id,)
        )
    }


def mark_given(
    conn: apsw.Connection,
    used: "Iterable[tuple[str, int]]",
    session_id: str,
    how: str,
    now: float,
) -> None:
    """Record that the session received these memories (kept in the project's database)."""
    for scope, memory_id in used:
        conn.execute(
            "INSERT INTO memory_uses (memory_id, scope, session_id, used_at, how)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (memory_id, "global" if scope == "global" else "project", session_id, now, how),
        )


def count_use(conn: apsw.Connection, ids: "Iterable[int]", now: float) -> None:
    """Used memories are counted (in the database that holds them)."""
    for memory_id in ids:
        conn.execute(
            "UPDATE memories SET use_count = use_count + 1, last_used_at = ? WHERE id = ?",
            (now, memory_id),
        )


def prune(conn: apsw.Connection, before: float, max_rows: int) -> int:
    """Forgotten memories and session memories of long ago go; past `max_rows`, the least
    used and oldest learned ones go first. Memories the user added stay."""
    conn.execute(
        "DELETE FROM memories WHERE (forgotten_at IS NOT NULL AND forgotten_at < ?1)"
        " OR (scope = 'session' AND updated_at < ?1)",
        (before,),
    )
    gone = conn.changes()
    conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE source != 'user'"
        " ORDER BY use_count + strength, coalesce(last_used_at, updated_at)"
        " LIMIT max(0, (SELECT count(*) FROM memories) - ?1))",
        (max_rows,),
    )
    gone += conn.changes()
    conn.execute(
        "DELETE FROM memory_uses WHERE used_at < ?1 OR (scope = 'project'"
        " AND memory_id NOT IN (SELECT id FROM memories))",
        (before,),
    )
    return gone
