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
failures=() # what failed, named again at the end (CI keeps only the log's tail)
flaky=()    # what failed once and passed when run again (run_again)

# Issue 28: droce leaves nothing outside its processes.  Every suite runs with
# a private DPDK runtime area (RUNTIME_DIRECTORY, which DPDK and droce both
# honour, as under systemd), so other programs on the machine do not count;
# after each suite that area, droce hugepage files and the socket files
# under /tmp and /run must be as before (tests/life/residue_check.py: a new
# entry no live process uses fails the suite).  DROCE_RESIDUE_CHECK=0 skips.
run_root=$(mktemp -d /tmp/droce-testrun.XXXXXX)
export RUNTIME_DIRECTORY=$run_root
residue_snap=$run_root.snap
why_file=$run_root.why
again_file=$run_root.again
: >"$why_file"
trap 'rm -rf "$run_root" "$residue_snap" "$why_file" "$again_file"' EXIT

# The TAP test points of one meson run (meson keeps their output in its log):
# prints "passed failed names", names the failed tests (comma-separated, "-"
# when none); appends each failed test point's first lines of diagnostics
# (Criterion's TAP YAML: the assertion and its message) to the file $2,
# which the end of the run prints (CI keeps only the log's tail); when $3 is
# given, writes there what to run again: "test<TAB>criterion filter" per
# failed test point ("test<TAB>" for a test that failed as a whole).
count_log() {
  /usr/bin/python3 - "$1" "$2" "${3:-}" <<'PY'
import json, re, sys
p = f = 0
bad = []
why = []
again = []
# meson's log may hold a program's non-UTF-8 bytes: read them replaced
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if not line.strip():
        continue
    try:
        t = json.loads(line)
    except ValueError:  # seen once in a whole run (dropin): not a test's record
        print("test.sh: a line of %s is not JSON, not counted: %r" % (sys.argv[1], line[:120]),
              file=sys.stderr)
        continue
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
    if n_bad:
        pts = re.findall(r"^not ok (?:\d+ )?- (\S+)", out, re.M)
        bad.append(t.get("name", "?") + (":" + "+".join(pts) if pts else ""))
        test = t.get("name", "?").split(" / ")[-1]
        if pts and t.get("result") in ("FAIL", "OK"):
            again += ["%s\t%s" % (test, pt.replace("::", "/")) for pt in pts]
        else:  # crashed, timed out, or not TAP: the whole test
            again.append(test + "\t")
        for m in re.finditer(r"^not ok (?:\d+ )?- (\S+).*\n((?:  .*\n){0,12})", out, re.M):
            lines = [l.strip() for l in m.group(2).splitlines()
                     if l.strip() and l.strip() not in ("---", "...", "failures:")
                     and not l.strip().startswith("assertions:")]
            why.append("%s: %s" % (m.group(1), " | ".join(lines[:6])[:600]))
with open(sys.argv[2], "a") as w:
    for line in why:
        w.write(line + "\n")
if sys.argv[3]:
    with open(sys.argv[3], "w") as w:
        for line in again:
            w.write(line + "\n")
print(p, f, ",".join(bad) or "-")
PY
}

# Every suite of build dir $1, one per line.
suites_of() {
  meson introspect "$1" --tests | /usr/bin/python3 -c '
import json, sys
print("\n".join(sorted({s.split(":")[-1] for t in json.load(sys.stdin) for s in t["suite"]})))'
}

# One meson run: dir, leaks, label, meson args...
meson_run() {
  local dir=$1 leaks=$2 label=$3 rc p f
  shift 3
  echo "=== droce tests: $dir $label"
  [ "${DROCE_RESIDUE_CHECK:-1}" != 0 ] && tests/life/residue_check.py snapshot "$residue_snap"
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=$leaks \
    meson test -C "$dir" --print-errorlogs --num-processes 1 "$@"
  rc=$?
  log="$dir/meson-logs/testlog.json"
  if [ -f "$log" ]; then
    read -r p f names < <(count_log "$log" "$why_file" "$again_file")
    if [ -z "$p" ] || [ -z "$f" ]; then # the count itself failed: say so
      p=0 f=1 names="its test log could not be counted"
      : >"$again_file"
    fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then # meson failed where no test point did
      f=1 names="meson test exited $rc"
      : >"$again_file"
    fi
    if [ "$f" -ne 0 ] && run_again "$dir" "$leaks"; then
      flaky+=("$dir $label: $names")
      p=$((p + f)) f=0 rc=0
    fi
    [ $rc -ne 0 ] && status=1
    echo "$dir $label: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
    [ "$f" -ne 0 ] && failures+=("$dir $label: $names")
  else
    failed=$((failed + 1))
    failures+=("$dir $label: no test log")
  fi
  if [ "${DROCE_RESIDUE_CHECK:-1}" != 0 ] && ! tests/life/residue_check.py check "$residue_snap"; then
    echo "$dir $label: left files behind (issue 28)"
    failed=$((failed + 1))
    failures+=("$dir $label: left files behind")
    status=1
  fi
}

