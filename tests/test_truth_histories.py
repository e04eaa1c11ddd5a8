"""True in every history: hundreds of generated histories (tests/histories.py) through the
hook entry, every statement given to the model and every status-line figure checked against
the reference model (tests/reference_model.py). A false or unreadable statement fails."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from histories import LOG, Histories, _clock
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers
from hypothesis.internal.conjecture.providers import Constants
from hypothesis.stateful import run_state_machine_as_test

EXAMPLES = int(os.environ.get("TRUTH_HISTORIES", "200"))
# TRUTH_COLLECT=1: go on past a false statement and count them all by family (no shrinking):
# how the note's figures "before the fixes" were taken.
COLLECT = os.environ.get("TRUTH_COLLECT") == "1"


def run_histories(
    machine: type[Histories], base: Path, monkeypatch: pytest.MonkeyPatch, examples: int, steps: int
) -> None:
    monkeypatch.setenv("CLAUDE_SESSION_NO_DAEMON", "1")
    monkeypatch.setenv("CLAUDE_SESSION_NO_SNAPSHOTS", "1")
    monkeypatch.setenv("CLAUDE_SESSION_DATA_DIR", str(base / "user-data"))
    monkeypatch.setattr(time, "time", _clock)
    machine.base = base
    machine.collect = COLLECT
    no_local_constants(monkeypatch)
    LOG.__init__()  # type: ignore[misc]
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=steps,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                derandomize=True,
                database=None,
                phases=[p for p in Phase if p != Phase.shrink] if COLLECT else list(Phase),
            ),
        )
    finally:
        providers.CONSTANTS_CACHE.cache.clear()  # the next test's draws see its own pool
    families = Counter(v.family for v in LOG.false)
    print(
        f"{LOG.histories} histories, {LOG.statements} statements checked,"
        f" {LOG.chars} characters given to {LOG.sessions} sessions; false by family:"
        f" {dict(families)}"
    )
    print("characters given, by event:", dict(LOG.chars_by_kind))
    for verdict in {str(v): v for v in LOG.false}.values():
        print(verdict)
    assert not LOG.false
    assert LOG.histories >= examples


def no_local_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same histories in every run, as `derandomize` promises. Hypothesis also draws, now
    and then, a constant found in the source of the modules of this checkout that are loaded
    (`claude_session`'s: tests are left out), and which are loaded depends on the tests that ran
    before in the process (pytest-xdist deals them out anew each run): a failure the fast tier
    found under xdist did not come back alone. With that pool empty, the draws depend only on
    Hypothesis, this module and the machine."""
    monkeypatch.setattr(providers, "_get_local_constants", Constants)
    providers.CONSTANTS_CACHE.cache.clear()  # permitted constants, computed from the pool


class ManySessions(Histories):
    """Up to four sessions side by side, a few subagents."""

    max_sessions, max_agents = 4, 6


class DeepAgents(Histories):
    """Fewer sessions, more subagents (launched by subagents too), longer histories."""

    max_sessions, max_agents = 3, 9


