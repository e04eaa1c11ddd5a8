#!/usr/bin/env python3
"""Where the MCP hook server's answer path spends its time, per event: one session with subagents
sent to an in-process `McpHookServer.hook` (what runs between a call's arrival and its reply),
timed per event to its answer (an early one, for an event whose answer cannot depend on the
store) and to the end of its transaction, with the side effects run after each, as the
server's own thread does.
Figures, not pass/fail; repeatable under `valgrind --tool=callgrind` (instruction counts) and
cProfile, which wall times on a shared 2-core machine are not.

    .venv/bin/python bench/hook_profile.py [--turns 20] [--profile SubagentStart]
        [--after] [--snapshots] [--only EVENT] [--json]

`--profile EVENT` prints cProfile's top functions of that event's answer path; `--after`
profiles its side effects instead. `--only EVENT` runs that event's answer path (or with
`--after` its side effects), but the first of each, inside `functools.reduce`, the one C
function callgrind is told to count in, so that instruction counts are of that work alone:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        .venv/bin/python bench/hook_profile.py --only SubagentStart --turns 20
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from claude_session.core import mcp_hook_input  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "claude-code-2.1.330"


def fixture(name: str, project: Path, home: Path) -> dict[str, Any]:
    text = (FIXTURES / f"{name}.json").read_text()
    text = text.replace("/home/dev/.claude", str(home / ".claude"))
    data: dict[str, Any] = json.loads(text.replace("/home/dev/project", str(project)))
    return data


def session(project: Path, home: Path, turns: int) -> list[dict[str, Any]]:
    """A main agent's turns, each with a Write, a Bash and an Agent call whose subagent starts,
    reads and stops, as Claude Code 2.1.330 orders them."""
    sid = "prof-" + os.urandom(4).hex()
    out: list[dict[str, Any]] = []
    n = 0

    def add(name: str, **fields: Any) -> dict[str, Any]:
        data = fixture(name, project, home) | {"session_id": sid, "cwd": str(project)}
        data.update(fields)
        out.append(data)
        return data

    for turn in range(turns):
        add("UserPromptSubmit", prompt=f"turn {turn}: write, run and delegate")
        for kind in ("Write", "Bash"):
            n += 1
            tid = f"toolu_prof_{n:06d}"
            path = project / f"m{n % 7}.py"
            tool_input = (
                {"file_path": str(path), "content": f"V = {n}\n"}
                if kind == "Write"
                else {"command": "python3 m1.py", "description": "run"}
            )
            add(f"PreToolUse.{kind}", tool_use_id=tid, tool_input=tool_input)
            post = add(f"PostToolUse.{kind}", tool_use_id=tid, tool_input=tool_input)
            if kind == "Write":
                post["tool_response"]["filePath"] = str(path)
        n += 1
        agent_tid = f"toolu_prof_{n:06d}"
        agent = f"a{turn:04d}{os.urandom(6).hex()}"
        add("PreToolUse.Agent", tool_use_id=agent_tid)
        add("SubagentStart", agent_id=agent, agent_type="general-purpose")
        for _ in range(2):
            n += 1
            tid = f"toolu_prof_{n:06d}"
            add("PreToolUse.Read.subagent", tool_use_id=tid, agent_id=agent)
            add("PostToolUse.Read.subagent", tool_use_id=tid, agent_id=agent)
        add("SubagentStop", agent_id=agent, agent_type="general-purpose")
        post = add("PostToolUse.Agent", tool_use_id=agent_tid)
        post["tool_response"] = dict(post["tool_response"], agentId=agent, status="completed")
        add("Stop", last_assistant_message=f"turn {turn} done")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--profile", metavar="EVENT")
    parser.add_argument("--after", action="store_true", help="profile the side effects")
    parser.add_argument("--snapshots", action="store_true", help="workspace snapshots on")
    parser.add_argument("--only", metavar="EVENT", help="mark this event's calls for callgrind")
    parser.add_argument(
        "--answer-only",
        action="store_true",
        help="with --only: count to the early answer, and leave that event unstored",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-hook-profile-"))
    project, home = scratch / "project", scratch / "home"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    os.environ.update(
        HOME=str(home),
        CLAUDE_PROJECT_DIR=str(project),
        CLAUDE_SESSION_STATE_DIR=str(scratch / "state"),
        CLAUDE_SESSION_DATA_DIR=str(scratch / "data"),
        CLAUDE_SESSION_NO_DAEMON="1",
    )
    if not args.snapshots:
        os.environ["CLAUDE_SESSION_NO_SNAPSHOTS"] = "1"
    os.chdir(project)
    from claude_session.runtime import mcp_transport
    from claude_session.services.setup import installer

    server = mcp_transport.McpHookServer(lambda data: None)
    template = mcp_hook_input.input_template(installer.package_folder())
    # The SessionStart a command hook records first (not timed here: see bench/bench.py).
    start = fixture("SessionStart.startup", project, home)
    events = session(project, home, args.turns)
    sid = events[0]["session_id"]
    start |= {"session_id": sid, "cwd": str(project)}
    took: dict[str, list[float]] = {}
    after_took: dict[str, list[float]] = {}
    stored: dict[str, list[float]] = {}  # to the end of the transaction (after an early answer)
    profiler = cProfile.Profile() if args.profile else None
    seen: dict[str, int] = {}
    for payload in [start, *events]:
        name = payload["hook_event_name"]
        install = template[mcp_hook_input.INSTALL_ARGUMENT]
        arguments = mcp_hook_input.arguments_for(payload, install)
        arguments = {k: v for k, v in arguments.items() if k in template}
        chosen = name == args.profile and not args.after
        if chosen and profiler is not None:
            profiler.enable()
        started = time.perf_counter()
        answered: list[float] = []
        seen[name] = seen.get(name, 0) + 1
        warm = seen[name] > 1  # the first of each event loads its modules: not counted
        stop_at_answer = args.answer_only and warm and name == args.only

        def reply_early(stop: bool = stop_at_answer, into: list[float] = answered) -> None:
            into.append(time.perf_counter())
            if stop:  # counted to the answer only: this event is not stored
                raise Answered

        hooked = functools.partial(
            server.hook, arguments, time.time(), started, reply_early=reply_early
        )
        if warm and name == args.only and not args.after:
            _, _, outcome = counted(hooked)
        else:
            _, _, outcome = hooked()
        ended = time.perf_counter()
        took.setdefault(name, []).append(((answered or [ended])[0] - started) * 1000)
        stored.setdefault(name, []).append((ended - started) * 1000)
        if chosen and profiler is not None:
            profiler.disable()
        if outcome is not None and outcome.effects:
            chosen = name == args.profile and args.after
            if chosen and profiler is not None:
                profiler.enable()
            begun = time.perf_counter()
            if warm and name == args.only and args.after:
                counted(outcome.finish)
            else:
                outcome.finish()
            after_took.setdefault(name, []).append((time.perf_counter() - begun) * 1000)
            if chosen and profiler is not None:
                profiler.disable()
    result = {
        name: {
            "n": len(v),
            "median_ms": round(statistics.median(v), 3),
            "stored_median_ms": round(statistics.median(stored[name]), 3),
            "after_median_ms": round(statistics.median(after_took.get(name) or [0.0]), 3),
        }
        for name, v in sorted(took.items())
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"answer path per event ({args.turns} turns; side effects run after each answer):")
        for name, figures in result.items():
            print(
                f"  {name:20} n={figures['n']:4}  answer {figures['median_ms']:7.3f} ms"
                f"  stored {figures['stored_median_ms']:7.3f} ms"
                f"  after {figures['after_median_ms']:7.3f} ms"
            )
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(35)
        stats.sort_stats("tottime").print_stats(20)


class Answered(Exception):
    """`--answer-only`: the early answer is given; the count stops there."""


def counted(work: Any) -> Any:
    """`work()`, run inside functools.reduce: callgrind counts only there (see the docstring)."""
    try:
        return functools.reduce(lambda _first, _second: work(), (None, None))
    except Answered:
        return "", False, None


if __name__ == "__main__":
    main()
