"""One transcript line must not brick the tool (issue 30): Claude Code's transcript is writable
by the agent itself (a Bash `>>`), so any value may sit in any field the reader takes. A token
count or cost that is non-finite, huge, a huge numeric string, negative or of the wrong type, or
a line nested very deep, is skipped and counted (core/transcript_values); reading never raises,
the reader gets past it, `status`, `cost` and `timeline` keep working, a session after it is
still read, and Claude Code's own cost is shown only when it is a figure at all.

Two sessions in every case: A, older, whose transcript holds the bad line (after its good
lines, so a forged cost-state would be the latest one), and B, newer, all good: sessions are
read in the order of their last activity, so B comes after A."""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import log_file, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import Recorder
from test_transcripts import assistant, user

from claude_session.core import accounting, db, statusline, usage
from claude_session.core import transcript_values as values
from claude_session.services.cost import costs, transcripts

A = "5e55a0b1-0000-4000-8000-0000000000aa"
B = "5e55a0b1-0000-4000-8000-0000000000bb"
PROMPT_A = "9f1c2d3e-0000-4000-8000-0000000000a1"
PROMPT_B = "9f1c2d3e-0000-4000-8000-0000000000b1"
MODEL = "claude-opus-4-5"
COST = {A: 0.25, B: 0.5}

# Every field of a kept entry the reader takes (services/transcripts, core/usage).
FIELDS: dict[str, list[tuple[str | int, ...]]] = {
    "assistant": [
        ("type",),
        ("timestamp",),
        ("message",),
        ("message", "id"),
        ("message", "model"),
        ("message", "content"),
        ("message", "content", 0, "id"),  # a tool call: `reconcile` rebuilds its hook events
        ("message", "content", 0, "name"),
        ("message", "content", 0, "input"),
        ("message", "usage"),
        ("message", "usage", "input_tokens"),
        ("message", "usage", "output_tokens"),
        ("message", "usage", "cache_read_input_tokens"),
        ("message", "usage", "cache_creation_input_tokens"),
        ("message", "usage", "output_tokens_details"),
        ("message", "usage", "output_tokens_details", "thinking_tokens"),
        ("message", "usage", "service_tier"),
        ("message", "usage", "speed"),
    ],
    "user": [("type",), ("timestamp",), ("promptId",), ("message",)],
    "cost-state": [
        ("totalCostUSD",),
        ("totalAPIDuration",),
        ("totalToolDuration",),
        ("totalLinesAdded",),
        ("totalLinesRemoved",),
        ("hasUnknownModelCost",),
        ("modelUsage",),
        ("modelUsage", MODEL),
        *[("modelUsage", MODEL, key) for key in (*values.MODEL_COUNTS, "costUSD")],
        ("modelUsage", MODEL, "contextWindow"),  # not read, but stored with the rest
    ],
}
# The number fields, for the runs of the real command (a few examples: each is a process).
NUMERIC = {
    *(key for _, key in values.USAGE_KEYS),
    "thinking_tokens",
    "totalCostUSD",
    "totalAPIDuration",
    "totalToolDuration",
    "totalLinesAdded",
    "totalLinesRemoved",
    *values.MODEL_COUNTS,
    "costUSD",
}
NUMBERS = {
    kind: [f for f in FIELDS[kind] if f[-1] in NUMERIC] for kind in ("assistant", "cost-state")
}

JUNK = st.recursive(
    st.none() | st.booleans() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
# What brick the reader if taken as they come (issue 30's list), then anything at all.
BRICKS = st.one_of(
    st.sampled_from([10**19, 2**63, -(2**63) - 1, 10**400, -1, -(10**6)]),  # past 64 bits
    st.integers(min_value=-(10**30), max_value=-1),  # negative
    st.integers(min_value=10**13, max_value=10**4000),  # huge: past every cap
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -5.0]),  # NaN, Infinity as json writes
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda f: not 0 <= f <= 1e13),
    st.builds(lambda n: "9" * n, st.integers(19, 4000)),  # a huge numeric string
    st.builds(lambda n: f"__DEEP_{n}__", st.integers(values.MAX_DEPTH, 5000)),  # deep nesting
)
ANY = st.one_of(
    BRICKS, st.integers(), st.floats(), JUNK, st.from_regex(r"-?\d{1,25}", fullmatch=True)
)


