#!/usr/bin/env python3
"""Our hooks' cost by Claude Code's own clock: the real CLI (2.1.330) runs the scripted
session of bench/real_cli.py (tests/fake_api.py), once with our hooks installed and once with
do-nothing hooks of the same transport on the same events, and this prints, per event, the
median and p90 of the `durationMs` Claude Code wrote into its transcripts for each, and the
ratio of ours to the do-nothing hooks' medians with a 95% bootstrap interval.

    .venv/bin/python bench/hook_durations.py [--rounds 1] [--tool-calls 40] [--subagents 1]
        [--subagent-calls 10] [--modes ours-mcp,null-mcp,ours-command,null-command]
        [--claude PATH] [--keep] [--json] [--no-snapshots]

The modes, each in a fresh project, HOME and state folders of its own:
  ours-mcp      `install --transport mcp`: mcp_tool hooks to our MCP hook server (command hooks on
                the events it does not carry: SessionStart, SessionEnd, ...).
  null-mcp      the same shape with nothing behind it: mcp_tool hooks to a stdio MCP server
                (bench/null_mcp_server.py) whose tool answers at once, `cat >/dev/null`
                command hooks on the other events.
  ours-command  `install --transport command`: a hook process per event.
  null-command  `cat >/dev/null` command hooks on the same events.

What Claude Code times (docs/guides/hooks.md): every mcp_tool hook run; a command hook only
when it prints something (ours and `cat` print nothing) or fails, and every Stop hook (the Stop
summary). So the command modes are compared at Stop alone; their other events are counted from
our own records (ours) and reported as untimed. The figures are parsed by the product's own
reader (services/cost/hook_lines.py), as `claude-session hooks` reads them. p90: nearest rank.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # real_cli, beside this script
import real_cli
from real_cli import Plan, default_claude, run_env, settle

from claude_session.core import hook_contract
from claude_session.services.cost import hook_lines, hooks_report, transcripts
from claude_session.services.setup import installer

MODES = ("ours-mcp", "null-mcp", "ours-command", "null-command")
NULL_SERVER = "null-hooks"
NULL_TOOL = "noop"
NULL_COMMAND = "cat >/dev/null"


def null_settings(transport: str) -> dict[str, Any]:
    """Do-nothing hooks on the events ours take, of the same transport per event."""
    hooks: dict[str, Any] = {}
    for event in installer.installed_events():
        if transport == "mcp" and event in installer.MCP_EVENTS:
            handler: dict[str, Any] = {
                "type": "mcp_tool",
                "server": NULL_SERVER,
                "tool": NULL_TOOL,
                "input": {"event": "${hook_event_name}"},
                "timeout": installer.DEFAULT_TIMEOUT,
            }
        else:
            handler = {"type": "command", "command": NULL_COMMAND, "timeout": 10}
        hooks[event] = [{"hooks": [handler]}]
    return {"hooks": hooks}


def install(mode: str, project: Path, env: dict[str, str], claude: Path) -> None:
    who, _, transport = mode.partition("-")
    if who == "ours":
        real_cli.install(transport, project, env, claude, "")
        return
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(null_settings(transport), indent=2))
    if transport == "mcp":
        server = Path(__file__).resolve().parent / "null_mcp_server.py"
        argv = [str(claude), "mcp", "add", "-s", "local", NULL_SERVER, "--", sys.executable]
        subprocess.run([*argv, str(server)], cwd=project, env=env, check=True, capture_output=True)


def timed_runs(home: Path) -> list[dict[str, Any]]:
    """Every run Claude Code timed in the session's transcripts (main and subagents'), each
    Stop hook's once (the Stop summary's, not its attachment's as well)."""
    runs: list[dict[str, Any]] = []
    for path in sorted((home / ".claude" / "projects").rglob("*.jsonl")):
        main = "subagents" not in path.parts
        entries = [transcripts.parse(line) for line in path.read_bytes().splitlines() if line]
        found = [e for e in entries if e and e.get("type") == hook_lines.KIND]
        ends = tuple(range(len(found)))
        runs += hook_lines.runs_of(found, ends, None, main, transcripts.timestamp)
    summarized = {r["tool_use_id"] for r in runs if r["outcome"] == "stop_summary"}
    return [
        r
        for r in runs
        if r["outcome"] == "stop_summary"
        or r["event"] not in ("Stop", "SubagentStop")
        or r["tool_use_id"] not in summarized
    ]


def is_measured_hook(mode: str, command: str) -> bool:
    """Whether a run is of the mode's hooks (not Claude Code's own or another's)."""
    if mode.startswith("ours"):
        return command == hook_contract.HOOK_RUN_NAME or command.endswith(hook_contract.MARKER)
    return command in (f"{NULL_SERVER}/{NULL_TOOL}", NULL_COMMAND)


def run_once(
    mode: str, round_no: int, claude: Path, base: Path, plan: Plan, snapshots: bool = True
) -> dict[str, Any]:
    scratch, project, script, api = real_cli.new_run(mode, round_no, base, plan)
    with api:
        env = run_env(scratch, api.url)
        if not snapshots:
            env["CLAUDE_SESSION_NO_SNAPSHOTS"] = "1"
        install(mode, project, env, claude)
        started = time.perf_counter()
        done = real_cli.run_claude(claude, project, env)
        wall = time.perf_counter() - started
    settle(project, env)
    by_event: dict[str, list[float]] = {}
    untimed: dict[str, int] = {}  # runs Claude Code wrote without a time (a JSON answer)
    for run in timed_runs(scratch / "home"):
        if not is_measured_hook(mode, str(run["command"])):
            continue
        event = str(run["event"])
        if run["duration_ms"] is None:
            untimed[event] = untimed.get(event, 0) + 1
        else:
            by_event.setdefault(event, []).append(float(run["duration_ms"]))
    return {
        "mode": mode,
        "round": round_no,
        "exit_code": done.returncode,
        "wall_s": round(wall, 2),
        "tool_calls": script.total(),
        "by_event": by_event,
        "untimed": untimed,
        "folder": str(scratch),
    }


