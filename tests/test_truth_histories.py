"""True in every history: hundreds of generated histories (tests/histories.py) through the
hook entry, every statement given to the model and every status-line figure checked against
the reference model (tests/reference_model.py). A false or unreadable statement fails."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest
from histories import LOG, Histories, _clock
from hypothesis import HealthCheck, Phase, settings
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
    LOG.__init__()  # type: ignore[misc]
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
