"""Memories: the one writer of `memories` and `memory_uses` (stdlib + apsw: hooks learn and
recall too).

A memory has a category (fact, learning, preference, context, skill) and a scope (global:
every project, in the user-level database; project; session). Its text is redacted before it
is stored. The same text seen again in the same scope strengthens the memory instead of adding
a second one (a fingerprint of the normalised text). Search is SQLite FTS5, ranked by bm25.

Every memory says where it came from: its source (the user's CLI, an agent through the MCP
server, learned by the hooks, imported), the session, agent, tool call and project, and whether
the writer was trusted. A global memory reaches every project's sessions, so one the user did
not add awaits the user's review (`review = 'pending'`): no session is given it and no
search finds it until `memory accept`.
"""

import apsw

from .db import rows
from .frames import content_hash
from .redact import redact

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

CATEGORIES = ("fact", "learning", "preference", "context", "skill")
SCOPES = ("global", "project", "session")
SOURCES = ("user", "agent", "learned", "import")
TEXT_CAP = 4000
COLUMNS = (
    "id, category, scope, text, tags, source, session_id, agent_id, tool_use_id, project,"
    " strength, created_at, updated_at, last_used_at, use_count, supersedes, trusted, review,"
    " imported_at, turn_no, files_inferred, outcome, outcome_at, verified_at, error_id,"
    " outcome_reason"
)
REASON_CAP = 1000  # characters of an outcome's reason
OUTCOMES = ("verified", "disproved", "hypothesis")  # what became of it; disproved: a dead end
PENDING = "pending"  # review: kept from every session and search until the user accepts it
ACCEPTED = "accepted"
REVIEWS = (PENDING, ACCEPTED)
GLOBAL_PREFIX = "g"  # a memory's label: 12 for this project's memory 12, g12 for a global one


def label(scope: str, memory_id: object) -> str:
    """The memory's id as every surface shows it and takes it back (`memory list`, the MCP
    tools, search answers): the global database's ids carry GLOBAL_PREFIX."""
    return f"{GLOBAL_PREFIX}{memory_id}" if scope == "global" else str(memory_id)


def parse_label(text: str) -> "tuple[str, int] | None":
    """(scope, id) of a label (`label`'s; "p12" is taken for 12 too), None if it is none."""
    raw = text.strip().lower()
    scope = "global" if raw.startswith(GLOBAL_PREFIX) else "project"
    digits = raw[1:] if raw.startswith((GLOBAL_PREFIX, "p")) else raw
    return (scope, int(digits)) if digits.isdigit() else None


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


def clean_reason(reason: str | None) -> str | None:
    """An outcome's reason as stored: one line, redacted whole, then capped; None if empty."""
    if reason is None:
        return None
    return redact(" ".join(reason.split()))[:REASON_CAP] or None


