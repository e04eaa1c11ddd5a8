"""Fuzzing the real hook entry with mutated real payloads (hypothesis): whatever arrives, the
hook exits 0, prints nothing or exactly one JSON object, writes no traceback, and the event is
stored or spooled (or, for input that is not a JSON object at all, logged).

Bounded so that CI stays fast; failing examples are kept in tests/hypothesis-db (committed), so
a case found once is tried first on every later run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from conftest import FIXTURES, RECORDED_PROJECT, hook_argv, hook_env, log_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

FUZZ_DB = DirectoryBasedExampleDatabase(str(Path(__file__).parent / "hypothesis-db"))
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))
ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200),
    st.sampled_from(["\x00", "\x1b[2J", "\u202e", "\ud7ff", "\U0001f600" * 50, "</x>", "'\""]),
    st.builds(lambda n: "a" * n, st.integers(0, 300_000)),
)
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ODD_TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def mutate(payload: dict[str, Any], draw: Any) -> dict[str, Any]:
    """Wrong types, missing and extra keys, odd text, deep nesting."""
    keys = sorted(payload)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["drop", "retype", "extra", "deep", "text"]))
        key = draw(st.sampled_from(keys)) if keys else "x"
        if action == "drop":
            payload.pop(key, None)
        elif action == "retype":
            payload[key] = draw(JUNK)
        elif action == "extra":
            payload[draw(st.text(min_size=1, max_size=12))] = draw(JUNK)
        elif action == "deep":  # spliced in as text: json itself cannot build it
            payload[key] = f"__DEEP_{draw(st.integers(10, 3000))}__"
        else:
            payload[key] = draw(ODD_TEXT)
    return payload


@st.composite
def hook_inputs(draw: Any) -> tuple[str, bytes]:
    name = draw(st.sampled_from(NAMES))
    payload = json.loads((FIXTURES / f"{name}.json").read_text())
    event = str(payload.get("hook_event_name"))
    kind = draw(st.sampled_from(["mutated", "mutated", "mutated", "binary", "truncated"]))
    if kind == "binary":
        return event, draw(st.binary(max_size=2000))
    text = json.dumps(mutate(payload, draw), ensure_ascii=draw(st.booleans()))
    while "__DEEP_" in text:
        start = text.index('"__DEEP_')
        end = text.index('__"', start) + 3
        depth = int(text[start + 8 : end - 3])
        text = text[:start] + "[" * depth + "]" * depth + text[end:]
    data = text.encode("utf-8", "surrogatepass")
    if kind == "truncated":
        data = data[: draw(st.integers(0, len(data)))]
    return event, data


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),  # more for a local hunt
    deadline=None,
    database=FUZZ_DB,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=hook_inputs())
def test_the_hook_survives_whatever_it_is_sent(
    tmp_path_factory: Any, case: tuple[str, bytes]
) -> None:
    event, data = case
    project = tmp_path_factory.mktemp("fuzz")
    data = data.replace(RECORDED_PROJECT.encode(), str(project).encode())
    done = subprocess.run(
        hook_argv(event), input=data, capture_output=True, env=hook_env(project), timeout=60
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    out = done.stdout.decode("utf-8", "replace").strip()
    if out:
        assert isinstance(json.loads(out), dict)
    stored = _events(project) + len(list((project / ".claude-session.db.spool").glob("*.json")))
    is_object = _is_object(data)
    if is_object:
        assert stored >= 1 or _user_spooled(), "a JSON object was neither stored nor spooled"
    elif stored == 0:
        log = log_file(project)
        assert not data.strip() or log.exists(), "a rejected input left no log line"
    shutil.rmtree(project, ignore_errors=True)


def _events(project: Path) -> int:
    import apsw

    path = project / ".claude-session.db"
    if not path.exists():
        return 0
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        conn.close()


def _user_spooled() -> bool:
    folder = Path(os.environ["CLAUDE_SESSION_STATE_DIR"]) / "spool"
    return folder.exists() and any(folder.glob("*.json"))


def _is_object(data: bytes) -> bool:
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        text = data.decode("utf-8", "replace").strip()
        return text.startswith("{") and text.endswith("}") and _balanced(text)
    return isinstance(value, dict)


def _balanced(text: str) -> bool:
    """Deep but well-formed (json.loads gives up on depth, not on form)."""
    import sys

    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(20_000)
        json.loads(text)
        return True
    except (ValueError, RecursionError):
        return False
    finally:
        sys.setrecursionlimit(limit)
