#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""conformance: rdma-core's own pyverbs test suite (Debian's python3-pyverbs,
/usr/share/doc/rdma-core/tests/) on droce, one test per process.

Every test runs as `droce-run python3 run_tests.py -v TEST` in its own
process group under a timeout, so a hang is counted and killed and the run
goes on.  Each test ends as pass, skip, fail, error or hang.  The run fails
(exit 1) on any hang, error or failure not named in expected_fail.txt, on
any expected failure that passed (the list must then shrink), and on any skip
whose reason matches no line of left_out.txt (the features droce leaves out
on purpose).  The vendor test files (test_mlx5_*, test_efa*) run too:
rdma-core's own rules skip what needs an mlx5 or EFA device, and a few of
them (test_mlx5_timestamp) run on any device; --no-vendor sets them aside.

The same script runs in scripts/rxe-interop's guest on rxe0 (--direct: no
droce-run; --dev rxe0), which makes the reference row (rxe_reference.txt);
with --reference the run prints, per test, rxe's result beside droce's and
names every test that passes on rxe and not on droce.

Usage: run.py [--droce-run PATH [--view] | --direct] [--dev NAME] [--jobs N]
              [--timeout S] [--only SUBSTR[,SUBSTR...]] [--json OUT]
              [--data DIR] [--reference FILE] [--no-vendor] [--keep]
