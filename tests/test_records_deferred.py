"""The library's records (claude_session/records.py) are made dataclasses when first used, not
at import (issue 45: the 25 of them were 18% of `status`'s instructions, and a command uses one
or two), and are then the frozen dataclasses the library documents, made once even when
threads reach one together."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import sys
import threading
from pathlib import Path
from types import ModuleType

import claude_session

RECORDS = Path(claude_session.__file__).parent / "records.py"
LOADED = itertools.count()


def fresh_records() -> ModuleType:
    """records.py loaded anew (under a name of its own), as a command's first import of it
    finds it."""
    name = f"fresh_records_{next(LOADED)}"
    spec = importlib.util.spec_from_file_location(name, RECORDS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # where dataclasses looks a class's module up
    spec.loader.exec_module(module)
    return module


def test_importing_the_records_makes_none_of_them_a_dataclass_yet() -> None:
    records = fresh_records()
    names = list(records.__all__)
    assert len(names) == 25
    assert [n for n in names if "__dataclass_fields__" in vars(getattr(records, n))] == []
    assert dataclasses.is_dataclass(records.Status)  # asked for: made now, that one alone
    made = [n for n in names if "__dataclass_fields__" in vars(getattr(records, n))]
    assert made == ["Status"]


def test_a_record_is_the_frozen_dataclass_the_library_documents() -> None:
    records = fresh_records()
    names = [f.name for f in dataclasses.fields(records.StateValue)]
    assert names == ["key", "value", "updated_at"]
    one = records.StateValue("k", "v", 1.0)
    assert one == records.StateValue("k", "v", 1.0) and hash(one) == hash(("k", "v", 1.0))
    assert repr(one) == "StateValue(key='k', value='v', updated_at=1.0)"
    assert dataclasses.asdict(one) == {"key": "k", "value": "v", "updated_at": 1.0}
    try:
        one.key = "other"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a record must be frozen")
    listing = records.Listing([1, 2], 2)  # generic, with defaults
    assert (listing.hidden, listing.hidden_what) == (0, None)
    assert records.Listing[int] is not None


def test_threads_that_reach_a_record_together_get_it_whole() -> None:
    records = fresh_records()
    start = threading.Barrier(8)
    made: list[object] = []
    failed: list[BaseException] = []

    def make() -> None:
        start.wait()
        try:
            made.append(records.Refreshed(None, 0, {}))
        except BaseException as exc:  # any failure is the finding
            failed.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == [] and len(made) == 8
    assert all(m == made[0] for m in made)
