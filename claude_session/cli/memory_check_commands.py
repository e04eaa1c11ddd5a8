"""`memory verify|outcome`, `memory list --stale` (read through `Project.stale_memories`), and
the files `memory add --file` names.

A memory about files is possibly stale once one of them changed (another content hash),
is gone, or appeared where none was. `memory verify ID` records that a person checked it
against today's files (their hashes taken again); `memory outcome ID` says what became of it
(verified, disproved: a dead end never given as fact, hypothesis).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..core import memories, memory_files
from ..project import Listing
from . import output
from .group import json_option
from .listing import emit_page
from .memory_group import has_project_database, memory, parse_id


def project_files(root: Path, given: tuple[str, ...]) -> list[str]:
    """The project-relative paths of the files named with --file: each relative to the
    current folder when it is there, else to the project; one outside the project, or none
    at all, is refused (a typo would otherwise be recorded as a file that never was)."""
    paths = []
    for name in given:
        here = os.path.abspath(name)
        full = here if os.path.exists(here) else os.path.join(root, name)
        try:
            path = memory_files.relative(str(root), full)
        except memory_files.FileProblem as exc:
            raise click.ClickException(str(exc)) from exc
        if not os.path.isfile(os.path.join(root, path)):
            raise click.ClickException(f"no file {name} (in the current folder or the project)")
        paths.append(path)
    if len(paths) > memory_files.FILES_CAP:
        raise click.ClickException(f"at most {memory_files.FILES_CAP} files per memory")
    return list(dict.fromkeys(paths))


def list_stale(root: Path, scope: str | None) -> None:
    from ..project import Project

    here = scope != "global" and has_project_database(root)  # none: says so on stderr
    with Project(root) as project:
        if here:
            project.refresh(transcripts=False, spool=False)  # the database as this version reads it
        found = project.stale_memories(scope)
    layout = output.Layout(shown=lambda r: r | {"changes": "; ".join(r["changes"])})
    emit_page(Listing(found, len(found)), "possibly stale memories", "memory list", layout)


@memory.command(name="verify")
@click.argument("memory_id")
@json_option("an object: id, verified_at, files (path, sha256 as taken now)")
@click.pass_obj
def memory_verify(root: Path, memory_id: str) -> None:
    """Record that you checked memory ID against today's files: their hashes are taken again,
    so it is no longer possibly stale (until they change again)."""
    from ..project import Project

    parse_id(memory_id)
    with Project(root) as project:
        done = project.verify_memory(memory_id)
    found = done.memory or {}
    files = found.get("files") or []
    said = f"memory {memory_id} verified against today's files"
    said += f" ({len(files)} rehashed)" if files else " (it names no file)"
    output.reply({"id": memory_id, "verified_at": found.get("verified_at"), "files": files}, said)


@memory.command(name="outcome")
@click.argument("memory_id")
@click.argument("outcome", type=click.Choice([*memories.OUTCOMES, "none"]))
@click.option(
    "--reason",
    help="Why (what showed it): stored with the outcome (redacted), shown by `memory show`"
    " and with the memory wherever a session is given it.",
)
@json_option("an object: id, outcome (null: cleared), outcome_reason (null: none given)")
@click.pass_obj
def memory_outcome(root: Path, memory_id: str, outcome: str, reason: str | None) -> None:
    """Say what became of memory ID: verified, disproved (it turned out false: kept as a dead
    end, never given to a session as fact), hypothesis (not verified yet), or none."""
    from ..project import Project

    parse_id(memory_id)
    value = None if outcome == "none" else outcome
    if reason is not None and value is None:
        raise click.UsageError("--reason goes with an outcome: `none` clears it and its reason")
    with Project(root) as project:
        done = project.memory_outcome(memory_id, value, reason)
    stored = (done.memory or {}).get("outcome_reason")
    said = f"memory {memory_id}: {outcome if value else 'outcome cleared'}"
    said += f" ({stored})" if stored else ""
    output.reply({"id": memory_id, "outcome": value, "outcome_reason": stored}, said)
