"""What the library API (`claude_session.Project`) answers with: frozen dataclasses whose
fields are the names the CLI's `--json` prints, in its order (`dataclasses.asdict(row)` is the
row that command shows), and what each write verb did. Nothing here reads or writes anything:
see `Project`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from dataclasses import dataclass
else:
    import _thread

    _WAITING = {}  # a record class not made a dataclass yet -> its options
    _MAKING = _thread.RLock()  # dataclass() itself asks the class for attributes it lacks

    def dataclass(**options):
        """`dataclasses.dataclass`, done when the class is first used (an instance made, or a
        dataclass attribute asked for: `fields`, `is_dataclass`, `asdict`), not at import:
        it compiles six methods per class (138M instructions for the 25 here, 18% of
        `status`), and a command uses one or two."""

        def deferred(cls):
            made = _Deferred(cls.__name__, cls.__bases__, dict(cls.__dict__))
            _WAITING[made] = options
            return made

        return deferred

    def _make(cls):
        """Make `cls` a dataclass if it is not one yet (True: it was made now). Under a lock:
        another thread's instance waits until the class is whole."""
        with _MAKING:
            options = _WAITING.pop(cls, None)
            if options is None:
                return False
            import dataclasses

            dataclasses.dataclass(cls, **options)
            return True

    class _Deferred(type):
        def __call__(cls, *args, **kwargs):
            _make(cls)
            return super().__call__(*args, **kwargs)

        def __getattr__(cls, name):
            if name.startswith("__") and _make(cls):
                return getattr(cls, name)
            raise AttributeError(name)


__all__ = [
    "Agent",
    "Claim",
    "CostReport",
    "Diff",
    "Error",
    "FailedPath",
    "Frame",
    "HooksReport",
    "Injection",
    "Listing",
    "LiveView",
    "Memory",
    "MemoryAdded",
    "MemoryChanged",
    "RecordedEvent",
    "Refreshed",
    "Session",
    "SessionRow",
    "SessionView",
    "StateChange",
    "StateSet",
    "StateValue",
    "Status",
    "TrustChanged",
    "Verdict",
]


@dataclass(frozen=True)
class Session:
    """A session with its counters (`claude-session status --json`'s `sessions`)."""

    session_id: str
    status: str | None  # active, ended, or interrupted (it never said SessionEnd)
    source: str | None
    started_at: float | None
    last_activity_at: float | None
    end_reason: str | None
    events: int | None
    prompts: int | None
    tool_calls: int | None
    tool_failures: int | None
    file_edits: int | None
    subagents: int | None
    compactions: int | None


@dataclass(frozen=True)
class SessionRow:
    """A row of `claude-session sessions --json`: a session, `active`, `ended` or
    `interrupted` (it never said SessionEnd), its prompts, tool calls, cost (from Claude
    Code's transcripts; null: not read), compactions and the forks made from it."""

    session_id: str
    state: str | None
    started_at: float | None
    ended_at: float | None
    prompts: int | None
    tool_calls: int | None
    cost_usd: float | None
    estimated: int | None  # 1: part of that cost is for a model no price is known for
    compactions: int | None
    forks: int
    end_reason: str | None
    last_activity_at: float | None


@dataclass(frozen=True)
class Agent:
    """An agent of the registry (`claude-session agents --json`)."""

    agent: str
    type: str | None
    task: str | None
    state: str | None
    age_seconds: float | None
    silent_seconds: float | None
    files: int
    tokens: int | None
    cost_usd: float | None
    estimated: int | None  # 1: part of that cost is for a model no price is known for
    reason: str | None
    session_id: str
    tool_uses: int | None
    is_internal: int


@dataclass(frozen=True)
class Claim:
    """A file claim (lease) of an agent (`claude-session claims --json`)."""

    file_path: str
    agent: str
    session_id: str
    operation: str | None
    edits: int | None
    last_touched_at: float | None
    expires_at: float | None
    lease: str
    contested: int


@dataclass(frozen=True)
class Error:
    """An error (`claude-session errors --json`): one climb of its ladder, the same thing
    failing again and again until it was fixed or abandoned (`failures`, from attempt 1 to
    the last; `attempts` how many). `step` and `state` are the words `status` uses: where the
    ladder stands ("3 (research)") and what became of it (open, fixed, abandoned, or
    interrupted: a call the user stopped, no failure). `id` is its first failure's (the
    error_log row); `tokens`, `cost_usd` what the climb cost, from its first failure to its
    last (None when the session's usage was not read)."""

    id: int
    session_id: str
    agent_id: str | None
    tool_name: str | None
    error_category: str | None
    what: str | None
    attempts: int
    step: str
    state: str
    interrupted: int
    command: str | None
    file_path: str | None
    exit_code: int | None
    task_id: str | None
    error_message: str | None
    first_at: float | None
    last_at: float | None
    resolved_at: float | None
    tokens: int | None
    cost_usd: float | None
    failures: list[dict[str, Any]]


