#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What droce processes left outside themselves (issue 28), for scripts/test.sh.

  residue_check.py snapshot FILE   records the runtime area and the sockets
  residue_check.py check FILE      compares with FILE: exit 1 on leftovers

The runtime area is DPDK's <run>/dpdk (<run> = $RUNTIME_DIRECTORY, else
/var/run for root, else $XDG_RUNTIME_DIR or /tmp), hugepage files of droce
prefixes, and the Unix socket files under /tmp, /run and <run> that are in
<run>/dpdk or have "droce" in their path (the tests' memif sockets).  A leftover
is an entry that was not there at the snapshot, is still there two seconds
later, and no live process uses: a runtime directory whose droce.lock nobody
holds and where nobody listens on a socket; a socket file nobody has bound
(/proc/net/unix).  Live entries (another program running on the machine
meanwhile) are listed but do not fail the check.
"""
import errno
import fcntl
import json
import os
import stat
import sys
import time

LOCK = "droce.lock"
SOCKET_ROOTS = ["/tmp", "/run"]
SOCKET_DEPTH = 4


def run_base():
    run = os.environ.get("RUNTIME_DIRECTORY")
    if not run:
        run = "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(run, "dpdk")


def socket_roots():
    roots = SOCKET_ROOTS + [os.path.dirname(run_base())]
    seen, out = set(), []
    for r in roots:
        real = os.path.realpath(r)
        if real not in seen and os.path.isdir(real):
            seen.add(real)
            out.append(real)
    return out


def runtime_dirs():
    base = run_base()
    try:
        return sorted(os.path.join(base, n) for n in os.listdir(base)
                      if os.path.isdir(os.path.join(base, n)))
    except OSError:
        return []


def ours(path):
    """A socket droce or its tests made: in the runtime area, or named droce*
    (the tests' memif sockets are /tmp/droce-*); other programs' sockets
    (another user of the machine, the system's) are not judged."""
    if path.startswith(run_base() + os.sep):
        return True
    for area in ("/var/run/dpdk", "/run/dpdk", "/tmp/dpdk"):
        # another runtime area than this run's: other programs' processes
        if os.path.realpath(path).startswith(os.path.realpath(area) + os.sep):
            return False
    return "droce" in path


def sockets():
    out = []
    for root in socket_roots():
        top = root.count(os.sep)
        for d, dirs, files in os.walk(root, onerror=lambda e: None):
            if d.count(os.sep) - top >= SOCKET_DEPTH:
                dirs[:] = []
            for f in files:
                p = os.path.join(d, f)
                try:
                    if stat.S_ISSOCK(os.lstat(p).st_mode) and ours(p):
                        out.append(p)
                except OSError:
                    pass
    return sorted(set(out))


def hugepage_files():
    out = []
    for mnt in ("/dev/hugepages", "/mnt/huge"):
        try:
            out += [os.path.join(mnt, n) for n in os.listdir(mnt) if n.startswith("droce")]
        except OSError:
            pass
    return sorted(out)


def bound_paths():
    """Paths of every Unix socket some process has bound (this namespace)."""
    out = set()
    try:
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) >= 8:
                    out.add(parts[7])
    except OSError:
        pass
    return out


def lock_held(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)


def dir_live(d, bound):
    if lock_held(os.path.join(d, LOCK)):
        return True
    try:
        return any(os.path.join(d, n) in bound for n in os.listdir(d))
    except OSError:
        return False


def snapshot():
    return {"runtime": runtime_dirs(), "sockets": sockets(), "huge": hugepage_files()}


def new_entries(before):
    now = snapshot()
    return {k: sorted(set(now[k]) - set(before[k])) for k in now}


def classify(before):
    bound = bound_paths()
    new = new_entries(before)
    stale, live = [], []
    for d in new["runtime"]:
        (live if dir_live(d, bound) else stale).append(d)
    for s in new["sockets"]:
        (live if s in bound else stale).append(s)
    stale += new["huge"]
    return stale, live


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("snapshot", "check"):
        sys.exit(__doc__)
    what, path = sys.argv[1:]
    if what == "snapshot":
        with open(path, "w") as f:
            json.dump(snapshot(), f)
        return 0
    with open(path) as f:
        before = json.load(f)
    stale, live = classify(before)
    if stale:
        time.sleep(2)  # a process still exiting removes its own
        stale2, live2 = classify(before)
        stale = [s for s in stale if s in stale2]
        live = sorted(set(live) | set(live2))
    for p in live:
        print("residue: in use by a running process (not counted): %s" % p)
    for p in stale:
        detail = ""
        if os.path.isdir(p):
            try:
                detail = " [%s]" % " ".join(sorted(os.listdir(p)))
            except OSError:
                pass
        print("residue: LEFT BEHIND: %s%s" % (p, detail))
    print("residue: %d left behind, %d in use, runtime area %s"
          % (len(stale), len(live), run_base()))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