"""
import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SRC = "/usr/share/doc/rdma-core/tests"
PY = "/usr/bin/python3"  # Debian's python, the one python3-pyverbs is built for
# (in the rxe guest the script runs as `python3 -c SOURCE`: no __file__)
HERE = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else "."
VENDOR = re.compile(r"^tests\.test_(mlx5|efa)")
# unittest -v: "test_name (tests.test_mod.Class.test_name) ... ok"; the
# outcome may follow on the same line or, when the test printed, on a later one
OUTCOME = re.compile(r"^(ok|skipped '(?P<why>.*)'|skipped \"(?P<why2>.*)\"|FAIL|ERROR|expected failure|unexpected success)\s*$")


def prepare(dest):
    """The suite as run_tests.py expects it: one directory, gunzipped."""
    os.makedirs(dest, exist_ok=True)
    for fn in os.listdir(SRC):
        src = os.path.join(SRC, fn)
        if fn.endswith(".gz"):
            with gzip.open(src, "rb") as i, open(os.path.join(dest, fn[:-3]), "wb") as o:
                shutil.copyfileobj(i, o)
        else:
            shutil.copy(src, dest)
    return dest


def read_list(path):
    """Lines of a data file: comments (#) and blank lines dropped, fields by ' | '."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        out.append([f.strip() for f in line.split(" | ")])
    return out


def list_tests(tdir, env):
    # listing imports every module but opens no device: run with the
    # system's libraries, so a droce that does not load still shows its tests
    out = subprocess.run([PY, "run_tests.py", "--list-tests"], cwd=tdir, env=env,
                         capture_output=True, text=True, timeout=300)
    names = [l.strip() for l in out.stdout.splitlines() if l.startswith("tests.test_")]
    if not names:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit("conformance: the suite lists no tests")
    return names


def classify(rc, text):
    """(status, detail) of one finished test process."""
    status, why = None, ""
    for line in text.splitlines():
        tail = line.split(" ... ")[-1] if " ... " in line else line
        m = OUTCOME.match(tail.strip())
        if not m:
            continue
        word = m.group(1)
        if word == "ok":
            status = "pass"
        elif word.startswith("skipped"):
            status, why = "skip", m.group("why") or m.group("why2") or ""
        elif word == "FAIL":
            status = "fail"
        elif word == "ERROR":
            status = "error"
        elif word == "expected failure":
            status = "pass"
        elif word == "unexpected success":
            status = "fail"
    if status is None:
        # no verdict line: the process died (signal, abort, exit in a provider)
        status = "error"
        why = "no unittest verdict (exit %d)" % rc
    elif status == "pass" and rc != 0:
        status, why = "error", "verdict ok but exit %d" % rc
    if status in ("fail", "error") and not why:
        # the exception's last line: the last unindented line before the
        # "----" line that precedes unittest's "Ran 1 test"
        lines = text.splitlines()
        end = max([i for i, l in enumerate(lines) if l.startswith("Ran ")] or [len(lines)])
        for l in reversed(lines[:end]):
            if l.strip() and not l.startswith((" ", "-", "=")):
                why = l.strip()
                break
    return status, why


def run_one(name, tdir, cmd_prefix, extra, env, timeout, logdir):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd_prefix + [PY, "run_tests.py", "-v"] + extra + [name], cwd=tdir,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
        text = out.decode(errors="replace")
        status, why = classify(rc, text)
    except subprocess.TimeoutExpired:
        # the test and every process it forked (rdma_cm tests fork two)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = p.communicate()
        text = out.decode(errors="replace")
        status, why = "hang", "no end after %d s (killed)" % timeout
    secs = time.monotonic() - t0
    if logdir:
        with open(os.path.join(logdir, name + ".log"), "w") as f:
            f.write(text)
    return {"test": name, "status": status, "why": why, "secs": round(secs, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--droce-run", help="build/droce-run: run every test through it")
    ap.add_argument("--direct", action="store_true",
                    help="run the tests on the system's libraries (the rxe guest)")
    ap.add_argument("--dev", help="device name for run_tests.py --dev")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--only", help="comma-separated substrings of test names")
    ap.add_argument("--json", help="write every test's result here")
    ap.add_argument("--data", default=HERE, help="directory of the data files")
    ap.add_argument("--reference", help="a reference row (rxe_reference.txt) to compare with")
    ap.add_argument("--no-vendor", action="store_true", help="set test_mlx5_* and test_efa* aside")
    ap.add_argument("--logdir", help="keep each test's output as LOGDIR/TEST.log")
    ap.add_argument("--keep", action="store_true", help="keep the prepared suite directory")
    ap.add_argument("--view", action="store_true",
                    help="run the whole suite inside `droce-run --view` (sysfs, /dev/infiniband "
                         "and network interfaces of droce's devices: the rdma_cm tests need them)")
    ap.add_argument("--print-json", action="store_true",
                    help="print every test's result as JSON after a line '== json' (rxe guest)")
    a = ap.parse_args()
    if not a.direct and not a.droce_run:
        ap.error("give --droce-run PATH or --direct")
    if a.view and os.environ.get("DROCE_CONF_IN_VIEW") != "1":
        # once, around the whole run: every test process inherits the view
        os.environ["DROCE_CONF_IN_VIEW"] = "1"
        os.execv(os.path.abspath(a.droce_run),
                 [a.droce_run, "--view", PY, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    if not os.path.isdir(SRC):
        print("conformance: %s is missing: install python3-pyverbs (scripts/deps.sh)" % SRC)
        print("0 passed, 1 failed")
        return 1

    work = tempfile.mkdtemp(prefix="droce-conf-")
    tdir = prepare(os.path.join(work, "tests"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if a.view:
        # the view's droce-run put droce's libraries first: the tests get
        # them from the droce-run each runs through, the listing goes without
        env.pop("LD_LIBRARY_PATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    names = list_tests(tdir, env)
    aside = []
    if a.no_vendor:
        aside = [n for n in names if VENDOR.match(n)]
        names = [n for n in names if not VENDOR.match(n)]
    if a.only:
        subs = a.only.split(",")
        names = [n for n in names if any(s in n for s in subs)]
    cmd_prefix = [] if a.direct else [os.path.abspath(a.droce_run)]
    extra = ["--dev", a.dev] if a.dev else []
    if a.logdir:
        os.makedirs(a.logdir, exist_ok=True)

    left_out = [(re.compile(r[0]), re.compile(r[1] if len(r) > 2 else "."), r[-1])
                for r in read_list(os.path.join(a.data, "left_out.txt"))]
    expected = {r[0]: (r[1] if len(r) > 1 else "?", r[2] if len(r) > 2 else "")
                for r in read_list(os.path.join(a.data, "expected_fail.txt"))}
    ref = {}
    if a.reference:
        for r in read_list(a.reference):
            ref[r[0]] = r[1]

    results, lock, todo = {}, threading.Lock(), list(names)
    t0 = time.monotonic()

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                n = todo.pop(0)
            r = run_one(n, tdir, cmd_prefix, extra, env, a.timeout, a.logdir)
            with lock:
                results[n] = r
                print("%-5s %-80s %6.1fs %s" % (r["status"], n, r["secs"], r["why"][:150]), flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, a.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    counts = {k: 0 for k in ("pass", "skip", "fail", "error", "hang")}
    bad, xfail, xpass, skip_ok = [], [], [], {}
    for n in names:
        r = results[n]
        counts[r["status"]] += 1
        if r["status"] != "pass" and n in expected:
            xfail.append((n, expected[n][0]))
        elif r["status"] == "skip":
            hit = next((w for rx, tx, w in left_out if rx.search(r["why"]) and tx.search(n)), None)
            if hit is None:
                bad.append((n, "skip not in left_out.txt: " + r["why"]))
            else:
                skip_ok.setdefault(r["why"], []).append(n)
        elif r["status"] in ("fail", "error", "hang"):
            bad.append((n, "%s: %s" % (r["status"], r["why"])))
        elif n in expected:
            xpass.append((n, expected[n][0]))

    print("\n== skips (reason: tests)")
    for why, ns in sorted(skip_ok.items()):
        print("  %s: %d (%s)" % (why, len(ns), ", ".join(x.split(".")[-1] for x in ns[:6]) + (" ..." if len(ns) > 6 else "")))
    if aside:
        print("== set aside (--no-vendor): %d vendor tests (test_mlx5_*, test_efa*)" % len(aside))
    if xfail:
        print("== expected to fail until a branch merges (expected_fail.txt): %d" % len(xfail))
        by = {}
        for n, b in xfail:
            by.setdefault(b, []).append(n)
        for b, ns in sorted(by.items()):
            print("  until %s: %d" % (b, len(ns)))
    for n, b in xpass:
        bad.append((n, "passed but expected_fail.txt expects it to fail until %s: remove the line" % b))
    if ref:
        print("== against the reference row (%s)" % a.reference)
        both = [n for n in names if ref.get(n) == "pass" and results[n]["status"] == "pass"]
        miss = [n for n in names if ref.get(n) == "pass" and results[n]["status"] != "pass"]
        more = [n for n in names if ref.get(n) not in (None, "pass") and results[n]["status"] == "pass"]
        print("  pass on both: %d; pass on the reference only: %d; pass on this run only: %d"
              % (len(both), len(miss), len(more)))
        for n in miss:
            print("  reference passes, this run %s: %s" % (results[n]["status"], n))
            # issue 22 §5: what passes on rxe passes on droce (a skip of a
            # feature left out on purpose is no exception: rxe has it)
            if n not in expected and results[n]["status"] != "skip":
                bad.append((n, "passes on the reference (rxe), %s here" % results[n]["status"]))
    if bad:
        print("== unexpected (%d)" % len(bad))
        for n, why in bad:
            print("  %s: %s" % (n, why))
    print("\nconformance: %d tests in %.0f s: %d pass, %d skip, %d fail, %d error, %d hang"
          % (len(names), time.monotonic() - t0, counts["pass"], counts["skip"], counts["fail"],
             counts["error"], counts["hang"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "results": [results[n] for n in names],
                       "set_aside": aside}, f, indent=1)
    if a.print_json:
        print("== json")
        print(json.dumps({"counts": counts, "results": [results[n] for n in names],
                          "set_aside": aside}))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("suite kept in", tdir)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