@dataclass(frozen=True)
class FailedPath:
    """An approach tried and rejected (`claude-session failed-paths --json`)."""

    id: int
    approach: str
    reason_failed: str | None
    file_path: str | None
    session_id: str | None
    still_relevant: int
    created_at: float | None
    expires_at: float | None
    context: str | None
    tokens: int | None
    cost_usd: float | None


@dataclass(frozen=True)
class Frame:
    """A frame of a session's timeline (`claude-session timeline --json`'s `frames`): what
    happened, when, what changed, what the model responses since the frame before cost;
    `result_text`, at a turn's end, what the model answered. `snapshot` is its workspace
    snapshot's status (`captured`, `pending`, ..., `pruned`: let go of by `prune`);
    `snapshot_commit` is set only while the snapshot is kept."""

    frame: int
    created_at: float
    kind: str
    tool_name: str | None
    summary: str | None
    files: tuple[str, ...]
    state_hash: str | None
    turn: int | None
    snapshot: str | None
    snapshot_commit: str | None
    snapshot_note: str | None
    tool_status: str | None
    duration_ms: float | None
    open_errors: int | None
    agent: str
    cost_usd: float | None
    tokens: int | None
    messages: int
    result_text: str | None = None


@dataclass(frozen=True)
class Diff:
    """What changed between two frames (`claude-session diff --json`): `state`, the session's
    recorded state (agents, claims, errors, failed_paths: added, removed, changed; task;
    counters); `files`, `stat` (and `diff` unless `stat_only`), or `error`."""

    a: str
    b: str
    state: dict[str, Any]
    files: dict[str, Any]


@dataclass(frozen=True)
class CostReport:
    """Cost and tokens grouped `by` session, turn, agent, tool, model or day
    (`claude-session cost --json`, without the transcripts read: a Project reads none)."""

    by: str
    session_id: str | None
    since: float | None
    rows: tuple[dict[str, Any], ...]
    groups: int
    total: dict[str, Any]
    claude_code_total_usd: float | None
    price_table_models: Any
    dead_ends: dict[str, Any] | None = None
    estimated_models: Any = ()  # models priced at the default tier: their costs are estimates


@dataclass(frozen=True)
class HooksReport:
    """Every hook that ran, timed by Claude Code, grouped by command and event
    (`claude-session hooks --json`, without the transcripts read: a Project reads none).
    Each row: command, event, ours, runs, measured, unmeasured, total_ms, median_ms, p90_ms,
    max_ms, share (of `wall_time_ms`). `untimed_estimate`: what the runs Claude Code did not
    time could add, at the median of those it timed (an estimate, never measured; None when
    every run was timed or none was)."""

    session_id: str | None
    turn: int | None
    clock: str
    wall_time_ms: float | None
    wall_time_source: str
    rows: tuple[dict[str, Any], ...]
    groups: int
    total: dict[str, Any]
    untimed_estimate: dict[str, Any] | None = None


@dataclass(frozen=True)
class Memory:
    """A memory (`claude-session memory search --json`): `id` as the CLI names it (`12` in
    this project, `g12` global); `rank` from a search (lower is better), None in a listing;
    `trusted` 1 only when the row says the user (or a hook of a trusted database) wrote it and
    its database is trusted: a memory of a database that came with a clone is 0, whatever its
    row claims (core/trust.py; `Project.trusted` says it for every other record)."""

    id: str
    category: str
    scope: str
    text: str
    tags: tuple[str, ...]
    source: str | None
    session_id: str | None
    agent_id: str | None
    tool_use_id: str | None
    project: str | None
    strength: float | None
    created_at: float | None
    updated_at: float | None
    last_used_at: float | None
    use_count: int
    supersedes: int | None
    trusted: int | None
    review: str | None
    imported_at: float | None
    rank: float | None = None
    turn_no: int | None = None
    files_inferred: int | None = None
    outcome: str | None = None  # verified, disproved (a dead end), hypothesis
    outcome_at: float | None = None
    verified_at: float | None = None
    error_id: int | None = None
    outcome_reason: str | None = None  # why the outcome was said (redacted)

    @property
    def where(self) -> str:
        """'project' or 'global': which database holds it."""
        return "global" if self.id.startswith("g") else "project"


@dataclass(frozen=True)
class StateValue:
    """A key of the project's state."""

    key: str
    value: str | None
    updated_at: str | None  # as SQLite's datetime() writes it, UTC


@dataclass(frozen=True)
class StateChange:
    """A change of a state key, newest first in `state_history`."""

    id: int
    key: str
    old_value: str | None
    new_value: str | None
    changed_at: float
    cause: str | None


