"""Side by side with ccusage (npm `ccusage`, run offline, on its own bundled prices) on the
same transcripts: real sessions of the real Claude Code CLI 2.1.332 against a scripted API
(a model both price, its compaction, a fork of it, Claude Code's default model) and an old
transcript of per-line `costUSD` lines (no `type`), which both read.

Per model, every token and every cent is the same but for differences each named by its cause:
- Claude Code's compaction request is on no transcript line: ccusage never sees it; we count it
  from Claude Code's cost-state (the helpers' rows);
- ccusage prices every cache write at the 5-minute rate; a 1-hour write costs 2x input, not
  1.25x (Claude Code's own figures, which we follow);
- a model ccusage has no price for costs 0 there.
Nothing else may differ. ccusage 18.0.11 is the newest that runs here: 19 needs Node 22, and 20
ships a native binary per platform that this registry lacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import WheelInstall, install_lock, installed_project, query, wait_for, wheel_cli
from fake_api import FakeAnthropic, text, tool
from test_e2e_claude import claude_binary, run_claude

from claude_session.core import prices, usage
from claude_session.services.background import daemon_control

pytestmark = pytest.mark.e2e

CCUSAGE_VERSION = "18.0.11"
SONNET = "claude-sonnet-4-5"  # priced by both
LEGACY = "claude-3-5-sonnet-20241022"
LEGACY_SESSION = "01d5e551-0000-4000-8000-000000000001"
TOKENS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadTokens",
    "cache_creation_tokens": "cacheCreationTokens",
}


def ccusage_binary() -> Path:
    """ccusage from the npm registry, installed once into a cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "claude-session-tests" / f"ccusage-{CCUSAGE_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "ccusage"
    with install_lock(prefix):
        if not binary.exists():
            _install(prefix)
    return binary


def _install(prefix: Path) -> None:
    npm = shutil.which("npm")
    assert npm, "npm is needed to install ccusage for the side-by-side test"
    prefix.mkdir(parents=True, exist_ok=True)
    package = f"ccusage@{CCUSAGE_VERSION}"
    subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package],
        check=True,
        capture_output=True,
        timeout=600,
    )


def usage_of(n: int) -> dict[str, Any]:
    """Each response its own counts; most cache writes for an hour, as Claude Code asks."""
    five, hour = 100 + n, 2000 + 13 * n
    return {
        "input_tokens": 1000 + n,
        "output_tokens": 200 + n,
        "cache_read_input_tokens": 10_000 * n,
        "cache_creation_input_tokens": five + hour,
        "cache_creation": {"ephemeral_5m_input_tokens": five, "ephemeral_1h_input_tokens": hour},
    }


def script(project: Path) -> Any:
    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages") or []
        if messages and "tool_result" in json.dumps(messages[-1]):
            return [text("done")]
        return [tool("Write", file_path=str(project / f"f{len(messages)}.txt"), content="x\n")]

    return answer


def legacy_lines(cwd: str) -> list[dict[str, Any]]:
    """Claude Code's oldest transcript shape: no `type`, each response its own costUSD (one
    streamed twice, as it wrote them)."""
    lines = []
    for n, cost in ((1, 0.0123), (2, 0.0456), (2, 0.0456)):
        lines.append(
            {
                "timestamp": f"2025-03-0{n}T10:00:00.000Z",
                "sessionId": LEGACY_SESSION,
                "cwd": cwd,
                "version": "0.2.50",
                "requestId": f"req_legacy{n}",
                "costUSD": cost,
                "message": {
                    "id": f"msg_legacy{n}",
                    "model": LEGACY,
                    "usage": {"input_tokens": 10 * n, "output_tokens": 5 * n},
                },
            }
        )
    return lines


def ccusage_by_model(binary: Path, config: Path) -> dict[str, dict[str, float]]:
    done = subprocess.run(
        [str(binary), "session", "--json", "--offline"],
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(config), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, dict[str, float]] = {}
    for session in json.loads(done.stdout)["sessions"]:
        for part in session["modelBreakdowns"]:
            row = found.setdefault(part["modelName"], dict.fromkeys([*TOKENS, "cost"], 0.0))
            for ours, theirs in TOKENS.items():
                row[ours] += part[theirs]
            row["cost"] += part["cost"]
    return found