# Whether the one test of meson log $1 passed: test point $2 ran (not
# skipped by the filter) and passed, or (no $2) the whole test passed.
passed_again() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, re, sys
tests = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8", errors="replace") if l.strip()]
ok = len(tests) == 1 and tests[0].get("result") == "OK"
out = tests[0].get("stdout") or "" if tests else ""
if sys.argv[2]:
    ok = ok and re.search(r"^ok (?:\d+ )?- %s(?![\w:])(?!.*# SKIP)" % re.escape(sys.argv[2]),
                          out, re.M) is not None
ok = ok and re.search(r"^not ok ", out, re.M) is None
sys.exit(0 if ok else 1)
PY
}

# A failed test point runs once more, alone: one that passes then was flaky
# (a timing race of the test or of droce under the machine's load): it is
# named on a FLAKY line with its first failure's WHY, and is not counted as
# failed; one that fails twice fails the run.  Only when a meson run failed
# in at most DROCE_RETRY_MAX (default 3; 0: never run again) places, every
# one of which passes again.  Returns 0 when they all did.
run_again() {
  local dir=$1 leaks=$2 test filter n ok=0
  n=$(wc -l <"$again_file")
  [ "$n" -ge 1 ] && [ "$n" -le "${DROCE_RETRY_MAX:-3}" ] || return 1
  while IFS=$'\t' read -r test filter; do
    echo "=== droce tests: $dir: once more: $test ${filter:-(the whole test)}"
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=$leaks \
      meson test -C "$dir" --print-errorlogs --num-processes 1 --no-rebuild "$test" \
      ${filter:+--test-args=--filter=$filter} </dev/null || return 1
    passed_again "$dir/meson-logs/testlog.json" "${filter//\//::}" || return 1
    ok=$((ok + 1))
  done <"$again_file"
  [ "$ok" -eq "$n" ]
}

# One meson run per line: build dir, LeakSanitizer on/off, suites (none:
# every suite) or test names.  Without extra arguments each suite runs
# alone, so the residue check names it.
# LeakSanitizer runs on the unit suite, the dataplane suites, verbs_rc,
# verbs_validation and nvmf (the test and every droce-nvmf it starts)
# (only the EAL's own interrupt instance suppressed, tests/lsan.supp); the
# other EAL suites still leave test objects or DPDK allocations at exit, so
# they run with ASan and UBSan only.
runs=(
  "build 0"
  "build-asan 1 --suite unit"
  "build-asan 1 --suite dataplane"
  "build-asan 1 verbs_rc verbs_validation"
  "build-asan 0 --suite abi --suite integration --suite verbs --suite verbs_ex --suite ud_uc --suite mw --suite srq --suite perf --suite progress --suite rdmacm --suite rdmacm_fakecm --suite rsocket --suite mt --suite xrc --suite raw --suite loop --suite hostile_veth --suite life --suite life_peers --suite stacks"
  "build-asan 1 --suite nvmf"
  "build-asan 0 --suite fork"
)
for run in "${runs[@]}"; do
  read -r dir leaks suites <<<"$run"
  if [ $# -ne 0 ]; then
    # shellcheck disable=SC2086
    meson_run "$dir" "$leaks" "${suites:-all suites}" $suites "$@"
    continue
  fi
  case "$suites" in
    "") list=$(suites_of "$dir") ;;
    --suite*) list=$(echo "$suites" | sed 's/--suite //g') ;;
    *)
      # shellcheck disable=SC2086
      meson_run "$dir" "$leaks" "$suites" $suites
      continue
      ;;
  esac
  for s in $list; do
    meson_run "$dir" "$leaks" "--suite $s" --suite "$s"
  done
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
      failures+=("fuzz $t")
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
    failures+=("tsan")
  fi
fi
[ $failed -ne 0 ] && status=1
for f in "${flaky[@]}"; do echo "FLAKY: $f (failed, then passed when run again)"; done
for f in "${failures[@]}"; do echo "FAILED: $f"; done
# why, as each failed test point said it (its first lines)
[ -s "$why_file" ] && sed 's/^/WHY: /' "$why_file"
echo "$passed passed, $failed failed"
exit $status