def cost_state_entry(total: float) -> dict[str, Any]:
    counts = dict.fromkeys(values.MODEL_COUNTS, 0) | {"inputTokens": 100, "outputTokens": 20}
    return {
        "type": "cost-state",
        "totalCostUSD": total,
        "totalAPIDuration": 238,
        "totalToolDuration": 457,
        "totalLinesAdded": 5,
        "totalLinesRemoved": 1,
        "modelUsage": {MODEL: counts | {"costUSD": total}},
        "hasUnknownModelCost": False,
    }


def base(kind: str) -> dict[str, Any]:
    """The entry a bad value is put into: one that changes nothing when it is fine."""
    if kind == "user":
        return user(PROMPT_A, 4)
    if kind == "assistant":
        call = {"type": "tool_use", "id": "toolu_bad", "name": "Bash", "input": {"command": "ls"}}
        return assistant("m_bad", 4, model=MODEL, tokens=(0, 0, 0, 0), blocks=[call])
    return cost_state_entry(COST[A])


def line_with(kind: str, path: tuple[str | int, ...], value: object) -> bytes:
    """The entry of `kind` with `value` at `path`, as Python's json writes it (NaN, Infinity);
    a __DEEP_n__ marker becomes n nested lists (json itself could not build them)."""
    entry = copy.deepcopy(base(kind))
    place: Any = entry
    for key in path[:-1]:
        if isinstance(key, str) and not isinstance(place.get(key), dict | list):
            place[key] = {}
        place = place[key]
    place[path[-1]] = value
    text = json.dumps(entry, separators=(",", ":"))
    while '"__DEEP_' in text:
        start = text.index('"__DEEP_')
        end = text.index('__"', start) + 3
        depth = int(text[start + 8 : end - 3])
        text = text[:start] + "[" * depth + "]" * depth + text[end:]
    return text.encode()


