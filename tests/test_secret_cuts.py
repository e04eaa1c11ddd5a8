"""A length cap never cuts a secret before redaction has seen it whole.

Every family of the secret corpus (tests/test_secrets.py) is placed so that a cap falls inside
its secret, in every field that is cut to a cap somewhere it is stored or shown: the prompt,
a Bash command and its error, an agent's description and task, an assistant message, a session
end reason, a huge tool output, a state key and value, a memory's text and tags, a failed
approach. Cut before redaction, a token shorter than its shape loses the shape and its start
is stored as it came (`ghp_A1b2C3d4E5`); redacted whole first, only a marker, or a marker cut
short, can be. The bytes checked are every file written (database, WAL, spool, log, the
user-level memory database) and every answer given to the model.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import PYTHON, fixture, hook_env, query
from inproc import Recorder
from test_secrets import CORPUS, every_byte_written

from claude_session.core import context

CLI = str(Path(PYTHON).parent / "claude-session")
CUT_INTO = 10  # characters of a secret on the kept side of the cut
SHOWN = 8  # this many characters of a secret, or its fixed prefix and 4 more, would name it
WORDS = " lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"


def filler(length: int) -> str:
    """Harmless words, exactly `length` characters, starting and ending with a space (so a
    sample after it starts a word)."""
    assert length >= 1
    text = (WORDS * (length // len(WORDS) + 1))[: length - 1]
    return text + " "


def straddling(
    case: str, cuts: Iterable[int], *, head: str = "", length: int = 0, tail: bool = False
) -> str:
    """`head`, then filler with one copy of the case's sample per cut, each placed so that the
    cut (a position in the whole value) falls CUT_INTO characters into its secret; with `tail`,
    CUT_INTO characters before the secret's end (a cap that keeps a value's end). A first cut
    too early for the whole sample before it falls inside the sample at its start instead."""
    sample, secret = CORPUS[case]
    into = max(SHOWN, min(CUT_INTO, len(secret) - 1))
    at = sample.index(secret) + (len(secret) - into if tail else into)
    text = head
    for cut in sorted(cuts):
        start = cut - at
        if start <= len(text):
            assert text == head, f"cuts {sorted(cuts)} too close together for {case}"
            start = len(text) + 1
        text += filler(start - len(text)) + sample
    return text + filler(max(1, length - len(text)))


def straddled(case: str, cuts: Iterable[int], *, head: str = "") -> list[str]:
    """Values that together put a copy of the sample across each cut: one value, or more when
    the cuts are too close together for two copies of a long sample."""
    groups: list[list[int]] = []
    for cut in sorted(cuts):
        fits = [g for g in groups if cut - g[-1] > len(CORPUS[case][0])]
        if fits:
            fits[0].append(cut)
        else:
            groups.append([cut])
    return [straddling(case, group, head=head) for group in groups]


def recognisable(case: str) -> list[str]:
    """What would still name the case's secret after a cut: its first or last SHOWN
    characters, or what precedes it in the sample (the fixed prefix) and 4 more."""
    sample, secret = CORPUS[case]
    shown = min(SHOWN, len(secret) - 1)
    return [secret[:shown], secret[-shown:], sample[: sample.index(secret) + 4]]


def assert_no_piece(case: str, data: bytes, where: str, *databases: Path) -> None:
    text = data.decode("utf-8", "replace")
    found = [piece for piece in recognisable(case) if piece in text]
    if found:
        places = {f"{db.name}: {p}" for db in databases for x in found for p in _columns(db, x)}
        raise AssertionError(f"{case}: {found} of its secret reached {where} ({sorted(places)})")


def _columns(path: Path, piece: str) -> list[str]:
    """table.column of the rows holding `piece`: says which cap let the secret through."""
    if not path.exists():
        return []
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = []
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        for (table,) in tables:
            for column in conn.execute(f"SELECT name FROM pragma_table_info('{table}')"):
                hits = conn.execute(
                    f'SELECT count(*) FROM "{table}" WHERE instr(CAST("{column[0]}" AS TEXT), ?)',
                    (piece,),
                ).fetchall()[0][0]
                if hits:
                    found.append(f"{table}.{column[0]}")
        return found
    finally:
        conn.close()


def payload(name: str, project: Path, path: tuple[str, ...], value: str, n: int) -> dict[str, Any]:
    """A recorded payload with `value` at `path` and a tool call id of its own."""
    sent = fixture(name, project)
    target = sent
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    if "tool_use_id" in sent:
        sent["tool_use_id"] = f"toolu_cut_{n:04d}"
    return sent


# (fixture, where the value goes, cuts as positions in the value; see each cap's comment)
EVENT_SITES: list[tuple[str, tuple[str, ...], list[int]]] = [
    # the summary quotes 77 characters; prompts (executions) 500; prompts and the main task 4000
    ("UserPromptSubmit", ("prompt",), [77, 500, 4000]),
    # "Bash: " + the summary's 197; the error signature 300; the ladder's command 1000
    ("PreToolUse.Bash", ("tool_input", "command"), [191, 300, 1000]),
    ("PostToolUseFailure.Bash", ("tool_input", "command"), [191, 300, 1000]),
    # the gist of an error for a failed path's context 157, the signature's first line 200,
    # the gist 297, the error's head 1000 (its tail: below)
    ("PostToolUseFailure.Bash", ("error",), [157, 200, 297, 1000]),
    # "Agent: " + the summary's 197; the task prompt 4000
    ("PreToolUse.Agent", ("tool_input", "description"), [190]),
    ("PreToolUse.Agent", ("tool_input", "prompt"), [4000]),
    # "Stop: " + the quoted 77; the message 2000
    ("Stop", ("last_assistant_message",), [77, 2000]),
    ("SubagentStop", ("last_assistant_message",), [2000]),
    ("PostCompact", ("compact_summary",), [20000]),
    # "SessionEnd " + the summary's 197; the state value last_end_reason 4000
    ("SessionEnd", ("reason",), [186, 4000]),
]


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_no_cap_on_an_event_field_keeps_part_of_a_secret(
    case: str, recorder: Recorder, project: Path, isolated_state: Path
) -> None:
    """Events through the recorder the hook uses (`events.apply`): each capped field holds
    the secret across its caps; the answers given back count as written too."""
    said = []
    sent = 0
    for name, path, cuts in EVENT_SITES:
        head = "pytest " if path[-1] == "command" else ""  # a test command becomes state
        for value in straddled(case, cuts, head=head):
            tries = 3 if name == "PostToolUseFailure.Bash" else 1  # the third: a failed path
            for _ in range(tries):
                sent += 1
                said.append(recorder.send(payload(name, project, path, value, sent))[1])
    # An error longer than its cap keeps its head and its tail: the tail's cut too.
    error = straddling(case, [6000 - 1000], length=6000, tail=True)
    for _ in range(3):
        sent += 1
        failed = payload("PostToolUseFailure.Bash", project, ("error",), error, sent)
        said.append(recorder.send(failed)[1])
    # A payload over STORE_CAP has its long strings cut to STRING_CAP (8 KiB).
    huge = straddling(case, [8 * 1024], length=300_000)
    stdout = ("tool_response", "stdout")
    said.append(recorder.send(payload("PostToolUse.Bash", project, stdout, huge, 0))[1])
    # What the model is told after a compaction: every section quotes capped lines.
    said.append(recorder.send(fixture("SessionStart.compact", project))[1])
    written = every_byte_written(project, isolated_state)
    assert b"REDACTED" in written
    shown = json.dumps(said).encode()
    database = project / ".claude-session.db"
    assert_no_piece(case, written, "the files written", database)
    assert_no_piece(case, shown, "the answers to the model")


def cli(project: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [CLI, "--project", str(project), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=hook_env(project),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_no_cap_on_what_a_command_records_keeps_part_of_a_secret(
    case: str, project: Path, isolated_state: Path
) -> None:
    """The CLI's writers: a state key (200) and value (4000), also under a key that names a
    secret; a memory's text (4000) and tags (40), added, edited and imported; a failed
    approach and its reason (1000). What the listings show then counts as written too."""
    cli(project, "state", "set", straddling(case, [200]), straddling(case, [4000]))
    cli(project, "state", "set", "deploy_token", straddling(case, [4000]))
    text, tag = straddling(case, [4000]), straddling(case, [40])
    cli(project, "memory", "add", text, "--category", "fact", "--tag", tag)
    cli(project, "memory", "add", text, "--category", "fact", "--scope", "global", "--tag", tag)
    cli(project, "memory", "edit", "1", "--text", text + " again", "--tag", tag)
    record = {"category": "fact", "scope": "project", "text": text + " imported", "tags": [tag]}
    wrong = {"category": straddling(case, [58]), "scope": "project", "text": "x"}  # shown: 60
    lines = json.dumps(record) + "\n" + json.dumps(wrong) + "\n"
    said = cli(project, "memory", "import", "-", stdin=lines)
    assert "line 2 skipped" in said
    assert_no_piece(case, said.encode(), "what the import said of a wrong record")
    cli(project, "fail", straddling(case, [1000]), "--reason", straddling(case, [1000]))
    written = every_byte_written(project, isolated_state)
    assert b"REDACTED" in written
    global_db = Path(os.environ["CLAUDE_SESSION_DATA_DIR"]) / "global.db"
    assert_no_piece(case, written, "the files written", project / ".claude-session.db", global_db)
    shown = cli(project, "state", "list", "--json") + cli(project, "memory", "list", "--json")
    assert_no_piece(case, shown.encode(), "what the listings show")


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_the_restored_context_redacts_each_line_before_its_cap(case: str) -> None:
    """What SessionStart puts before the model quotes each line to LINE_CAP characters: a line
    holding a secret (here one not redacted when it was recorded) is redacted whole first, not
    cut into a start too short for the final pass to know."""
    prompt = straddling(case, [context.LINE_CAP - len("- ") - 1])
    told = context.render({"task": [{"prompt": prompt, "submitted_at": None}]}, "intro")
    assert "REDACTED" in told
    assert_no_piece(case, told.encode(), "the restored context")


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_a_git_error_is_redacted_before_its_cut(case: str, tmp_path: Path) -> None:
    """PreCompact keeps git's first line of error, cut to 200 characters, in its snapshot: the
    whole message is redacted first (git names the folder it could not enter)."""
    from claude_session.services import gitstate

    said = "fatal: cannot change to '"
    root = str(tmp_path) + "/"
    name = straddling(case, [200 - len(said) - len(root)]).replace("\n", " ")  # one line
    error = str(gitstate.capture(root + name.strip()).get("error"))
    assert error.startswith(said[:-1]), error
    assert_no_piece(case, error.encode(), "the git state kept")


def test_the_judge_command_is_stored_redacted(project: Path, tmp_path: Path) -> None:
    """Each verdict keeps the judge command that gave it, cut to 500 characters: a key on its
    command line is redacted whole first."""
    from test_judge import ALLOW, configure, run_task_completed, scripted_judge

    judge_command = scripted_judge(tmp_path, [ALLOW])
    configure(project, straddling("ghp", [500], head=judge_command + " --note"))
    assert run_task_completed(project).returncode == 0
    (judge,) = query(project, "SELECT judge FROM llm_verdicts")[0]
    assert judge.startswith(judge_command) and len(judge) == 500
    stored = b"".join(
        path.read_bytes() for path in project.glob(".claude-session.db*") if path.is_file()
    )
    assert_no_piece("ghp", stored, "the verdicts")


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_a_value_starting_with_a_marker_is_still_redacted(
    case: str, recorder: Recorder, project: Path, isolated_state: Path
) -> None:
    """Only a value that is one marker and nothing more is taken as already redacted: one that
    merely starts with a marker, whole or cut short by a cap (a command's output after
    `claude-session state get`, a summary of redacted text), is scanned like any other."""
    sample = CORPUS[case][0]
    for n, marker in enumerate(("[REDACTED:assignment#0123abcd]", "[REDACTED:github_tok")):
        value = f"{marker}\n{sample}"
        recorder.send(payload("PostToolUse.Bash", project, ("tool_response", "stdout"), value, n))
        recorder.send(payload("UserPromptSubmit", project, ("prompt",), f"{marker} {sample}", n))
    database = project / ".claude-session.db"
    assert_no_piece(case, every_byte_written(project, isolated_state), "the files", database)