def pooled(runs: list[dict[str, Any]], mode: str, event: str) -> list[float]:
    """Every round's durations of one mode at one event."""
    return [v for r in runs if r["mode"] == mode for v in r["by_event"].get(event, [])]


def summarize(runs: list[dict[str, Any]], modes: list[str]) -> dict[str, dict[str, Any]]:
    """mode -> event -> {n, median_ms, p90_ms}, over every round's runs."""
    table: dict[str, dict[str, Any]] = {}
    for mode in modes:
        events = sorted({e for r in runs if r["mode"] == mode for e in r["by_event"]})
        table[mode] = {}
        for event in events:
            values = pooled(runs, mode, event)
            table[mode][event] = {
                "n": len(values),
                "median_ms": statistics.median(values),
                "p90_ms": hooks_report.p90(values),
            }
        untimed: dict[str, int] = {}
        for run in (r for r in runs if r["mode"] == mode):
            for event, n in run["untimed"].items():
                untimed[event] = untimed.get(event, 0) + n
        table[mode]["_untimed"] = untimed
    return table


def ratio_interval(
    ours: list[float], null: list[float], draws: int = 2000, seed: int = 1
) -> tuple[float, float, float]:
    """The ratio of the two medians, and its 95% bootstrap interval (each side resampled with
    replacement): Claude Code's durations spread from 1 to 40 ms for a hook that does nothing,
    so one run's medians differ by more than the hooks do, and the interval says how far the
    ratio can be trusted."""
    chance = random.Random(seed)
    ratios = sorted(
        statistics.median(chance.choices(ours, k=len(ours)))
        / statistics.median(chance.choices(null, k=len(null)))
        for _ in range(draws)
    )
    point = statistics.median(ours) / statistics.median(null)
    return point, ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def print_ratios(runs: list[dict[str, Any]], modes: list[str]) -> None:
    for transport in ("mcp", "command"):
        ours, null = f"ours-{transport}", f"null-{transport}"
        if ours not in modes or null not in modes:
            continue
        print(f"{ours} / {null}, ratio of medians [95% bootstrap interval]:")
        events = sorted({e for r in runs if r["mode"] in (ours, null) for e in r["by_event"]})
        for event in events:
            mine, theirs = pooled(runs, ours, event), pooled(runs, null, event)
            if mine and theirs and statistics.median(theirs) > 0:
                point, low, high = ratio_interval(mine, theirs)
                print(f"  {event:<20} {point:.2f} [{low:.2f}-{high:.2f}]")


def print_report(table: dict[str, dict[str, Any]], modes: list[str]) -> None:
    events = sorted({e for mode in modes for e in table[mode] if e != "_untimed"})
    print("Claude Code's durationMs per event: median / p90 (n runs timed); - : none timed")
    print(f"{'event':<20}" + "".join(f"{m:>26}" for m in modes))
    for event in events:
        cells = []
        for mode in modes:
            found = table[mode].get(event)
            cells.append(
                f"{found['median_ms']:.0f} / {found['p90_ms']:.0f} ms ({found['n']})"
                if found
                else "-"
            )
        print(f"{event:<20}" + "".join(f"{c:>26}" for c in cells))
    for mode in modes:
        untimed = table[mode].get("_untimed")
        if untimed:
            print(f"{mode}: runs Claude Code wrote without a time (JSON answers): {untimed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tool-calls", type=int, default=40, help="a session's, subagents'")
    parser.add_argument("--subagents", type=int, default=1)
    parser.add_argument("--subagent-calls", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated")
    parser.add_argument("--claude", type=Path, default=default_claude())
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-snapshots",
        action="store_true",
        help="CLAUDE_SESSION_NO_SNAPSHOTS=1: our hooks without the capture processes",
    )
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"unknown modes: {', '.join(sorted(unknown))}")
    plan = Plan(args.tool_calls, args.subagents, args.subagent_calls)
    base = Path(tempfile.mkdtemp(prefix="bench-hook-durations-"))
    runs = []
    try:
        for round_no in range(args.rounds):
            order = modes[round_no % len(modes) :] + modes[: round_no % len(modes)]
            for mode in order:
                run = run_once(
                    mode, round_no, args.claude, base, plan, snapshots=not args.no_snapshots
                )
                if run["exit_code"] != 0:
                    print(
                        f"{mode} round {round_no}: claude exited {run['exit_code']}",
                        file=sys.stderr,
                    )
                runs.append(run)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    table = summarize(runs, modes)
    if args.json:
        print(json.dumps({"runs": runs, "by_mode": table}, indent=2))
    else:
        print_report(table, modes)
        print_ratios(runs, modes)
        walls = {m: [r["wall_s"] for r in runs if r["mode"] == m] for m in modes}
        print("wall time per run (s): " + ", ".join(f"{m} {w}" for m, w in walls.items()))


if __name__ == "__main__":
    main()