def write_lines(path: Path, entries: list[dict[str, Any] | bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        for entry in entries:
            raw = entry if isinstance(entry, bytes) else json.dumps(entry).encode()
            f.write(raw + b"\n")


class Scenario:
    """A project and a Claude Code config folder of its own: session A with the bad line, and
    (once `add_b` is called) session B after it."""

    def __init__(self, folder: Path) -> None:
        self.project = folder / "project"
        self.project.mkdir()
        self.config = folder / "claude-config"
        self.transcripts = self.config / "projects" / "-tmp-project"
        self.rec = Recorder(self.project)

    def path(self, session: str) -> Path:
        return self.transcripts / f"{session}.jsonl"

    def start(self, session: str, prompt: str) -> None:
        ids = {"session_id": session, "transcript_path": str(self.path(session))}
        payload = ids | {"cwd": str(self.project)}
        self.rec.send(payload | {"hook_event_name": "SessionStart", "source": "startup"})
        self.rec.send(
            payload | {"hook_event_name": "UserPromptSubmit", "prompt": "go", "prompt_id": prompt}
        )

    def add_a(self, bad: bytes) -> None:
        self.start(A, PROMPT_A)
        good = [user(PROMPT_A, 1), assistant("a1", 2, model=MODEL), cost_state_entry(COST[A])]
        write_lines(self.path(A), [*good, bad])

    def add_b(self) -> None:
        self.rec.advance(60)
        self.start(B, PROMPT_B)
        good = [user(PROMPT_B, 61), assistant("b1", 62, model=MODEL), cost_state_entry(COST[B])]
        write_lines(self.path(B), good)


def check_store(conn: Any) -> None:
    """Nothing out of bounds was stored, and each session's file was read to its end."""
    for row in db.rows(conn, "SELECT * FROM message_usage"):
        for column in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_creation_tokens",
            "thinking_tokens",
        ):
            assert 0 <= row[column] <= values.MAX_SESSION_TOKENS, row
        assert row["cost_usd"] is None or 0 <= row["cost_usd"] <= values.MAX_COST_USD, row
    for row in db.rows(conn, "SELECT * FROM session_costs"):
        assert row["total_cost_usd"] is None or values.sane_cost(row["total_cost_usd"]), row


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=st.sampled_from(sorted(FIELDS)), data=st.data(), value=ANY)
def test_any_value_in_any_field_never_stops_the_reading(
    kind: str, data: Any, value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = data.draw(st.sampled_from(FIELDS[kind]))
    with tempfile.TemporaryDirectory() as folder:
        scene = Scenario(Path(folder))
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(scene.config))
        try:
            scene.add_a(line_with(kind, path, value))
            scene.add_b()
            conn = scene.rec.conn
            done = transcripts.catch_up(conn)  # never raises
            assert done["failed"] == [] and done["sessions"] == 2
            log = log_file(scene.project)  # nor fails inside (reconcile's failures are logged)
            assert not log.exists() or " ERROR [" not in log.read_text(), log.read_text()
            again = transcripts.catch_up(conn)  # the reader got past the line: nothing new
            assert again["failed"] == [] and again["entries"] == 0
            check_store(conn)
            files = {
                r["session_id"]: r
                for r in db.rows(conn, "SELECT * FROM transcript_files WHERE last_error IS NULL")
            }
            for session in (A, B):
                assert files[session]["read_to"] == scene.path(session).stat().st_size
            assert files[A]["lines_read"] == 4 and files[A]["lines_skipped"] <= 1
            read = {r["message_id"] for r in db.rows(conn, "SELECT message_id FROM message_usage")}
            assert {"a1", "b1"} <= read  # A's good lines, and B after it
            total = costs.report(conn, "session", None)["claude_code_total_usd"]
            assert values.sane_cost(total) and total >= COST[B]  # a fine value may change A's
            if files[A]["lines_skipped"]:
                assert total == pytest.approx(COST[A] + COST[B])
        finally:
            scene.rec.close()


