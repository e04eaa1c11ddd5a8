#!/usr/bin/env bash
# Set up claude-session in ./.venv (idempotent). `./install.sh --dev` adds the test tools.
# Then: .venv/bin/claude-session demo            (play a recorded session, show the state)
#       .venv/bin/claude-session install         (in your project: writes .claude/settings.local.json)
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

# The OpenTelemetry export tests send to a real backend, Arize Phoenix, run as its own server
# (tests/otel_backend.py): with --dev, install the pinned version into .venv-otel-backend, apart
# from .venv so its ~150 packages never touch ours. Skipped when that version is already there.
otel_backend_version="20.26.1"  # the pin: tests/otel_backend.py PHOENIX_VERSION says the same
if [ -n "$extra" ] && ! .venv-otel-backend/bin/python -c \
  'import sys; from importlib.metadata import version; sys.exit(version("arize-phoenix") != sys.argv[1])' \
  "$otel_backend_version" 2>/dev/null; then
  echo "install.sh: installing arize-phoenix==$otel_backend_version into .venv-otel-backend" \
    "(for tests/test_otel_backend.py)" >&2
  [ -x .venv-otel-backend/bin/python ] || "$python" -m venv .venv-otel-backend
  otel_log=$(mktemp)
  # With uv (a dev dependency, already in .venv): its ~150 packages in about 15 s from a cold
  # cache, where pip takes minutes on a fresh machine; pip (with this machine's package
  # settings) if uv cannot.
  if ! .venv/bin/uv pip install --quiet --python .venv-otel-backend/bin/python \
    "arize-phoenix==$otel_backend_version" >"$otel_log" 2>&1 &&
    ! .venv-otel-backend/bin/python -m pip install --quiet --disable-pip-version-check \
      "arize-phoenix==$otel_backend_version" >>"$otel_log" 2>&1; then
    cat "$otel_log" >&2
    rm -f "$otel_log"
    echo "install.sh: installing arize-phoenix==$otel_backend_version into .venv-otel-backend" \
      "failed (see above)" >&2
    exit 1
  fi
  rm -f "$otel_log"
fi

# The live views' tests drive a real terminal (tmux) and a real browser (chromium): with --dev,
# install those Debian packages when missing (as root), or say what is missing.
if [ -n "$extra" ]; then
  missing=""
  command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
  [ -x /usr/bin/chromium ] || missing="$missing chromium"
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "install.sh: installing$missing with apt-get (for tests/test_watch.py, test_serve.py)" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >/dev/null
      # shellcheck disable=SC2086
      apt-get install -y -qq $missing >/dev/null
    else
      echo "install.sh: the tests need$missing: install them (e.g. sudo apt-get install$missing);" \
        "tests/test_watch.py and tests/test_serve.py fail without them" >&2
    fi
  fi
fi
