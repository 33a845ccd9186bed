#!/usr/bin/env bash
# Runs every droce test suite, in the release build and again under
# AddressSanitizer + UBSan.  Installs missing Debian packages and builds first.
# Ends with one line "N passed, N failed" and exits non-zero on any failure.
#
# Usage: scripts/test.sh [meson test args...]   e.g. scripts/test.sh --suite unit
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh || { echo "droce: dependency install failed"; exit 1; }
scripts/build.sh all || { echo "droce: build failed"; echo "0 passed, 1 failed"; exit 1; }

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# LeakSanitizer: only what DPDK's EAL never frees is suppressed (tests/lsan.supp)
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0

passed=0
failed=0
status=0
# One meson run per line: build dir, LeakSanitizer on/off, suites.
# LeakSanitizer runs on the unit suite, the dataplane suites, verbs_rc and
# verbs_validation
# (only the EAL's own interrupt instance suppressed, tests/lsan.supp); the
# other EAL suites still leave test objects or DPDK allocations at exit, so
# they run with ASan and UBSan only.
runs=(
  "build 0"
  "build-asan 1 --suite unit"
  "build-asan 1 --suite dataplane"
  "build-asan 1 verbs_rc verbs_validation"
  "build-asan 0 --suite abi --suite integration --suite verbs --suite verbs_ex --suite ud_uc --suite mw --suite srq --suite perf --suite progress --suite rdmacm --suite rdmacm_fakecm --suite rsocket --suite mt --suite xrc --suite raw --suite loop --suite hostile_veth"
)
for run in "${runs[@]}"; do
  read -r dir leaks suites <<<"$run"
  echo "=== droce tests: $dir ${suites:-all suites}"
  # shellcheck disable=SC2086
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=$leaks \
    meson test -C "$dir" --print-errorlogs --num-processes 1 $suites "$@"
  rc=$?
  [ $rc -ne 0 ] && status=1
  # Count TAP test points of every suite run (meson keeps their output in the log).
  log="$dir/meson-logs/testlog.json"
  if [ -f "$log" ]; then
    read -r p f < <(/usr/bin/python3 - "$log" <<'PY'
import json, re, sys
p = f = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    n_ok = len(re.findall(r"^ok ", out, re.M))
    n_bad = len(re.findall(r"^not ok ", out, re.M))
    if n_ok + n_bad == 0:      # not a TAP suite: count the test itself
        if t.get("result") in ("OK", "EXPECTEDFAIL", "SKIP"):
            n_ok = 1
        else:
            n_bad = 1
    elif t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP") and n_bad == 0:
        n_bad = 1              # crashed or timed out after its last test point
    p += n_ok
    f += n_bad
print(p, f)
PY
)
    echo "$dir ${suites:-all suites}: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
  else
    failed=$((failed + 1))
  fi
done
# Short libFuzzer runs (issue 12 §2): each target from its seeds for
# DROCE_FUZZ_TIME seconds (default 20) in build-fuzz/ (clang, ASan, UBSan);
# scripts/fuzz runs long campaigns.  DROCE_FUZZ_TIME=0 skips them.
if [ "${DROCE_FUZZ_TIME:-20}" != 0 ] && [ $# -eq 0 ]; then
  for t in fuzz_frame fuzz_cm_mad fuzz_rc; do
    echo "=== droce fuzz: $t, ${DROCE_FUZZ_TIME:-20} s"
    if scripts/fuzz --time "${DROCE_FUZZ_TIME:-20}" "$t"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
  done
fi
# ThreadSanitizer over the multi-threaded programs (scripts/tsan; DROCE_TSAN=0 skips).
if [ "${DROCE_TSAN:-1}" != 0 ] && [ $# -eq 0 ]; then
  echo "=== droce tsan: mt_stress, co-located and dedicated"
  if scripts/tsan; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi
[ $failed -ne 0 ] && status=1
echo "$passed passed, $failed failed"
exit $status
