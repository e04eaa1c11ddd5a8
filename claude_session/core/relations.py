"""Who runs beside whom: the agent tree, and when two agents holding one file conflict.

Two agents conflict on a file only when both can change it at the same time:
- an ancestor (the parent, or its parent) and its descendant conflict only when the ancestor
  changed the file after it launched the branch the descendant is on, and did not wait for it
  (a background launch): what a parent did to a file before it handed the file to a child is
  delegation, and a parent waiting for a foreground child changes nothing meanwhile;
- a descendant the acting agent launched in the background and that still holds the file
  conflicts with it (a foreground one has finished by the time its parent acts again);
- siblings, other agents of the session and other sessions' agents conflict whenever both
  hold the file live.
A holder counts only while it is running and its Claude Code process is alive (core/liveness).
Reads only; standard library and apsw.
"""

import apsw

from .db import rows
from .liveness import process_columns, row_gone
from .registry import MAIN, registry_id

TYPE_CHECKING = False  # `typing` costs ~3 ms per hook process; only checkers need it
if TYPE_CHECKING:
    from typing import Any

    # (registry id, when it was launched, background) from the agent up to its session's main
    Lineage = list[tuple[str, float | None, int | None]]

PARENT, ANCESTOR, CHILD, DESCENDANT = "parent", "ancestor", "child", "descendant"
SIBLING, SAME_SESSION, OTHER_SESSION = "sibling", "same session", "other session"
MAX_DEPTH = 8

_LINEAGE = (
    "WITH RECURSIVE up(id, parent_id, session_id, is_main, since, background, depth) AS ("
    " SELECT id, parent_id, session_id, is_main, coalesce(launched_at, started_at), background,"
    " 0 FROM agent_registry WHERE id = ?1"
    " UNION ALL SELECT r.id, r.parent_id, r.session_id, r.is_main,"
    " coalesce(r.launched_at, r.started_at), r.background, up.depth + 1"
    f" FROM agent_registry r JOIN up ON r.id = up.parent_id WHERE up.depth < {MAX_DEPTH})"
    " SELECT id, parent_id, session_id, is_main, since, background FROM up ORDER BY depth"
)

_HOLDERS = (
    "SELECT c.agent_id AS agent, c.session_id, c.last_touched_at AS touched,"
    " c.operation AS tool, c.edits, r.id AS holder, r.agent_type, r.description,"
    f" r.task_description AS task, r.is_main, {process_columns()}"
    " FROM file_claims c JOIN agent_registry r ON r.id ="
    "  CASE WHEN c.agent_id = 'main' THEN c.session_id ELSE c.agent_id END"
    " LEFT JOIN sessions s ON s.session_id = r.session_id"
    " WHERE c.file_path = ?1 AND c.released_at IS NULL AND c.expires_at > ?4"
    " AND r.status = 'running' AND NOT (c.session_id = ?2 AND c.agent_id = ?3)"
    " ORDER BY c.last_touched_at DESC"
)

# From the running agents (an index on status) to their live claims: never every claim.
_LIVE_CLAIMS = (
    "SELECT c.id, c.file_path, c.agent_id AS agent, c.session_id, c.last_touched_at AS touched,"
    f" r.id AS holder, r.is_main, {process_columns()}"
    " FROM agent_registry r JOIN file_claims c ON c.session_id = r.session_id"
    " AND c.agent_id = CASE WHEN r.is_main THEN 'main' ELSE r.id END AND c.released_at IS NULL"
    " LEFT JOIN sessions s ON s.session_id = r.session_id"
    " WHERE r.status = 'running' AND c.expires_at > ?1"
)


