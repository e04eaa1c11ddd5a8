#!/usr/bin/env bash
# The tests, by stage (docs/testing.md; tests/tiers.py says which test is in which tier).
#
#   ./test.sh                    every stage in order: lint, fast, integration, e2e (what CI runs)
#   ./test.sh fast               the developer's tier: in-process, under 3 minutes on 2 cores
#   ./test.sh integration e2e    the stages named, in the order given
#   ./test.sh fast -k ladder -x  a stage and more pytest arguments
#
# Every stage named runs, even after one failed; the exit status is 1 when any failed. pytest's
# exit 5 (no test collected) counts as a failure. fast, integration and e2e run on two
# pytest-xdist workers (-n 2; e2e keeps each module on one worker: its tests wait on the real
# Claude Code CLI, Phoenix, chromium and tmux more than they compute); lint (seven tests: two
# workers' start costs more than they save) in one process.
set -uo pipefail
cd "$(dirname "$0")"
python=.venv/bin/python
[ -x "$python" ] || { echo "test.sh: no .venv: run ./install.sh --dev first" >&2; exit 1; }

stages=()
while [ $# -gt 0 ]; do
  case "$1" in
    lint | fast | integration | e2e) stages+=("$1"); shift ;;
    *) break ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || stages=(lint fast integration e2e)

options() {
  case "$1" in
    fast | integration) echo "-m $1 -n 2" ;;
    e2e) echo "-m $1 -n 2 --dist loadfile" ;;
    lint) echo "-m $1" ;;
  esac
}

failed=()
summary=()
for stage in "${stages[@]}"; do
  echo "=== test.sh: stage $stage: pytest $(options "$stage") $*" >&2
  started=$SECONDS
  # shellcheck disable=SC2046
  "$python" -m pytest $(options "$stage") "$@"
  status=$?
  took=$((SECONDS - started))
  if [ "$status" -eq 5 ]; then
    echo "test.sh: stage $stage collected no test: that is a failure" >&2
  fi
  [ "$status" -eq 0 ] || failed+=("$stage")
  summary+=("$stage: exit $status in ${took}s")
done

for line in "${summary[@]}"; do echo "=== test.sh: $line" >&2; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: failed: ${failed[*]}" >&2
  exit 1
fi