@settings(
    max_examples=int(os.environ.get("CLI_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=st.sampled_from(sorted(NUMBERS)), data=st.data(), value=BRICKS)
def test_status_cost_and_timeline_keep_working_as_a_user_runs_them(
    kind: str, data: Any, value: object
) -> None:
    path = data.draw(st.sampled_from(NUMBERS[kind]))
    with tempfile.TemporaryDirectory() as folder:
        scene = Scenario(Path(folder))
        env = {"CLAUDE_CONFIG_DIR": str(scene.config)}
        try:
            scene.add_a(line_with(kind, path, value))
            read = run_cli(scene.project, "cost", **env)  # `status` reads no transcript
            assert read.returncode == 0 and "Traceback" not in read.stderr, read.stderr
            status = run_cli(scene.project, "status", **env)  # A is the latest session
            assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
            assert "$0.2500" in status.stdout  # A's own cost, the forged line skipped
            scene.add_b()
            done = run_cli(scene.project, "cost", "--json", **env)
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
            found = json.loads(done.stdout)
            assert found["claude_code_total_usd"] == pytest.approx(COST[A] + COST[B])
            assert found["total"]["cost_usd"] == pytest.approx(COST[A] + COST[B])
            assert found["total"]["input_tokens"] == 200  # a1 and b1: the bad line skipped
            timeline = run_cli(scene.project, "timeline", A, **env)
            assert timeline.returncode == 0 and "Traceback" not in timeline.stderr, timeline.stderr
        finally:
            scene.rec.close()


def test_doctor_counts_the_lines_skipped_and_says_where_the_first_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = Scenario(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(scene.config))
    bad = line_with("assistant", ("message", "usage", "input_tokens"), 10**30)
    scene.add_a(bad)
    write_lines(scene.path(A), [line_with("cost-state", ("totalCostUSD",), math.nan)])
    first = (
        scene.path(A).stat().st_size
        - len(bad)
        - 1
        - len(line_with("cost-state", ("totalCostUSD",), math.nan))
        - 1
    )
    done = transcripts.catch_up(scene.rec.conn)
    assert done["skipped"] == 2 and done["failed"] == []
    state = usage.file_state(scene.rec.conn, str(scene.path(A)))
    assert state is not None
    assert (state["lines_skipped"], state["first_skipped"]) == (2, first)
    scene.rec.close()
    doctor = run_cli(scene.project, "doctor", "--json", CLAUDE_CONFIG_DIR=str(scene.config))
    checks = {c["check"]: c for c in json.loads(doctor.stdout)}
    detail = checks["transcripts"]["detail"]
    assert "2 lines skipped in 1" in detail and f"from byte {first}" in detail, detail


def test_one_failing_session_is_logged_once_and_the_others_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scene = Scenario(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(scene.config))
    scene.add_a(json.dumps(user(PROMPT_A, 5)).encode())
    scene.add_b()
    apportion = usage.apportion

    def failing(conn: Any, session: str, now: float = 0.0) -> int:
        if session == A:
            raise OverflowError("cannot convert float infinity to integer")
        return apportion(conn, session, now)

    monkeypatch.setattr(usage, "apportion", failing)
    for step in range(3):  # three sweeps
        if step:
            write_lines(scene.path(A), [assistant(f"a{step + 1}", 5 + step, model=MODEL)])
            write_lines(scene.path(B), [assistant(f"b{step + 1}", 65 + step, model=MODEL)])
        done = transcripts.catch_up(scene.rec.conn)
        assert done["failed"] == [A] and done["sessions"] == 2
    read = {str(r[0]) for r in scene.rec.rows("SELECT message_id FROM message_usage")}
    assert {"b1", "b2", "b3"} <= read  # B read on every sweep
    lines = log_file(scene.project).read_text().splitlines()
    logged = [line for line in lines if " ERROR [" in line]
    assert len(logged) == 1 and A in logged[0], lines
    monkeypatch.setattr(usage, "apportion", apportion)
    assert transcripts.catch_up(scene.rec.conn)["failed"] == []  # and it recovers
    scene.rec.close()


@pytest.mark.parametrize("forged", [-5.0, 1e308, math.inf, math.nan, 2e9])
def test_a_forged_total_stored_before_the_checks_is_never_shown_as_claude_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forged: float
) -> None:
    """A database written before the checks may hold one: `cost` leaves it out, the status
    line shows the responses' own shares, and nothing apportions a NaN or an infinity."""
    scene = Scenario(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(scene.config))
    scene.add_a(json.dumps(user(PROMPT_A, 5)).encode())
    conn = scene.rec.conn
    transcripts.catch_up(conn)
    state = cost_state_entry(COST[A]) | {"totalCostUSD": forged}
    if math.isfinite(forged):  # json_valid refuses NaN and Infinity in model_usage
        state["modelUsage"][MODEL]["costUSD"] = forged
    with db.Immediate(conn):
        accounting.record_cost_state(conn, A, state, None, scene.rec.now)  # unchecked, as before
        conn.execute(  # and its line, as a database of this version would hold it
            "INSERT INTO cost_states (session_id, path, line_end, as_of, total_cost_usd,"
            " model_usage) VALUES (?, 'x', 1, NULL, ?, ?)",
            (A, forged, json.dumps(state["modelUsage"]) if math.isfinite(forged) else None),
        )
        usage.apportion(conn, A)
    report = costs.report(conn, "session", None)
    assert report["claude_code_total_usd"] in (None, pytest.approx(COST[A]))  # never the forgery
    assert 0 <= report["total"]["cost_usd"] < 1
    shown = statusline.summarize(conn, A, scene.rec.now).cost
    assert shown is not None and 0 <= shown < 1  # the responses' own shares, not the forgery
    scene.rec.close()
