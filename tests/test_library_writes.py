"""The write verbs of the library API, as a user calls them: each answers with what it did,
the next read sees it, a name that matches nothing raises `NotFound`, an agent's memory in a
database that came with a clone raises `Untrusted`, and `refresh` upgrades a database an
older version wrote (which a read refuses)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from conftest import database_at_version

import claude_session
from claude_session import (
    MemoryAdded,
    MemoryChanged,
    NotFound,
    Project,
    ProjectError,
    Refreshed,
    StateSet,
    Untrusted,
)
from claude_session.core import db
from claude_session.core.paths import db_path


def test_every_public_name_is_exported_and_typed() -> None:
    for name in claude_session.__all__:
        assert getattr(claude_session, name) is not None, name
    marker = Path(claude_session.__file__).parent / "py.typed"
    assert marker.is_file()  # the wheel carries it: tests/test_entry_points.py builds one
    # The names are written three times by design (a lazy module, its stub, the package that
    # defines them): they must agree, or a type checker and the interpreter disagree.
    stub = ast.parse((marker.parent / "__init__.pyi").read_text())
    listed = next(
        ast.literal_eval(node.value)
        for node in stub.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    assert listed == claude_session.__all__
    imported = {a.asname for n in stub.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert imported == set(claude_session.__all__) - {"__version__"}
    assert imported <= set(claude_session.project.__all__)


def test_memory_verbs_answer_what_they_did(project: Path) -> None:
    with Project(project) as it:
        added = it.add_memory("deploys need VPN", "fact", tags=["ops"], files=[])
        assert added == MemoryAdded(added.id, "project", True)
        again = it.add_memory("deploys need VPN", "fact")
        assert (again.id, again.new) == (added.id, False)  # strengthened, not doubled
        assert [m.text for m in it.memories("VPN")] == ["deploys need VPN"]
        outcome = it.memory_outcome(added.id, "disproved")
        assert isinstance(outcome, MemoryChanged) and outcome.memory is not None
        assert outcome.memory["outcome"] == "disproved"
        edited = it.edit_memory(added.id, text="deploys need the VPN on")
        assert edited.memory is not None and edited.memory["text"] == "deploys need the VPN on"
        assert it.forget_memory(added.id).change == "forgotten"
        assert it.memories("VPN") == []
        with pytest.raises(NotFound):
            it.forget_memory(added.id)
        with pytest.raises(ProjectError, match="is not a memory id"):
            it.forget_memory("twelve")


def test_a_file_outside_the_project_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    with Project(project) as it, pytest.raises(ProjectError):
        it.add_memory("about a file elsewhere", files=[str(outside)])


def test_state_verbs_record_their_cause(project: Path) -> None:
    with Project(project) as it:
        assert it.set_state("branch", "main", cause="a test") == StateSet(
            {"branch": "main"}, ("branch",)
        )
        assert it.set_state("branch", "main").changed == ()  # the same value: not written again
        assert it.state_value("branch") is not None
        history = it.state_history("branch")
        assert [(c.new_value, c.cause) for c in history] == [("main", "a test")]
        assert it.unset_state("branch").removed == ("branch",)
        assert it.state_value("branch") is None
        with pytest.raises(NotFound, match="no state key 'branch'"):
            it.unset_state("branch")


def test_an_agent_memory_in_a_clones_database_is_refused(project: Path, tmp_path: Path) -> None:
    with Project(project) as it:
        it.set_state("k", "v")
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(db_path(str(project)), db_path(str(clone)))  # a copy: not made here
    with Project(clone) as it:
        assert not it.trusted
        with pytest.raises(Untrusted):
            it.add_memory("from the clone", source="agent", scope="global")
        it.trust()
        assert it.trusted
        assert it.add_memory("from the clone", source="agent").new


def test_refresh_upgrades_what_a_read_refuses(tmp_path: Path) -> None:
    root = tmp_path / "old"
    root.mkdir()
    database_at_version(db_path(str(root)), db.SCHEMA_VERSION - 1).close()
    with Project(root) as it:
        with pytest.raises(ProjectError, match="older claude-session"):
            it.sessions()
        done = it.refresh(transcripts=False)
        assert done == Refreshed(db.SCHEMA_VERSION - 1, 0, {})
        assert it.sessions() == []  # read again, at this version


def test_refresh_without_a_database_makes_none(tmp_path: Path) -> None:
    with Project(tmp_path) as it:
        assert it.refresh() == Refreshed(None, 0, {})
        assert not it.exists