@dataclass(frozen=True)
class Injection:
    """A text put before a session's model (the injection log: `claude-session restore --all`)."""

    id: int
    at: float
    session_id: str
    agent_id: str | None
    event: str
    kind: str
    source: str | None
    event_id: int | None
    tool_use_id: str | None
    text: str
    chars: int | None


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on finished work (`claude-session verdicts --json`)."""

    id: int
    session_id: str | None
    hook_event: str | None
    task_id: str | None
    decision: str | None  # allow, block, or error (the judge failed: the work went on)
    reason: str | None
    task: str | None
    judge: str | None
    created_at: float | None
    verdict_json: str | None
    raw: str | None


@dataclass(frozen=True)
class RecordedEvent:
    """A hook event as recorded (`claude-session events --json`); `payload`, the stored
    (redacted) payload, only when asked for. `unattributed`: why it is in no session (its
    payload had no session id: another tool's), `session_id` then null."""

    id: int
    received_at: float | None
    session_id: str | None
    event: str | None
    tool_name: str | None
    agent_id: str | None
    tool_use_id: str | None
    payload_bytes: int | None
    via: str | None
    unattributed: str | None = None
    payload: str | None = None


@dataclass(frozen=True)
class Status:
    """What `claude-session status --json` prints: what is happening `now` (live agents,
    contested files, open errors, the last compaction, installation problems), then each part
    of the project's record as a row or list of rows."""

    now: dict[str, Any]
    database: dict[str, Any]
    sessions: list[dict[str, Any]]
    sessions_never_ended: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    daemon: dict[str, Any]
    trust: dict[str, str]
    open_errors: list[dict[str, Any]]
    failed_paths: list[dict[str, Any]]
    hooks: dict[str, Any]
    hook_time: dict[str, Any] | None
    cost: dict[str, Any]
    otel: dict[str, Any] | None
    judge: dict[str, Any]
    memories: dict[str, Any]


@dataclass(frozen=True)
class LiveView:
    """What `watch` and the web page show: agents (running first), file claims (contested
    first) and open errors, `taken_at` a Unix time; ages in seconds."""

    project: str
    session: str | None
    taken_at: float
    agents: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    open_errors: list[dict[str, Any]]


@dataclass(frozen=True)
class SessionView:
    """One session as the web page shows it: its main agent (status, task), subagents,
    frames, forks, what it `spent` (whole, per agent, turn and frame, over time) and the ids
    of Claude Code's internal helper agents."""

    session_id: str
    main: dict[str, Any] | None
    subagents: list[dict[str, Any]]
    frames: list[dict[str, Any]]
    branches: list[dict[str, Any]]
    spent: dict[str, Any]
    internal: frozenset[str]


@dataclass(frozen=True)
class Refreshed:
    """What `Project.refresh` did: the schema upgraded (`migrated`, from which version), the
    spooled events taken in, and what was read from Claude Code's transcripts (counts, and
    `untrusted` when nothing was read because the database is not this user's)."""

    migrated_from: int | None
    ingested: int
    transcripts: dict[str, Any]


@dataclass(frozen=True)
class MemoryAdded:
    """A memory added (`new`), or an existing one it matched strengthened. `id` as shown:
    `12` in this project, `g12` global; `review` is `pending` for a global memory an agent
    added (given to no session until the user accepts it); `files` the project files it is
    about, relative to the project (`files_inferred`: taken from the turn, not named)."""

    id: str
    scope: str
    new: bool
    session_id: str | None = None
    review: str | None = None
    files: tuple[str, ...] = ()
    files_inferred: bool = False


@dataclass(frozen=True)
class MemoryChanged:
    """What a memory verb did to memory `id` (`forgotten`, `accepted`, `verified`,
    `outcome`, `edited`), and the memory as it is now (None once forgotten)."""

    id: str
    change: str
    memory: dict[str, Any] | None = None


@dataclass(frozen=True)
class StateSet:
    """Keys of the project's state written (`changed`: the keys whose value changed;
    `removed`: the keys unset)."""

    values: dict[str, str]
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrustChanged:
    """What `Project.trust` adopted (`trusted`: the paths now trusted, `would_adopt`: what was
    not trusted before) or `revoke_trust` dropped (`revoked`: records removed), and the
    state after (`state`: database, configuration)."""

    trusted: tuple[str, ...] = ()
    would_adopt: dict[str, Any] | None = None
    revoked: int | None = None
    state: dict[str, str | None] | None = None


T = TypeVar("T")


@dataclass(frozen=True)
class Listing(Generic[T]):
    """The newest rows of a listing (`rows`), how many matched in all (`total`), and how
    many its default filter hides (`hidden`) and what they are (`hidden_what`): what the
    CLI's listings print, their notes on stderr included."""

    rows: list[T]
    total: int
    hidden: int = 0
    hidden_what: str | None = None

    @property
    def more(self) -> int:
        """How many matched beyond the rows given."""
        return max(0, self.total - len(self.rows))
