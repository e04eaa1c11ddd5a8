"""Where a cost is shown, as a user runs the commands: an estimate is marked in `cost` (text and
JSON), `status`, the status line and the web page; an old transcript's per-line costUSD is
read and its 2.1.38-era `progress` lines are known (not "not understood"); an untrusted
database's `cost` says, in text too, that its figures are the stored ones; the price table
is refreshed from LiteLLM's data without a release, and used.

The transcripts are written in the shape Claude Code writes them (test_transcripts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli, web_pages
from inproc import Recorder
from test_transcripts import PROMPT, SESSION, assistant, env, rows, start, user, write
from test_transcripts import main_path as main_path  # the fixture

from claude_session.services.cost import transcripts

MYSTERY = "claude-mystery-9"


def test_an_estimate_is_marked_wherever_a_cost_is_shown(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    write(
        main_path,
        [
            user(PROMPT, 1),
            assistant("m1", 2, model="claude-opus-5-5", tokens=(1000, 100, 0, 0)),
            assistant("m2", 3, model=MYSTERY, tokens=(1000, 100, 0, 0)),
        ],
    )
    transcripts.catch_up(recorder.conn)
    recorder.close()
    shown = run_cli(project, "cost", "--session", SESSION, "--by", "model", **env(config))
    assert shown.returncode == 0, shown.stderr
    line = next(row for row in shown.stdout.splitlines() if MYSTERY in row)
    assert "~$" in line, shown.stdout
    assert f"~ an estimate: no price is known for {MYSTERY}" in shown.stdout
    found = json.loads(
        run_cli(
            project, "cost", "--session", SESSION, "--by", "model", "--json", **env(config)
        ).stdout
    )
    assert found["estimated_models"] == [MYSTERY] and found["total"]["estimated"] is True
    by_model = {r["model"]: r for r in found["rows"]}
    assert (
        by_model[MYSTERY]["estimated"] is True and by_model["claude-opus-5-5"]["estimated"] is False
    )
    # priced as Claude Code prices a model it does not know: its default tier
    assert by_model[MYSTERY]["cost_usd"] == by_model["claude-opus-5-5"]["cost_usd"]
    status = run_cli(project, "status", **env(config))
    assert "~$" in status.stdout and "an estimate" in status.stdout, status.stdout
    line = run_cli(
        project, "statusline", stdin=json.dumps({"session_id": SESSION, "cwd": str(project)})
    ).stdout
    assert line.startswith("cs: ~$"), line
    for listing in (("sessions",), ("agents", "--all")):  # the listings with a cost column
        shown = run_cli(project, *listing, **env(config))
        assert shown.returncode == 0 and "~$" in shown.stdout, (listing, shown.stdout)
    agents = json.loads(run_cli(project, "agents", "--all", "--json", **env(config)).stdout)
    assert [a["estimated"] for a in agents] == [1]
    html, listing = web_pages(str(project), f"session/{SESSION[:8]}", "")
    assert "cost ~$" in html and ">~$" in listing


def legacy(message_id: str, at: str, cost: float, model: str = "claude-3-5-sonnet-20241022") -> Any:
    """A line of Claude Code's oldest transcripts: no `type`, its own costUSD."""
    return {
        "timestamp": at,
        "sessionId": SESSION,
        "costUSD": cost,
        "message": {
            "id": message_id,
            "model": model,
            "usage": {"input_tokens": 7, "output_tokens": 3},
        },
    }


def test_old_transcripts_are_read_whole(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    progress = [
        {"type": "progress", "data": {"type": kind}, "timestamp": "2025-01-01T00:00:00.000Z"}
        for kind in ("hook_progress", "bash_progress", "agent_progress")
    ]
    write(
        main_path,
        [
            legacy("old1", "2025-01-01T00:00:01.000Z", 0.25),
            *progress,
            legacy("old2", "2025-01-01T00:00:02.000Z", 0.5),
            legacy("old2", "2025-01-01T00:00:02.000Z", 0.5),  # streamed twice: counted once
        ],
    )
    transcripts.catch_up(recorder.conn)
    found = rows(recorder, "SELECT message_id, cost_usd, cost_source FROM message_usage")
    assert found == [
        {"message_id": "old1", "cost_usd": 0.25, "cost_source": "claude_code"},
        {"message_id": "old2", "cost_usd": 0.5, "cost_source": "claude_code"},
    ]
    skipped = rows(recorder, "SELECT lines_skipped FROM transcript_files")
    assert skipped == [{"lines_skipped": 0}]  # progress lines are known, not "not understood"
    recorder.close()
    doctor = run_cli(project, "doctor", **env(config))
    assert "not understood" not in doctor.stdout, doctor.stdout


def test_an_untrusted_database_says_its_figures_are_the_stored_ones(
    recorder: Recorder, main_path: Path, project: Path, config: Path
) -> None:
    start(recorder, main_path)
    write(main_path, [user(PROMPT, 1), assistant("m1", 2)])
    transcripts.catch_up(recorder.conn)
    recorder.close()
    assert run_cli(project, "trust", "--revoke", **env(config)).returncode == 0
    write(main_path, [assistant("m2", 3)])  # not read: this database names no transcript now
    shown = run_cli(project, "cost", **env(config))
    assert shown.returncode == 0, shown.stderr
    assert "not read again:" in shown.stdout and "the ones stored" in shown.stdout, shown.stdout
    found = json.loads(run_cli(project, "cost", "--json", **env(config)).stdout)
    assert found["untrusted"] and found["total"]["messages"] == 1


def litellm(price: float) -> dict[str, Any]:
    """LiteLLM's model_prices_and_context_window.json, a model of it (per token)."""
    return {
        "claude-opus-9-1": {
            "litellm_provider": "anthropic",
            "input_cost_per_token": price / 1e6,
            "output_cost_per_token": 5 * price / 1e6,
            "cache_read_input_token_cost": price / 1e7,
            "cache_creation_input_token_cost": 1.25 * price / 1e6,
        },
        "gpt-unrelated": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6},
        "anthropic.claude-opus-9-1-v1:0": {
            "litellm_provider": "bedrock",
            "input_cost_per_token": 1,
        },
    }


def test_prices_are_refreshed_without_a_release(
    recorder: Recorder, main_path: Path, project: Path, config: Path, tmp_path: Path
) -> None:
    start(recorder, main_path)
    write(
        main_path,
        [user(PROMPT, 1), assistant("m1", 2, model="claude-opus-9-1", tokens=(1_000_000, 0, 0, 0))],
    )
    data = tmp_path / "litellm.json"
    data.write_text(json.dumps(litellm(7.0)))
    updated = run_cli(project, "prices", "update", "--from", str(data), "--json", **env(config))
    assert updated.returncode == 0, updated.stderr
    assert json.loads(updated.stdout)["models"] == ["claude-opus-9-1"]
    listed = json.loads(run_cli(project, "prices", "--json", **env(config)).stdout)
    assert listed["models"]["claude-opus-9-1"]["cache_write_1h"] == 14.0  # 2x input
    found = json.loads(
        run_cli(project, "cost", "--session", SESSION, "--json", **env(config)).stdout
    )
    assert found["total"]["cost_usd"] == 7.0 and found["total"]["estimated"] is False
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"claude-x-1": {"input_cost_per_token": "free"}}))
    refused = run_cli(project, "prices", "update", "--from", str(bad), **env(config))
    assert refused.returncode == 1 and "prices not updated" in refused.stderr
    assert run_cli(project, "prices", "update", "--remove", **env(config)).returncode == 0
    recorder.close()