def test_every_difference_with_ccusage_has_a_named_cause(
    tmp_path: Path, wheel_install: WheelInstall
) -> None:
    ccusage = ccusage_binary()
    binary = claude_binary("2.1.332")
    project, home = installed_project(tmp_path, wheel_install)
    config = home / ".claude"
    try:
        with FakeAnthropic(script(project), usage_of) as api:
            first = run_claude(binary, project, home, api, "write", "--model", SONNET)
            sid = first["session_id"]
            run_claude(binary, project, home, api, "/compact", "--resume", sid, "--model", SONNET)
            run_claude(
                binary, project, home, api, "write more", "--resume", sid, "--fork-session",
                "--model", SONNET,
            )  # fmt: skip
            run_claude(binary, project, home, api, "write")  # Claude Code's default model
        # an old transcript, and its session as the hooks would have recorded it
        old = config / "projects" / "-legacy" / f"{LEGACY_SESSION}.jsonl"
        old.parent.mkdir(parents=True)
        old.write_text("".join(json.dumps(line) + "\n" for line in legacy_lines(str(project))))
        settings = json.loads((project / ".claude" / "settings.local.json").read_text())
        command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        payload = {"session_id": LEGACY_SESSION, "transcript_path": str(old), "cwd": str(project)}
        payload |= {"hook_event_name": "SessionStart", "source": "startup"}
        subprocess.run(
            ["sh", "-c", command],
            input=json.dumps(payload),
            text=True,
            check=True,
            cwd=project,
            env={"PATH": "/usr/bin:/bin", "HOME": str(home)}
            | {k: v for k, v in os.environ.items() if k.startswith("CLAUDE_SESSION_")},
        )
        assert wait_for(
            lambda: len(query(project, "SELECT DISTINCT session_id FROM transcript_files")) >= 4,
            60,
        )
    finally:
        daemon_control.stop(str(project))
    cli = wheel_cli(wheel_install, project, home)
    ours = {r["model"]: r for r in json.loads(cli("cost", "--by", "model", "--json"))["rows"]}
    theirs = ccusage_by_model(ccusage, config)
    assert set(ours) == set(theirs), (ours, theirs)
    helpers: dict[str, dict[str, Any]] = {
        row[0]: dict(zip([*TOKENS, "cost"], row[1:], strict=True))
        for row in query(
            project,
            "SELECT model, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,"
            " cost_usd FROM message_usage WHERE agent_id = ?",
            (usage.HELPERS,),
        )
    }
    assert set(helpers) == {SONNET}, helpers  # the compaction's request, on no line
    hour = dict(
        query(
            project,
            "SELECT model, sum(cache_1h_tokens) FROM message_usage WHERE agent_id != ?"
            " GROUP BY model",
            (usage.HELPERS,),
        )
    )
    explained = {}
    for model, row in ours.items():
        left = helpers.get(model, dict.fromkeys([*TOKENS, "cost"], 0))
        for kind in TOKENS:  # cause: the compaction request is on no transcript line
            assert row[kind] == theirs[model][kind] + left[kind], (model, kind)
        cost = row["cost_usd"] - left["cost"]
        if theirs[model]["cost"] == 0:  # cause: ccusage has no price for this model
            assert prices.lookup(model)[0] is not None and cost > 0, model
            explained[model] = "no price in ccusage"
            continue
        price, _ = prices.lookup(model)
        assert price is not None
        # cause: ccusage prices 1-hour cache writes at the 5-minute rate
        dearer = (hour.get(model) or 0) * (price.cache_write_1h - price.cache_write_5m) / 1e6
        assert cost - dearer == pytest.approx(theirs[model]["cost"], rel=1e-9, abs=1e-12), model
        explained[model] = "1-hour writes" if dearer else "none"
    assert explained == {
        SONNET: "1-hour writes",
        "claude-opus-5-5": "no price in ccusage",
        LEGACY: "none",  # both take the line's own costUSD, the streamed copy once
    }
    assert ours[LEGACY]["cost_usd"] == pytest.approx(0.0123 + 0.0456)