def tags_json(tags: "Iterable[str]") -> str:
    """A JSON array of clean tags, built by hand (no `json` import in hooks). Every writer's
    tags pass here: each is redacted whole before its cut to 40 characters (a token cut first
    would be too short for its shape, and its start stored)."""
    clean = []
    for tag in tags:
        tag = redact(" ".join(str(tag).split()))[:40]
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
    trusted: bool | None = None,
    turn_no: int | None = None,
    error_id: int | None = None,
    outcome: str | None = None,
    files_inferred: bool | None = None,
) -> "tuple[int, bool]":
    """Store a memory, or strengthen the same one: (id, True when new). `key` names what the
    memory is about when its text varies (a learning about one failing command): the same key
    strengthens the memory and its text becomes the latest.

    `trusted` says whether the writer was: None judges it, the user always, anyone else by the
    database written to (a hook's learning lands in its project's own database; a writer of a
    global memory names the project's trust itself). A global memory not from the user waits
    for the user's review; the user adding the same one accepts it."""
    if category not in CATEGORIES:
        raise MemoryProblem(f"unknown category {category!r}: use one of {', '.join(CATEGORIES)}")
    if scope not in SCOPES:
        raise MemoryProblem(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    if source not in SOURCES:
        raise MemoryProblem(f"unknown source {source!r}")
    if outcome is not None and outcome not in OUTCOMES:
        raise MemoryProblem(f"unknown outcome {outcome!r}: use one of {', '.join(OUTCOMES)}")
    text = clean_text(text)
    if not text:
        raise MemoryProblem("a memory needs some text")
    if scope == "session" and not session_id:
        raise MemoryProblem("a session memory needs its session")
    if trusted is None:
        trusted = source == "user" or _trusted_database(conn)
    found = conn.execute(
        "INSERT INTO memories (category, scope, text, tags, source, session_id, agent_id,"
        " tool_use_id, project, fingerprint, created_at, updated_at, supersedes, holder,"
        " trusted, review, turn_no, error_id, outcome, outcome_at, files_inferred)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12,"
        " CASE WHEN ?2 = 'session' THEN ?6 ELSE '' END, ?14,"
        " CASE WHEN ?2 = 'global' AND ?5 != 'user' THEN 'pending' END, ?15, ?16, ?17,"
        " CASE WHEN ?17 IS NOT NULL THEN ?11 END, ?18)"
        " ON CONFLICT (scope, holder, fingerprint) WHERE forgotten_at IS NULL"
        " DO UPDATE SET strength = strength + 1, updated_at = ?11,"
        " tool_use_id = coalesce(?8, tool_use_id), turn_no = coalesce(?15, turn_no),"
        " error_id = coalesce(?16, error_id),"
        " text = CASE WHEN ?13 THEN excluded.text ELSE text END,"
        " review = CASE WHEN review = 'pending' AND ?5 = 'user' THEN 'accepted' ELSE review END"
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
            int(trusted),
            turn_no,
            error_id,
            outcome,
            None if files_inferred is None else int(files_inferred),
        ),
    ).fetchall()
    memory_id, strength = found[0]
    return int(memory_id), strength == 1  # type: ignore[arg-type]


def _trusted_database(conn: apsw.Connection) -> bool:
    """This user made the database being written here (core/trust.py): a hook's learning in a
    clone's database is recorded as untrusted. Asked only for writers other than the user."""
    from .trust import database_problem

    path = conn.filename
    return bool(path) and database_problem(path, conn) is None


def accept(conn: apsw.Connection, memory_id: int) -> bool:
    """The user accepts a memory awaiting review: from now on it is given and found."""
    conn.execute(
        "UPDATE memories SET review = 'accepted'"
        " WHERE id = ? AND review = 'pending' AND forgotten_at IS NULL",
        (memory_id,),
    )
    return conn.changes() > 0


def set_outcome(
    conn: apsw.Connection,
    memory_id: int,
    outcome: str | None,
    now: float,
    reason: str | None = None,
) -> bool:
    """What became of a memory: verified, disproved (a dead end, never given as fact),
    hypothesis; None clears it. `reason`: why (redacted, as every text that is stored); a new
    outcome without one drops the old one's."""
    if outcome is not None and outcome not in OUTCOMES:
        raise MemoryProblem(f"unknown outcome {outcome!r}: use one of {', '.join(OUTCOMES)}")
    if reason is not None and outcome is None:
        raise MemoryProblem("a reason needs an outcome: clearing one takes none")
    said = clean_reason(reason)
    conn.execute(
        "UPDATE memories SET outcome = ?2, outcome_at = CASE WHEN ?2 IS NULL THEN NULL ELSE ?3"
        " END, outcome_reason = ?4 WHERE id = ?1 AND forgotten_at IS NULL",
        (memory_id, outcome, now, said),
    )
    return conn.changes() > 0


def mark_verified(conn: apsw.Connection, memory_id: int, now: float) -> bool:
    """A person checked the memory against today's files (their hashes are taken again)."""
    conn.execute(
        "UPDATE memories SET verified_at = ?2 WHERE id = ?1 AND forgotten_at IS NULL",
        (memory_id, now),
    )
    return conn.changes() > 0


