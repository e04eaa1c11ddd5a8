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

# The fast tier runs on every Python we support (./test.sh stages fast-3.12 and fast-3.13, beside
# .venv's): with --dev, one venv per Python, .venv-3.12 and .venv-3.13, made from a real
# interpreter of that version (python3.X on PATH when it is not a pyenv shim that refuses,
# pyenv's versions, /usr/bin, /usr/local/bin). One not found is said here, and again by
# ./test.sh, which fails its stage when TEST_REQUIRE_EVERY_PYTHON=1 (as .ci/run sets).
other_pythons="3.12 3.13"
find_python() {
  local version=$1 candidate found pyenv_root
  pyenv_root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
  for candidate in "python$version" "$pyenv_root"/versions/"$version".*/bin/"python$version" \
    /usr/bin/"python$version" /usr/local/bin/"python$version"; do
    found=$("$candidate" -c 'import sys; print(sys.executable)' 2>/dev/null) || continue
    if "$found" -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != sys.argv[1])' \
      "$version" 2>/dev/null; then
      echo "$found"
      return
    fi
  done
  return 0 # none: the caller says so
}
if [ -n "$extra" ]; then
  for version in $other_pythons; do
    venv=".venv-$version"
    found=$(find_python "$version")
    if [ -z "$found" ]; then
      echo "install.sh: WARNING: no Python $version found (python$version on PATH, pyenv's" \
        "versions, /usr/bin, /usr/local/bin): ./test.sh cannot run stage fast-$version" >&2
      continue
    fi
    # A venv whose interpreter went away (a pyenv version removed) is made again.
    "$venv/bin/python" -c '' 2>/dev/null || { rm -rf "$venv" && "$found" -m venv "$venv"; }
    venv_log=$(mktemp)
    if ! .venv/bin/uv pip install --quiet --python "$venv/bin/python" -e ".[dev]" \
      >"$venv_log" 2>&1 &&
      ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev]" \
        >>"$venv_log" 2>&1; then
      cat "$venv_log" >&2
      rm -f "$venv_log"
      echo "install.sh: installing the test tools into $venv ($found) failed (see above)" >&2
      exit 1
    fi
    rm -f "$venv_log"
    echo "install.sh: $venv ready ($("$venv/bin/python" --version), for ./test.sh fast-$version)" >&2
  done
fi

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
