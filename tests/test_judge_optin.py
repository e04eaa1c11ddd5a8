"""The judge calls a paid model, so it is opt-in: off by default; `install` on a terminal asks
(no by default) and says what a call costs, elsewhere it says how to turn it on; a day's
budget holds it back (and `status` says so); its spend shows in `cost`, apart."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import PYTHON, answer_on_terminal, hook_env, query, run_cli, write_config

from claude_session.core import db, verdicts
from claude_session.services import judge
from claude_session.services.setup import installer

CLI = str(Path(PYTHON).parent / "claude-session")
ON = "claude-session config --set judge_events=TaskCompleted"


def costly_judge(tmp_path: Path, cost: float, sleep: float = 0.0) -> str:
    """A judge that answers like `claude -p --output-format json`, reporting `cost`, after
    `sleep` seconds; each call adds a file to tmp_path/calls."""
    script = tmp_path / "judge.py"
    envelope = {"result": '{"decision": "allow", "reason": "done"}', "total_cost_usd": cost}
    script.write_text(
        textwrap.dedent(f"""
        import os, pathlib, sys, time
        sys.stdin.read()
        calls = pathlib.Path({str(tmp_path / "calls")!r})
        calls.mkdir(exist_ok=True)
        (calls / str(os.getpid())).write_text("x")
        time.sleep({sleep})
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
    # 0.6 spent; the next call reserves the dearest call reported (0.6): 1.2 would pass the
    # budget, so neither later call is made
    assert len(list((tmp_path / "calls").iterdir())) == 1
    found = query(project, "SELECT decision, cost_usd FROM llm_verdicts ORDER BY id")
    assert found == [("allow", 0.6), ("skipped", None), ("skipped", None)]
    status = run_cli(project, "status")
    text = " ".join(status.stdout.split())
    assert "judge: TaskCompleted, $0.60 spent today of $1.00" in text
    assert "judge skipped 2x today" in text and "judge_budget_usd_per_day" in text
    state = json.loads(run_cli(project, "status", "--json").stdout)["judge"]
    assert state["skipped_today"] == 2 and state["spent_today_usd"] == 0.6
    cost = json.loads(run_cli(project, "cost", "--json").stdout)
    assert cost["claude_session_judge"] == {"cost_usd": 0.6, "calls": 1}
    shown = " ".join(run_cli(project, "cost").stdout.split())
    assert "claude-session's own spend (its judge, not in the total): $0.6000 in 1 call(s)" in shown
    assert query(project, "SELECT count(*) FROM judge_reservations") == [(0,)]


def test_judges_started_at_once_never_spend_past_the_budget(project: Path, tmp_path: Path) -> None:
    """8 judges at once: each reserves its share before it runs, in one transaction, so the
    ones that fit run and the rest are refused, saying why; the spend stays within budget."""
    share = judge.estimated_cost_per_call()  # what a first call reserves (no dearer one yet)
    cost = round(share * 0.9, 6)  # each call costs a little less than it reserved
    budget = round(share * 3.5, 6)  # room for three
    write_config(
        project,
        {
            "judge_command": costly_judge(tmp_path, cost, sleep=1.5),
            "judge_events": "TaskCompleted",
            "judge_budget_usd_per_day": budget,
        },
    )
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda n: task_completed(project, n).returncode, range(8)))
    assert codes == [0] * 8
    found = query(project, "SELECT decision, cost_usd, reason FROM llm_verdicts")
    ran = [c for d, c, _ in found if d == "allow"]
    refused = [r for d, _, r in found if d == "skipped"]
    assert len(found) == 8 and len(ran) == 3 and len(refused) == 5
    assert sum(ran) <= budget
    assert len(list((tmp_path / "calls").iterdir())) == 3  # the refused never called the model
    for reason in refused:
        assert reason.startswith("judge skipped: today's judge spend $")
        assert f"leave no room for this call's ${share:.2f} (reserved before it runs)" in reason
        assert f"within judge_budget_usd_per_day (${budget:.2f})" in reason
    assert any("reserved by 3 running judge(s)" in reason for reason in refused)
    assert query(project, "SELECT count(*) FROM judge_reservations") == [(0,)]


def test_a_dead_judges_reservation_lapses(project: Path, tmp_path: Path) -> None:
    """A judge that died holding a reservation blocks the budget only until it expires."""
    share = judge.estimated_cost_per_call()
    write_config(
        project,
        {
            "judge_command": costly_judge(tmp_path, share * 0.5),
            "judge_events": "TaskCompleted",
            "judge_budget_usd_per_day": share * 1.6,
            "judge_timeout_seconds": 5,
        },
    )
    assert task_completed(project, 0).returncode == 0  # the database exists, with a verdict
    conn = db.connect(str(project / ".claude-session.db"))
    now = time.time()
    verdicts.reserve(conn, session_id="dead", amount=share, budget=1.0, now=now, hold_seconds=65)
    assert task_completed(project, 1).returncode == 0
    last = query(project, "SELECT decision, reason FROM llm_verdicts ORDER BY id DESC")[0]
    assert last[0] == "skipped" and "reserved by 1 running judge(s)" in last[1]
    conn.execute("UPDATE judge_reservations SET expires_at = ?", (now - 1,))  # its time is up
    conn.close()
    assert task_completed(project, 2).returncode == 0
    last = query(project, "SELECT decision FROM llm_verdicts ORDER BY id DESC")[0]
    assert last[0] == "allow"
    assert query(project, "SELECT count(*) FROM judge_reservations") == [(0,)]