class Tree:
    """The lineages asked for during one answer, each read once."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.known: dict[str, Lineage] = {}

    def lineage(self, agent: str) -> "Lineage":
        """The registry id `agent`, its parent, ... up to its session's main thread. An agent
        whose launch is not known hangs under its session's main thread (Claude Code's
        subagents are launched by the main thread unless a launch says otherwise)."""
        if agent in self.known:
            return self.known[agent]
        found = self.conn.execute(_LINEAGE, (agent,)).fetchall()
        line: Lineage = [
            (str(a), since if isinstance(since, int | float) else None, _flag(bg))
            for a, _, _, _, since, bg in found
        ]
        if found:
            _, parent, session, is_main, _, _ = found[-1]
            if not is_main and parent is None and str(session) not in {a for a, _, _ in line}:
                line.append((str(session), None, None))
        self.known[agent] = line or [(agent, None, None)]
        return self.known[agent]


def _flag(value: "Any") -> int | None:
    return value if value in (0, 1) else None


def relation(mine: "Lineage", theirs: "Lineage", same_session: bool) -> "tuple[str, Any, Any]":
    """How `theirs` stands to `mine`: (relation, when the link between was launched, whether
    that launch was in the background) for an ancestor or descendant, else (relation, None,
    None)."""
    mine_ids = [a for a, _, _ in mine]
    their_ids = [a for a, _, _ in theirs]
    if their_ids[0] in mine_ids[1:]:  # they launched my branch
        k = mine_ids.index(their_ids[0])
        _, since, background = mine[k - 1]
        return (PARENT if k == 1 else ANCESTOR), since, background
    if mine_ids[0] in their_ids[1:]:  # I launched theirs
        k = their_ids.index(mine_ids[0])
        _, since, background = theirs[k - 1]
        return (CHILD if k == 1 else DESCENDANT), since, background
    if not same_session:
        return OTHER_SESSION, None, None
    if len(mine_ids) > 1 and len(their_ids) > 1 and mine_ids[1] == their_ids[1]:
        return SIBLING, None, None
    return SAME_SESSION, None, None


def conflicting(kind: str, since: "Any", background: "Any", ancestor_touched: "Any") -> bool:
    """Whether agents so related can both change a file now (see the module's rules).
    `ancestor_touched`: when the ancestor of the two last changed the file."""
    if kind in (PARENT, ANCESTOR, CHILD, DESCENDANT):
        if background == 0:
            return False  # the ancestor waits for that branch: never both at once
        if kind in (CHILD, DESCENDANT):
            return True  # it runs on in the background, holding the file I am about to change
        return (
            isinstance(since, int | float)
            and isinstance(ancestor_touched, int | float)
            and (ancestor_touched > since)
        )
    return True


def conflicts(
    conn: apsw.Connection, session_id: str, agent_id: str | None, file_path: str, now: float
) -> "list[dict[str, Any]]":
    """The live holders of `file_path` that the acting agent would run into, most recent
    first, each with its `relation` to it (parent, ancestor, child, descendant, sibling,
    same session, other session)."""
    me = agent_id or MAIN
    found = rows(conn, _HOLDERS, (file_path, session_id, me, now))
    found = [h for h in found if not row_gone(h)]
    if not found:
        return []
    tree = Tree(conn)
    mine = tree.lineage(registry_id(session_id, me))
    kept = []
    for holder in found:
        theirs = tree.lineage(str(holder["holder"]))
        kind, since, background = relation(mine, theirs, holder["session_id"] == session_id)
        # the ancestor's touch: theirs when they are my ancestor; a descendant of mine holds
        # the file itself, so the rule does not look at my own touch
        if conflicting(kind, since, background, holder["touched"]):
            kept.append(holder | {"relation": kind})
    return kept


def contested(conn: apsw.Connection, now: float) -> "dict[str, list[tuple[str, str]]]":
    """{file path: the (session id, claim agent) of each live holder that can change it at the
    same time as another}, the files most recently touched first."""
    by_file: dict[str, list[dict[str, Any]]] = {}
    for claim in rows(conn, _LIVE_CLAIMS, (now,)):
        if not row_gone(claim):
            by_file.setdefault(str(claim["file_path"]), []).append(claim)
    tree = Tree(conn)
    found: list[tuple[float, str, list[tuple[str, str]]]] = []
    for path, claims in by_file.items():
        if len(claims) < 2:
            continue
        hit: dict[int, dict[str, Any]] = {}
        for i, a in enumerate(claims):
            for b in claims[i + 1 :]:
                if _pair_conflicts(tree, a, b):
                    hit[int(a["id"])], hit[int(b["id"])] = a, b
        if hit:
            latest = max(float(c["touched"]) for c in hit.values())
            found.append(
                (latest, path, [(str(c["session_id"]), str(c["agent"])) for c in hit.values()])
            )
    return {path: holders for _, path, holders in sorted(found, key=lambda f: -f[0])}


def _pair_conflicts(tree: Tree, a: "dict[str, Any]", b: "dict[str, Any]") -> bool:
    """Whether the holders of claims `a` and `b` can change their file at the same time."""
    mine, theirs = tree.lineage(str(a["holder"])), tree.lineage(str(b["holder"]))
    kind, since, background = relation(mine, theirs, a["session_id"] == b["session_id"])
    if kind in (CHILD, DESCENDANT):  # b is a's descendant: look from b, a is the ancestor
        kind, since, background = relation(theirs, mine, True)
        return conflicting(kind, since, background, a["touched"])
    return conflicting(kind, since, background, b["touched"])
