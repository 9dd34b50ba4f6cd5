#!/usr/bin/env bash
# The whole test suite: set up (idempotent), lint, type-check, then pytest. Run as root on Debian 12
# (the namespace tests need root; they are part of the suite, not optional).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bootstrap.sh
source scripts/bootstrap.sh
"$UV" run --frozen ruff check src tests scripts bench
"$UV" run --frozen ruff format --check src tests scripts bench
"$UV" run --frozen mypy
# four workers (pytest-xdist), a test file per worker at a time: most tests wait on shaped links
# or on other processes (two workers kept the cores ≈ 53 % busy over ≈ 17 min; four, ≈ 92 % over
# ≈ 11 min; three, 85 % over 12: bench/RESULTS.md). The lab tests run at a higher priority than the
# rest (nice -10, tests/conftest.py), so a CPU-bound test beside them does not starve their
# senders; a lab check a busy spell of the VM can still spoil says so and measures again
# (a fresh lab) rather than pass on a margin. Files go
# out in collection order (tests/conftest.py puts the long ones first), not xdist's default
# order by number of tests. Then the `solo` tests (the delay line's timing to tens of µs) run
# alone: beside another worker's iperf3 they would measure the machine, not the lab.
# Exit 5 (no test selected, e.g. a file named on the command line) counts as a pass per phase.
# Bytecode: the suite starts hundreds of Python processes (netfleet's CLI, moto, labs' helpers);
# where the environment sets PYTHONDONTWRITEBYTECODE, each compiled every module it imports
# afresh (≈ 0.5-1.5 CPU-s a process). They share one cache in the virtualenv instead (not the
# tree); tests/motokit.py points the cloud tests' processes at the same one.
venv="${UV_PROJECT_ENVIRONMENT:-.venv}"
[[ "$venv" = /* ]] || venv="$PWD/$venv"
export PYTHONPYCACHEPREFIX="$venv/netfleet-test-pycache"
unset PYTHONDONTWRITEBYTECODE
status=0
"$UV" run --frozen pytest -n 4 --dist loadfile --no-loadscope-reorder --durations=15 \
  -m "not solo" "$@" || status=$?
[ "$status" -eq 5 ] && status=0
# the solo phase collects only the files that hold a solo test (collecting all ~1,800 tests to
# select 19 took ~17 s), unless files or options were given
solo_files=()
if [ "$#" -eq 0 ]; then
  mapfile -t solo_files < <(grep -l "mark\.solo" tests/test_*.py || true)
fi
solo=0
if [ "$#" -gt 0 ] || [ "${#solo_files[@]}" -gt 0 ]; then
  # what else the machine runs, for a timing failure to be read against (nothing of the suite's)
  echo "the machine before the solo phase: load $(cut -d' ' -f1-3 /proc/loadavg); busiest:"
  ps -eo pid,ni,pcpu,etime,comm --sort=-pcpu | head -6
  "$UV" run --frozen pytest -m solo "${solo_files[@]}" "$@" || solo=$?
fi
[ "$solo" -eq 5 ] && solo=0
if [ "$status" -ne 0 ]; then exit "$status"; fi
exit "$solo"