# Two halves, each its own derandomized sequence (a machine of other bounds draws other
# histories), so that pytest-xdist runs them side by side: EXAMPLES in all.
def test_every_statement_is_true_with_many_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_histories(ManySessions, tmp_path, monkeypatch, EXAMPLES // 2, 30)


def test_every_statement_is_true_with_deep_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_histories(DeepAgents, tmp_path, monkeypatch, EXAMPLES - EXAMPLES // 2, 40)


class Draws:
    """What `data.draw` returns in a history replayed by hand: the draws a failure printed."""

    def __init__(self, *values: Any) -> None:
        self.values = list(values)

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.values.pop(0)


class Replay:
    """A history a run printed (shrunk), played step by step as Hypothesis plays it: each rule
    with its draws, then the invariants; `done` ends it as a history ends (teardown)."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CLAUDE_SESSION_NO_DAEMON", "1")
        monkeypatch.setenv("CLAUDE_SESSION_NO_SNAPSHOTS", "1")
        monkeypatch.setenv("CLAUDE_SESSION_DATA_DIR", str(base / "user-data"))
        monkeypatch.setattr(time, "time", _clock)
        monkeypatch.setattr(DeepAgents, "base", base, raising=False)
        LOG.__init__()  # type: ignore[misc]
        self.history = DeepAgents()

    def step(self, rule: str, *draws: Any, **arguments: Any) -> None:
        if rule not in ("first_session", "new_session"):
            arguments["data"] = Draws(*draws)
        try:
            getattr(self.history, rule)(**arguments)
            self.history.keep_the_past()
            self.history.status_line_is_true()
        except BaseException:
            self.history.stop_all()
            raise

    def done(self) -> None:
        self.history.teardown()
        assert LOG.statements > 20 and not LOG.false


def test_an_error_said_anew_under_another_section_ends_the_older_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume's block says `python migrate.py` is to re-run (migrate.py changed since it
    failed), it fails three times more, and the next resume's block says it is open (6x): the
    newer statement of that error holds, the "to re-run" line is no longer the model's. At the
    last resume, with nothing new of it to say, neither is withdrawn nor said again, and what
    the model holds of it (open, 6x) is true. (The history the fast tier found on Python 3.13,
    shrunk: the checker took the older line as still held.)"""
    run = Replay(tmp_path, monkeypatch)
    s1, main = "s1-00001eef", "main"
    run.step("first_session")
    run.step("compact", s1, False, twice=False)
    run.step("launch", (s1, main), background=True, task="fix the failing test")
    run.step("compact", s1, False, twice=False)
    run.step("retry", (s1, main), bad=True, command="python migrate.py")
    run.step("compact", s1, False, twice=False)
    run.step("prompt", s1, task="fix the failing test")
    run.step("write", (s1, main), good=False, path="migrate.py", wait=607)
    run.step("launch", (s1, "a002000000033232"), background=False, task="tidy the notes")
    run.step("write", (s1, main), good=True, path="notes.md", wait=607)
    run.step("end", s1, "a00500000007fd7d", kill=True, mid_step=True)
    run.step("resume", s1)
    run.step("retry", (s1, main), bad=True, command="pytest -q tests/test_app.py")
    run.step("retry", (s1, main), bad=False, command="pytest -q tests/test_app.py")
    run.step("retry", (s1, main), bad=False, command="python migrate.py")
    run.step("end", s1, kill=True, mid_step=False)
    run.step("resume", s1)
    run.step("launch", (s1, main), background=True, task="make the migration pass")
    run.step("write", (s1, main), good=True, path="notes.md", wait=761)
    run.step("launch", (s1, main), background=False, task="why does migrate.py fail")
    run.step("launch", (s1, "a0080000000cc8c8"), background=True, task="tidy the notes")
    run.step("end", s1, kill=False, mid_step=False)
    run.step("resume", s1)
    held = run.history.world.sessions[s1].context
    assert "## To re-run" in held[1].text and "`python migrate.py` failed 6x" in held[2].text
    run.done()


def test_a_held_rerun_line_of_another_session_that_failed_again_is_withdrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s8 is told at startup that s1 has `pytest` to re-run (files changed since it failed);
    s1 runs it again and it fails, then s8 is resumed: the line it holds of s1 is not so any
    more (the changes it names came before the last failure), and the resume's block withdraws
    it. It was kept: a "to re-run" statement of another session was never compared with that
    session's errors of now (core/context.py `_gone_of_other`)."""
    run = Replay(tmp_path, monkeypatch)
    s1, s4, s8, main = "s1-00001eef", "s4-00007bbc", "s8-0000f778", "main"
    check, script = "pytest -q tests/test_app.py", "python migrate.py"
    run.step("first_session")
    run.step("run", (s1, main), command=script, wait=809)
    run.step("retry", (s1, main), bad=True, command=check)
    run.step("retry", (s1, main), bad=True, command=script)
    run.step("new_session")
    run.step("retry", (s4, main), bad=True, command=script)
    run.step("run", (s1, main), command=script, wait=2)
    run.step("run", (s1, main), command=script, wait=571)
    run.step("write", (s4, main), good=False, path="migrate.py", wait=22)
    run.step("run", (s1, main), command=script, wait=282)
    run.step("write", (s1, main), good=True, path="notes.md", wait=215)
    run.step("end", s4, kill=True, mid_step=False)
    run.step("new_session")
    run.step("prompt", s8, task="tidy the notes")
    run.step("run", (s1, main), command=script, wait=216)
    run.step("write", (s1, main), good=False, path="app.py", wait=372)
    run.step("end", s8, kill=False, mid_step=False)
    run.step("prompt", s1, task="make the migration pass")
    run.step("prompt", s1, task="fix the failing test")
    run.step("run", (s1, main), command=check, wait=622)
    run.step("write", (s1, main), good=True, path="notes.md", wait=506)
    run.step("prompt", s1, task="fix the failing test")
    run.step("end", s1, kill=True, mid_step=False)
    run.step("resume", s8)
    last = run.history.world.sessions[s8].context[-1].text
    assert f'- `{check}` (under "To re-run' in last
    run.done()


def test_a_climb_abandoned_at_a_session_end_goes_on_in_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s2 fails `pytest` three times and ends (SessionEnd: the climb is abandoned); s4, started
    before that end, fails it after: its first failure is attempt 4, as the ladder carried
    over (core/ladder.py `carried_over`) says, and the status line's top step with it. The
    reference model counted each session's own failures alone."""
    run = Replay(tmp_path, monkeypatch)
    s1, s2, s4, main = "s1-00001eef", "s2-00003dde", "s4-00007bbc", "main"
    run.step("first_session")
    run.step("new_session")
    run.step("end", s1, kill=False, mid_step=False)
    run.step("retry", (s2, main), bad=True, command="pytest -q tests/test_app.py")
    run.step("new_session")
    run.step("end", s2, kill=False, mid_step=False)
    run.step("retry", (s4, main), bad=False, command="pytest -q tests/test_app.py")
    assert run.history.world.attempts("pytest -q tests/test_app.py", s4) == 6
    run.done()
