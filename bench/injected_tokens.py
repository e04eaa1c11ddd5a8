#!/usr/bin/env python3
"""What our recorded-state injections put into the model's requests in a resumed and
compacted session: the real CLI (2.1.330) against the scripted Messages API of the end-to-end
tests, with our hooks installed as a user installs them, once with `restore_delta` off (every
SessionStart gives the whole recorded state: the behaviour before issue 29's fourth part) and
once with it on (only what changed since what the session still holds).

    .venv/bin/python bench/injected_tokens.py [--cycles 1] [--turns 3] [--claude PATH] [--json]

The session (the case a user reported): a command fails 3 times (a failed approach and an
open error are recorded); then `cycles` times: `/compact` in a resumed run, and a resumed
prompt whose answer takes `turns` model requests (tool calls, then text). In every model
request of the resumed runs, each `<claude-session-recorded-state>` block is found and its
characters counted (summary requests apart); tokens are estimated as characters / 4 (no
tokenizer is run: the scripted API counts nothing). Also: the blocks in the last request,
the most times one statement (the failed approach's line) appears in one request, and the
characters the injection log holds (what the hooks gave, each once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # bench/ is a script beside the package, not part of it
sys.path.insert(0, str(REPO / "tests"))  # the scripted Messages API the end-to-end tests use

import apsw  # noqa: E402
from fake_api import FakeAnthropic, is_compaction, text, tool  # noqa: E402

from claude_session.services.background import daemon_control  # noqa: E402

CLAUDE_VERSION = "2.1.330"
CLI = REPO / ".venv" / "bin" / "claude-session"
OPEN, CLOSE = "<claude-session-recorded-state>", "</claude-session-recorded-state>"
STUCK = "cat settings.local.ini"
APPROACH = f"{STUCK}; failed because:"


def default_claude() -> Path:
    """Where tests/test_e2e_claude.py installs the real CLI (it installs it; this does not)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "claude-session-tests" / f"claude-code-{CLAUDE_VERSION}"
    return prefix / "node_modules" / ".bin" / "claude"


class Model:
    """Fails the same command 3 times, then in each resumed prompt runs `turns - 1` harmless
    commands and answers."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.phase = "work"
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.calls: dict[str, int] = {}  # tool calls made in each resumed prompt

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if is_compaction(body):
            return [text("<summary>Tried to read the settings file; it does not exist.</summary>")]
        self.requests.append((self.phase, body))
        messages = body.get("messages") or []
        used = [
            b
            for m in messages
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
        if self.phase == "work":
            return (
                [tool("Bash", command=STUCK, description="read")]
                if len(used) < 3
                else [text("I am stuck on the settings file.")]
            )
        calls = self.calls.get(self.phase, 0)
        if calls < self.turns - 1:
            self.calls[self.phase] = calls + 1
            return [tool("Bash", command=f"echo step {calls}", description="step")]
        return [text("Going on another way.")]


def blocks(body: dict[str, Any]) -> list[str]:
    """Every recorded-state block in a request, wherever Claude Code put it."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and OPEN in value:
            at = value.find(OPEN)
            while at >= 0:
                end = value.find(CLOSE, at)
                end = len(value) if end < 0 else end + len(CLOSE)
                found.append(value[at:end])
                at = value.find(OPEN, end)

    walk(body)
    return found


def run_claude(claude: Path, project: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(claude), "-p", *args, "--output-format", "json", "--dangerously-skip-permissions"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"claude failed: {done.stdout[-1000:]}{done.stderr[-1000:]}")
    return json.loads(done.stdout)


def session(claude: Path, delta: bool, cycles: int, turns: int) -> dict[str, Any]:
    """One scripted session in a fresh project, HOME and state folders."""
    base = Path(tempfile.mkdtemp(prefix="cs-bench-inject-"))
    project, home, state, data = (base / n for n in ("project", "home", "state", "data"))
    for folder in (project, home, state, data):
        folder.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    ours = dict(os.environ, CLAUDE_SESSION_STATE_DIR=str(state), CLAUDE_SESSION_DATA_DIR=str(data))
    subprocess.run([str(CLI), "--project", str(project), "install"], check=True, env=ours,
                   capture_output=True)  # fmt: skip
    (project / ".claude-session.json").write_text(json.dumps({"restore_delta": delta}))
    subprocess.run([str(CLI), "--project", str(project), "trust"], check=True, env=ours,
                   capture_output=True)  # fmt: skip
    model = Model(turns)
    try:
        with FakeAnthropic(model) as api:
            env = {
                "PATH": os.environ["PATH"],
                "HOME": str(home),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-real-key",
                "IS_SANDBOX": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_SESSION_STATE_DIR": str(state),
                "CLAUDE_SESSION_DATA_DIR": str(data),
            }
            sid = run_claude(claude, project, env, "BENCH: read the settings")["session_id"]
            for cycle in range(cycles):
                model.phase = f"compact-{cycle}"
                run_claude(claude, project, env, "/compact", "--resume", sid)
                model.phase = f"after-{cycle}"
                run_claude(claude, project, env, "go on", "--resume", sid)
    finally:
        daemon_control.stop(str(project))
    db = apsw.Connection(str(project / ".claude-session.db"), flags=apsw.SQLITE_OPEN_READONLY)
    logged = db.execute(
        "SELECT coalesce(sum(chars), 0), count(*) FROM injections WHERE kind = 'restore'"
    ).fetchall()[0]
    db.close()
    resumed = [(p, body) for p, body in model.requests if p != "work"]
    per_request = [sum(len(b) for b in blocks(body)) for _, body in resumed]
    last = blocks(resumed[-1][1]) if resumed else []
    shutil.rmtree(base, ignore_errors=True)
    chars = sum(per_request)
    return {
        "restore_delta": delta,
        "requests": len(resumed),
        "chars_in_requests": chars,
        "tokens_in_requests": round(chars / 4),
        "chars_per_request": round(chars / max(1, len(resumed))),
        "blocks_in_last_request": len(last),
        "chars_in_last_request": sum(len(b) for b in last),
        "most_copies_of_one_statement": max(
            (json.dumps(body, ensure_ascii=False).count(APPROACH) for _, body in resumed),
            default=0,
        ),
        "injected_chars": logged[0],
        "injections": logged[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1, help="compact + resumed prompt pairs")
    parser.add_argument("--turns", type=int, default=3, help="model requests per resumed prompt")
    parser.add_argument("--claude", type=Path, default=default_claude())
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.claude.exists():
        raise SystemExit(
            f"no Claude Code CLI at {args.claude} (tests/test_e2e_claude.py installs it)"
        )
    results = [session(args.claude, delta, args.cycles, args.turns) for delta in (False, True)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{args.cycles} compact + resume cycle(s), {args.turns} model requests per resumed prompt"
    )
    print("| restore_delta | requests | chars in requests | est. tokens (chars/4) | chars per"
          " request | blocks in the last request | most copies of one statement in a request |"
          " chars given (log) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {'on' if r['restore_delta'] else 'off (before)'} | {r['requests']} |"
            f" {r['chars_in_requests']:,} | {r['tokens_in_requests']:,} |"
            f" {r['chars_per_request']:,} | {r['blocks_in_last_request']} |"
            f" {r['most_copies_of_one_statement']} | {r['injected_chars']:,} |"
        )


if __name__ == "__main__":
    main()
