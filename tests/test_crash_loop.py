"""Fault case 29: a writer killed at random moments, 200 times. Every event it acknowledged
(committed) is in the database, none twice, and the database is intact every time."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import apsw
from conftest import PYTHON

WRITER = r"""
import json, sys, time
from claude_session.core import apply_types, db, event, events
root, start = sys.argv[1], int(sys.argv[2])
conn = db.connect(root + "/.claude-session.db")
scratch = __import__("apsw").Connection(":memory:")
print("ready", flush=True)
n = start
while True:
    payload = {"session_id": "crash-loop", "hook_event_name": "PostToolUse", "cwd": root,
               "tool_name": "Bash", "tool_use_id": f"toolu_{n}",
               "tool_input": {"command": f"echo {n}"}, "tool_response": {"stdout": str(n)}}
    ev, _ = event.load(scratch, json.dumps(payload).encode(), "PostToolUse")
    delivery = apply_types.Delivery(events.new_delivery_id(), time.time(), 100)
    events.apply(conn, ev, delivery, apply_types.Context(root, time.time()))
    print(n, flush=True)  # acknowledged: committed
    n += 1
"""


def test_29_crash_loop_loses_no_acknowledged_event(project: Path) -> None:
    rng = random.Random(29)
    acknowledged: set[int] = set()
    next_number = 0
    for _ in range(200):
        proc = subprocess.Popen(
            [PYTHON, "-c", WRITER, str(project), str(next_number)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        numbers = [int(line) for line in out.split()]
        acknowledged.update(numbers)
        next_number = (max(numbers) + 1) if numbers else next_number
        next_number += 1  # the killed write (if any) may or may not have landed; move past it
    conn = apsw.Connection(str(project / ".claude-session.db"))
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    stored = [
        int(tool_use_id.removeprefix("toolu_"))
        for (tool_use_id,) in conn.execute("SELECT tool_use_id FROM events")
    ]
    assert len(stored) == len(set(stored)), "an event was stored twice"
    assert acknowledged <= set(stored), sorted(acknowledged - set(stored))[:10]
    assert len(acknowledged) > 200  # the loop really wrote under fire
