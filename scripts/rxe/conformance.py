#!/usr/bin/python3
# The reference row of the conformance suite: tests/conformance/run.py run in
# the rxe guest (--direct --dev rxe0: Debian's own libraries on Linux's rxe),
# through the guest agent (the script goes as `python3 -c`, the guest has
# python3-pyverbs), one test per process as on droce.  Writes the results as
# tests/conformance/rxe_reference.txt's lines ("test | status | reason").
import argparse, json, socket, sys

ap = argparse.ArgumentParser()
ap.add_argument("--runner", required=True, help="tests/conformance/run.py")
ap.add_argument("--out", required=True)
ap.add_argument("--guest", default="198.18.0.2")
ap.add_argument("--agent-port", type=int, default=7100)
ap.add_argument("--timeout", type=int, default=120, help="per test, seconds")
ap.add_argument("--only", help="run.py --only")
ap.add_argument("--log", help="write the runner's whole output here")
a = ap.parse_args()

cmd = ["python3", "-c", open(a.runner).read(), "--direct", "--dev", "rxe0", "--jobs", "1",
       "--timeout", str(a.timeout), "--print-json", "--data", "/nonexistent"]
if a.only:
    cmd += ["--only", a.only]
total = 6 * 3600
with socket.create_connection((a.guest, a.agent_port), timeout=10) as s:
    s.settimeout(total + 60)
    s.sendall((json.dumps({"cmd": cmd, "timeout": total}) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        k = s.recv(1 << 20)
        if not k:
            break
        buf += k
res = json.loads(buf)
out = res.get("out", "")
if a.log:
    open(a.log, "w").write(out)
if "== json\n" not in out:
    sys.stderr.write(out[-4000:])
    sys.exit("rxe conformance: the guest's run gave no results (rc %s)" % res.get("rc"))
data = json.loads(out.split("== json\n", 1)[1].splitlines()[0])
with open(a.out, "w") as f:
    f.write("# rdma-core 44's pyverbs suite (Debian python3-pyverbs) on Linux rxe (rxe0),\n"
            "# made by scripts/rxe-interop --conformance (tests/conformance/run.py in the guest)\n"
            "# counts: %s\n" % json.dumps(data["counts"]))
    for r in data["results"]:
        f.write("%s | %s | %s\n" % (r["test"], r["status"], r["why"].replace("|", "/")))
print("rxe conformance: %s -> %s" % (json.dumps(data["counts"]), a.out))
