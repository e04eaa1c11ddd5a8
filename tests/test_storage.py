"""Storage per event: frame states are written as JSON text by the hooks and packed later, off
their path (a delta against the session's state before, or deflate against the state's keys),
and every reader gets the same state back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import fixture
from inproc import Recorder

from claude_session.core import frames
from claude_session.services.timetravel import timetravel


def long_session(recorder: Recorder, root: Path, sid: str, steps: int) -> None:
    recorder.send(fixture("SessionStart.startup", root) | {"session_id": sid})
    for i in range(steps):
        prompt = fixture("UserPromptSubmit", root) | {"session_id": sid, "prompt": f"step {i}"}
        recorder.send(prompt)
        for name in ("PreToolUse.Edit", "PostToolUse.Edit"):
            payload: dict[str, Any] = fixture(name, root) | {"session_id": sid}
            payload["tool_use_id"] = f"{sid}-{i}"
            payload["tool_input"] = dict(payload["tool_input"], file_path=f"{root}/src/m{i % 9}.py")
            recorder.send(payload)
            recorder.advance(0.5)
        if i % 7 == 3:
            failing = fixture("PostToolUseFailure.Bash", root) | {"session_id": sid}
            recorder.send(failing | {"tool_use_id": f"{sid}-f{i}"})
    recorder.send(fixture("SessionEnd", root) | {"session_id": sid})


def test_packed_states_read_back_the_same_and_take_a_fraction_of_the_space(
    project: Path,
) -> None:
    recorder = Recorder(project)
    for n in range(3):
        long_session(recorder, project, f"s{n}", 40)
    # (the capture process the PreToolUse hooks started may have packed some already)
    texts = {  # by hash: a packed state is a new row
        digest: frames.state_text(recorder.conn, stored)
        for digest, stored in recorder.rows("SELECT hash, state FROM frame_states")
    }
    timeline = timetravel.timeline(recorder.conn, "s1")
    frame = timetravel.frame(recorder.conn, timetravel.FrameRef("s1", timeline[-3]["frame"]))
    before = sum(len(text.encode()) for text in texts.values())

    while frames.pack_states(recorder.conn, batch=50):  # in batches, oldest first
        pass
    assert recorder.rows("SELECT count(*) FROM frame_states WHERE typeof(state) = 'text'") == [(0,)]
    found = recorder.rows("SELECT hash, state FROM frame_states")
    assert len(found) == len(texts)
    for digest, stored in found:
        assert isinstance(stored, bytes)
        assert frames.state_text(recorder.conn, stored) == texts[digest]
    depths = [s[1] for (s,) in recorder.rows("SELECT state FROM frame_states") if s[0] == 2]
    assert depths and max(depths) < frames.PACK_DEPTH  # chains stay short
    assert recorder.rows("SELECT sum(length(state)) FROM frame_states")[0][0] * 8 < before
    assert timetravel.timeline(recorder.conn, "s1") == timeline
    assert timetravel.frame(recorder.conn, timetravel.FrameRef("s1", frame["frame_no"])) == frame

    long_session(recorder, project, "s9", 3)  # new states after packing: text, then packed
    while frames.pack_states(recorder.conn):
        pass
    state = json.loads(frames.frame_row(recorder.conn, "s9", 2)["state"])  # type: ignore[index]
    assert state["session_id"] == "s9"


def test_the_hooks_path_never_loads_the_packer(project: Path) -> None:
    """Packing needs zlib (~0.6 ms to import): recording an event with a new state does not."""
    script = (
        "import sys, json\n"
        "sys.path[:0] = [sys.argv[1]]\n"
        "from pathlib import Path\n"
        "from inproc import Recorder\n"
        "root = Path(sys.argv[2])\n"
        "fixtures = Path(sys.argv[1]) / 'fixtures' / 'claude-code-2.1.330'\n"
        "def fixture(name):\n"
        "    text = (fixtures / f'{name}.json').read_text()\n"
        "    return json.loads(text.replace('/home/dev/project', str(root)))\n"
        "r = Recorder(root)\n"
        "before = 'zlib' in sys.modules\n"
        "r.send(fixture('SessionStart.startup'))\n"
        "r.send(fixture('PostToolUse.Edit'))\n"
        "assert r.rows('SELECT count(*) FROM frame_states')[0][0] >= 2\n"
        "print(before, 'zlib' in sys.modules)\n"
    )
    tests = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", script, tests, str(project)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False"


def test_packing_frees_whole_pages_for_new_rows(project: Path) -> None:
    """Packed states are moved, not shrunk in place: the pages their text filled come free
    (and are reused), so the database holds the packed size, not the text's."""
    recorder = Recorder(project)
    for n in range(4):
        long_session(recorder, project, f"p{n}", 30)
    while frames.pack_states(recorder.conn):
        pass

    def used_pages() -> int:
        pages = recorder.rows("PRAGMA page_count")[0][0]
        return int(pages) - int(recorder.rows("PRAGMA freelist_count")[0][0])

    in_states = recorder.rows("SELECT sum(pgsize) FROM dbstat WHERE name = 'frame_states'")[0][0]
    text = sum(
        len(frames.state_text(recorder.conn, s))
        for (s,) in recorder.rows("SELECT state FROM frame_states")
    )
    assert in_states * 3 < text, (in_states, text)  # the table's pages hold packed rows
    assert used_pages() > 0
