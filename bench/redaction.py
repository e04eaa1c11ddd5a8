#!/usr/bin/env python3
"""Benchmark redaction on the hook path: `redact_json` (what `event.load` runs on every
payload before the first byte is written) over each recorded payload of Claude Code 2.1.330
(tests/fixtures/claude-code-2.1.330/*.json), and over hostile ones: a payload holding a token
in every wrapping the scanner decodes (glued, URL-encoded once and twice, base64, `\\u`
escapes), and one carrying a 200 KB base64 blob. Each is timed as the median of `--runs`
calls in one process (SQLite's `json_tree` on one in-memory connection, as the hook has).

    .venv/bin/python bench/redaction.py [--runs 200] [--json]

Target: the median recorded payload under 0.5 ms, the 200 KB blob under 50 ms (a hook's
budget is tens of milliseconds; these are a small part of it).
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

import apsw

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_session.core.redact import redact_json  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "claude-code-2.1.330"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def hostile() -> dict[str, str]:
    """Payloads an agent could send on purpose: one token in every wrapping; a large blob."""
    wrapped = [
        f"token_{TOKEN}.py",
        quote(f"auth={TOKEN}"),
        quote(quote(f"Authorization: Bearer {TOKEN}")),
        base64.b64encode(TOKEN.encode()).decode(),
        "".join(f"\\u{ord(c):04x}" for c in TOKEN),
        f"https://user:{TOKEN}@example.com/x?access_token={TOKEN}",
    ]
    command = {"tool_name": "Bash", "tool_input": {"command": " ".join(wrapped)}}
    blob = base64.b64encode(bytes(range(256)) * 600).decode()  # ~200 KB
    upload = {"tool_name": "Write", "tool_input": {"file_path": "a.bin", "content": blob}}
    return {"every wrapping of one token": json.dumps(command), "200 KB base64": json.dumps(upload)}


def timed(conn: apsw.Connection, text: str, runs: int) -> float:
    """Median seconds of one `redact_json` call."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        redact_json(conn, text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    conn = apsw.Connection(":memory:")
    recorded = {p.stem: p.read_text() for p in sorted(FIXTURES.glob("*.json"))}
    per_event = {name: timed(conn, text, args.runs) for name, text in recorded.items()}
    extra = {name: timed(conn, text, max(5, args.runs // 20)) for name, text in hostile().items()}
    values = sorted(per_event.values())
    result = {
        "recorded_payloads": len(values),
        "median_us": statistics.median(values) * 1e6,
        "p90_us": values[int(0.9 * (len(values) - 1))] * 1e6,
        "max_us": values[-1] * 1e6,
        "slowest": max(per_event, key=lambda k: per_event[k]),
        "hostile_ms": {name: seconds * 1e3 for name, seconds in extra.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"redact_json over {result['recorded_payloads']} recorded payloads:"
        f" median {result['median_us']:.0f} us, p90 {result['p90_us']:.0f} us,"
        f" max {result['max_us']:.0f} us ({result['slowest']})"
    )
    for name, ms in result["hostile_ms"].items():
        print(f"  {name}: {ms:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