def get(conn: apsw.Connection, memory_id: int) -> "dict[str, Any] | None":
    found = rows(
        conn, f"SELECT {COLUMNS} FROM memories WHERE id = ? AND forgotten_at IS NULL", (memory_id,)
    )
    return found[0] if found else None


def insert_restored(conn: apsw.Connection, values: "tuple[object, ...]") -> int:
    """Insert a memory `memory import` restored (core/memory_exchange.py checks the record
    and gives the values in this order); its id."""
    conn.execute(
        "INSERT INTO memories (category, scope, text, tags, source, session_id, agent_id,"
        " tool_use_id, project, holder, fingerprint, strength, created_at, updated_at,"
        " last_used_at, use_count, trusted, review, imported_at, turn_no, files_inferred,"
        " outcome, outcome_at, verified_at, outcome_reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )
    return conn.last_insert_rowid()


def link_supersedes(conn: apsw.Connection, memory_id: int, superseded: int) -> None:
    """An imported memory names the one it replaces by that one's id here, not the exporter's."""
    conn.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (superseded, memory_id))


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


def listing_where(
    category: str | None, scope: str | None, session_id: str | None, pending: bool | None
) -> "tuple[str, list[object]]":
    """The WHERE of a listing. `pending`: False, the memories in use (none awaiting review);
    True, only those awaiting it; None, both."""
    where = ["forgotten_at IS NULL"]
    params: list[object] = []
    if pending is not None:
        where.append("review IS 'pending'" if pending else "review IS NOT 'pending'")
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
    pending: bool = False,
) -> "list[dict[str, Any]]":
    """Memories, most used and strongest first: those in use, or (`pending`) only those awaiting
    for the user's review."""
    where, params = listing_where(category, scope, session_id, pending)
    return rows(
        conn,
        f"SELECT {COLUMNS} FROM memories WHERE {where}"
        " ORDER BY use_count + strength DESC, updated_at DESC LIMIT ?",
        (*params, limit),
    )


def count_listed(
    conn: apsw.Connection,
    *,
    category: str | None = None,
    scope: str | None = None,
    pending: bool = False,
) -> int:
    """How many memories `listed` would give without a limit (for a listing's "N more")."""
    where, params = listing_where(category, scope, None, pending)
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
    """The memories matching `query`, best first (bm25; text weighs more than tags); never one
    awaiting the user's review."""
    match = fts_query(query)
    if not match:
        return []
    where = ["m.forgotten_at IS NULL", "m.review IS NOT 'pending'"]
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
    used and oldest learned ones go first. Memories the user added stay. A session not ended
    keeps its session memories and the record of what it was given (else it would be given
    them again), however old: `prune --older-than 0d` never reaches into a live session."""
    conn.execute(
        "DELETE FROM memories WHERE (forgotten_at IS NOT NULL AND forgotten_at < ?1)"
        f" OR (scope = 'session' AND updated_at < ?1 AND holder NOT IN ({_NOT_ENDED}))",
        (before,),
    )
    gone = conn.changes()
    conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE source != 'user'"
        f" AND NOT (scope = 'session' AND holder IN ({_NOT_ENDED}))"
        " ORDER BY use_count + strength, coalesce(last_used_at, updated_at)"
        " LIMIT max(0, (SELECT count(*) FROM memories) - ?1))",
        (max_rows,),
    )
    gone += conn.changes()
    conn.execute(
        f"DELETE FROM memory_uses WHERE (used_at < ?1 AND session_id NOT IN ({_NOT_ENDED}))"
        " OR (scope = 'project' AND memory_id NOT IN (SELECT id FROM memories))",
        (before,),
    )
    return gone


# The sessions that have not ended (live, or gone silent without a SessionEnd): what `prune`
# leaves of theirs. The user-level database records no session: there it is none.
_NOT_ENDED = "SELECT session_id FROM sessions WHERE status != 'ended'"
