"""`claude-session prices update`: the user's own price table, made from LiteLLM's pricing
data (`model_prices_and_context_window.json`, the maintained source ccusage also reads), so
new models and new prices need no release of ours. It is fetched only when the user asks, from
the address given (or read from a file), checked (core/prices), and written to the per-user
data folder, where core/prices lays it over the bundled table."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

from ...core import prices
from ...core.paths import user_data_dir

LITELLM_URL = (
    "https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json"
)
MAX_BYTES = 32 << 20  # the whole file is a few MB


def read_source(source: str) -> bytes:
    """The bytes at `source`: an https address, or a file."""
    if source.startswith("https://"):
        with urllib.request.urlopen(source, timeout=60) as answer:
            data: bytes = answer.read(MAX_BYTES + 1)
    else:
        with open(source, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise prices.Bad(f"{source}: larger than {MAX_BYTES >> 20} MB")
    return data


def update(source: str = LITELLM_URL) -> dict[str, Any]:
    """Make the user's table from `source`; returns its path and the models it prices."""
    try:
        data = json.loads(read_source(source))
    except ValueError as exc:
        raise prices.Bad(f"{source}: not JSON ({exc})") from None
    table = prices.from_litellm(data, f"LiteLLM pricing data from {source}")
    prices.parse(table)  # what core/prices will read back
    folder = user_data_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = os.path.join(folder, prices.USER_FILE)
    if os.path.islink(path):
        raise prices.Bad(f"{path} is a symbolic link; refusing to replace it")
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(table, indent=1, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return {"path": path, "models": sorted(table["models"])}


def remove() -> bool:
    """Go back to the bundled table alone."""
    try:
        os.unlink(os.path.join(user_data_dir(), prices.USER_FILE))
    except FileNotFoundError:
        return False
    return True


def listing() -> dict[str, Any]:
    """The table in use: each model's prices per million tokens, the aliases, the default
    tier, where they come from, and the user's file's problem if it could not be read."""
    table = prices.table()
    problem = None
    path = prices.user_path()
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                prices.parse(json.load(f))
        except (OSError, ValueError) as exc:
            problem = f"{path}: {exc} (left out)"
    return {
        "default": table.default,
        "sources": table.sources,
        "user_file": path if os.path.exists(path) else None,
        "user_file_problem": problem,
        "models": {
            name: {k: getattr(p, k) for k in prices.KINDS}
            | ({"above_200k": list(p.above)} if p.above else {})
            for name, p in sorted(table.models.items())
        },
        "aliases": table.aliases,
    }
