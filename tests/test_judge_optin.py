"""The judge calls a paid model, so it is opt-in: off by default; `install` on a terminal asks
(no by default) and says what a call costs, elsewhere it says how to turn it on; a day's
budget holds it back (and `status` says so); its spend shows in `cost`, apart."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from conftest import PYTHON, answer_on_terminal, hook_env, query, run_cli, write_config

from claude_session.services.setup import installer

CLI = str(Path(PYTHON).parent / "claude-session")
ON = "claude-session config --set judge_events=TaskCompleted"


def costly_judge(tmp_path: Path, cost: float) -> str:
    """A judge that answers like `claude -p --output-format json`, reporting `cost`."""
    script = tmp_path / "judge.py"
    envelope = {"result": '{"decision": "allow", "reason": "done"}', "total_cost_usd": cost}
    script.write_text(
        textwrap.dedent(f"""
        import pathlib, sys
        sys.stdin.read()
        calls = pathlib.Path({str(tmp_path / "calls")!r})
        calls.write_text(calls.read_text() + "x" if calls.exists() else "x")
        print({json.dumps(envelope)!r})
        """)
    )
    return f"{sys.executable} {script}"


def task_completed(project: Path, n: int) -> installer.HookRun:
    payload = {
        "session_id": "judge-budget",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "TaskCompleted",
        "task_id": str(n),
        "task_subject": f"task {n}",
    }
    command = installer.hook_command("TaskCompleted")
    return installer.run_hook_command(command, json.dumps(payload).encode(), project, timeout=60)


def test_the_judge_is_off_by_default(project: Path, tmp_path: Path) -> None:
    write_config(project, {"judge_command": costly_judge(tmp_path, 0.01)})  # no judge_events
    assert task_completed(project, 1).returncode == 0
    assert not (tmp_path / "calls").exists()
    assert query(project, "SELECT count(*) FROM llm_verdicts") == [(0,)]
    shown = json.loads(run_cli(project, "config", "--json").stdout)
    assert "judge_events" in json.dumps(shown)
    status = run_cli(project, "status")
    assert "judge: off" in " ".join(status.stdout.split())


def test_install_off_a_terminal_leaves_it_off_and_says_how(project: Path) -> None:
    done = run_cli(project, "install")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert ON in text and "judge" in text and "an estimate" in text
    assert not (project / ".claude-session.json").exists()  # nothing turned on


def on_terminal(project: Path, answer: bytes) -> tuple[int, str]:
    """`install` with a terminal for stdin and stdout, answering the judge's question."""
    argv = [CLI, "--project", str(project), "install"]
    return answer_on_terminal(argv, b"[y/N]", answer, env=hook_env(project), seconds=90)


def test_install_on_a_terminal_asks_with_the_cost_and_yes_turns_it_on(project: Path) -> None:
    code, text = on_terminal(project, b"y")
    assert code == 0, text
    assert "Turn on the judge?" in text and "a call (an estimate)" in text and "$0.0" in text
    assert "the judge is on" in text
    written = json.loads((project / ".claude-session.json").read_text())
    assert written["judge_events"] == "TaskCompleted"
    shown = run_cli(project, "config")  # written through us: trusted, no problem
    assert shown.returncode == 0 and "untrusted" not in shown.stdout + shown.stderr


def test_install_on_a_terminal_no_by_default(project: Path) -> None:
    code, text = on_terminal(project, b"")
    assert code == 0, text
    assert "the judge stays off" in text and ON in text
    assert not (project / ".claude-session.json").exists()


def test_past_the_days_budget_the_judge_skips_says_so_and_its_spend_is_apart(
    project: Path, tmp_path: Path
) -> None:
    write_config(
        project,
        {
            "judge_command": costly_judge(tmp_path, 0.6),
            "judge_events": "TaskCompleted",
            "judge_budget_usd_per_day": 1.0,
        },
    )
    for n in range(3):
        assert task_completed(project, n).returncode == 0
    assert (tmp_path / "calls").read_text() == "xx"  # 0.6, 1.2: the third call never made
    found = query(project, "SELECT decision, cost_usd FROM llm_verdicts ORDER BY id")
    assert found == [("allow", 0.6), ("allow", 0.6), ("skipped", None)]
    status = run_cli(project, "status")
    text = " ".join(status.stdout.split())
    assert "judge: TaskCompleted, $1.20 spent today of $1.00" in text
    assert "judge skipped 1x today" in text and "judge_budget_usd_per_day" in text
    state = json.loads(run_cli(project, "status", "--json").stdout)["judge"]
    assert state["skipped_today"] == 1 and state["spent_today_usd"] == 1.2
    cost = json.loads(run_cli(project, "cost", "--json").stdout)
    assert cost["claude_session_judge"] == {"cost_usd": 1.2, "calls": 2}
    shown = " ".join(run_cli(project, "cost").stdout.split())
    assert "claude-session's own spend (its judge, not in the total): $1.20 in 2 call(s)" in shown
