#!/usr/bin/env bash
# The tests, by stage (docs/testing.md; tests/tiers.py says which test is in which tier).
#
#   ./test.sh                    every stage: lint, fast, integration, then e2e with fast-3.12
#                                and fast-3.13 beside it (what CI runs)
#   ./test.sh fast               the developer's tier: in-process, under 3 minutes on 2 cores
#   ./test.sh fast-3.13          the fast tier on Python 3.13 (.venv-3.13, made by install.sh --dev)
#   ./test.sh integration e2e    the stages named, one after the other, in the order given
#   ./test.sh fast -k ladder -x  a stage and more pytest arguments
#
# Every stage named runs, even after one failed; the exit status is 1 when any failed. pytest's
# exit 5 (no test collected) counts as a failure. fast, integration and e2e run on two
# pytest-xdist workers (-n 2; e2e keeps each module on one worker: its tests wait on the real
# Claude Code CLI, Phoenix, chromium and tmux more than they compute); lint (seven tests: two
# workers' start costs more than they save) in one process.
#
# The fast tier on Python 3.12 and 3.13 (.venv-3.12, .venv-3.13) runs every fast test, with 50
# generated histories in tests/test_truth_histories.py where .venv's fast tier plays 200 (the
# interpreter is what these stages test; TRUTH_HISTORIES=N sets it). In the default sequence both
# run during e2e, whose tests mostly wait (it used about a quarter of one core, measured): each
# in one process, at a lower CPU priority (nice) so that e2e's processes come first; their
# output follows e2e's.
#
# Nothing is left out silently: every skipped or expected-to-fail test is listed with its
# reason at the end, and so is a stage whose Python is missing (NOT RUN); with
# TEST_REQUIRE_EVERY_PYTHON=1 (.ci/run) that stage fails.
set -uo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || { echo "test.sh: no .venv: run ./install.sh --dev first" >&2; exit 1; }
other_fast=(fast-3.12 fast-3.13)

stages=()
while [ $# -gt 0 ]; do
  case "$1" in
    lint | fast | integration | e2e | fast-3.12 | fast-3.13) stages+=("$1"); shift ;;
    *) break ;;
  esac
done
default=0
if [ ${#stages[@]} -eq 0 ]; then
  default=1
  stages=(lint fast integration e2e "${other_fast[@]}")
fi

interpreter() {
  case "$1" in
    fast-*) echo ".venv-${1#fast-}/bin/python" ;;
    *) echo .venv/bin/python ;;
  esac
}

options() {
  case "$1" in
    fast | integration) echo "-m $1 -n 2" ;;
    fast-*)
      if [ "$default" = 1 ]; then echo "-m fast -p no:cacheprovider"; else echo "-m fast -n 2"; fi
      ;;
    e2e) echo "-m $1 -n 2 --dist loadfile" ;;
    lint) echo "-m $1" ;;
  esac
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One stage: pytest with its options (and -rsxX: pytest's summary names every skip, xfail and
# xpass with its reason), its output to stdout and to $logs/<stage>.out, its outcome to
# $logs/<stage>.status ("<exit> <seconds>").
run_stage() {
  local stage=$1 python started status
  shift
  python=$(interpreter "$stage")
  local before=()
  case "$stage" in
    fast-*) before=(env "TRUTH_HISTORIES=${TRUTH_HISTORIES:-50}") ;;
  esac
  if [[ " ${beside_e2e[*]} " == *" $stage "* ]]; then
    before=(nice -n 10 "${before[@]}")
  fi
  started=$SECONDS
  if [ ! -x "$python" ]; then
    echo "test.sh: stage $stage NOT RUN: no $python (./install.sh --dev makes it when it finds" \
      "Python ${stage#fast-}; it found none)" | tee "$logs/$stage.out" >&2
    echo "missing 0" >"$logs/$stage.status"
    return
  fi
  echo "=== test.sh: stage $stage: ${before[*]} $python -m pytest $(options "$stage") -rsxX $*" >&2
  local color=no
  [ -t 1 ] && color=yes
  # shellcheck disable=SC2046
  "${before[@]}" "$python" -m pytest $(options "$stage") -rsxX --color="$color" "$@" 2>&1 |
    tee "$logs/$stage.out"
  status=${PIPESTATUS[0]}
  echo "$status $((SECONDS - started))" >"$logs/$stage.status"
}

# The default sequence starts the other Pythons' fast tiers, side by side, when e2e starts, and
# prints their output once e2e and they are done.
beside_e2e=()
[ "$default" = 1 ] && beside_e2e=("${other_fast[@]}")
for stage in "${stages[@]}"; do
  if [[ " ${beside_e2e[*]} " == *" $stage "* ]]; then
    continue
  fi
  if [ "$stage" = e2e ] && [ ${#beside_e2e[@]} -gt 0 ]; then
    pids=()
    for other in "${beside_e2e[@]}"; do
      echo "=== test.sh: stage $other starts beside e2e (its output follows e2e's)" >&2
      run_stage "$other" "$@" >"$logs/$other.console" 2>&1 &
      pids+=($!)
    done
    run_stage e2e "$@"
    wait "${pids[@]}"
    for other in "${beside_e2e[@]}"; do cat "$logs/$other.console"; done
    continue
  fi
  run_stage "$stage" "$@"
done

failed=()
not_run=()
summary=()
for stage in "${stages[@]}"; do
  [ -f "$logs/$stage.status" ] || { failed+=("$stage"); continue; }  # interrupted
  read -r status took <"$logs/$stage.status"
  if [ "$status" = missing ]; then
    summary+=("$stage: NOT RUN: no Python ${stage#fast-} (see install.sh's warning)")
    not_run+=("$stage")
    [ "${TEST_REQUIRE_EVERY_PYTHON:-0}" = 1 ] && failed+=("$stage")
    continue
  fi
  if [ "$status" -eq 5 ]; then
    echo "test.sh: stage $stage collected no test: that is a failure" >&2
  fi
  [ "$status" -eq 0 ] || failed+=("$stage")
  summary+=("$stage: exit $status in ${took}s")
  # pytest -rsxX's lines: "SKIPPED [n] file:line: reason", "XFAIL file::test - reason".
  while IFS= read -r line; do
    summary+=("  $stage: $line")
  done < <(sed 's/\x1b\[[0-9;]*m//g' "$logs/$stage.out" | grep -E '^(SKIPPED|XFAIL|XPASS) ')
done

for line in "${summary[@]}"; do echo "=== test.sh: $line" >&2; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: failed: ${failed[*]}" >&2
  exit 1
fi
if [ ${#not_run[@]} -gt 0 ]; then
  echo "test.sh: passed, but NOT RUN: ${not_run[*]} (TEST_REQUIRE_EVERY_PYTHON=1 fails them)" >&2
fi
