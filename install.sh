#!/usr/bin/env bash
# Set up claude-session in ./.venv (idempotent). `./install.sh --dev` adds the test tools.
# Then: .venv/bin/claude-session demo            (play a recorded session, show the state)
#       .venv/bin/claude-session install         (write the hooks into .claude/settings.json)
set -euo pipefail
cd "$(dirname "$0")"
extra=""
[ "${1:-}" = "--dev" ] && extra="[dev]"

# A real interpreter path, not a pyenv shim: a shim costs ~90 ms on every hook.
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then
      python=$("$candidate" -c 'import sys; print(sys.executable)' 2>/dev/null) || continue
      "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' && break
      python=""
    fi
  done
fi
[ -n "$python" ] || { echo "install.sh: Python 3.11 or newer is required" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extra}"
echo "claude-session installed in $(pwd)/.venv ($(.venv/bin/python --version))" >&2
