#!/usr/bin/python3
# Control agent of the rxe interop guest.  One request per TCP connection:
# the host sends one JSON line {"cmd": [argv...], "timeout": seconds} and reads
# back one JSON line {"rc": N, "out": "stdout+stderr", "secs": elapsed}; rc is
# 124 when the command ran out of time (its process group is killed).
# {"cmd": ["ping"]} answers rc 0 at once; {"cmd": ["killjobs"]} kills (by
# pid) the process groups of the commands still running.
import json, os, signal, socket, subprocess, sys, threading, time

jobs, jobs_lock = set(), threading.Lock()

def serve(conn):
    try:
        f = conn.makefile("rwb")
        req = json.loads(f.readline())
        cmd, timeout = req["cmd"], float(req.get("timeout", 60))
        t0 = time.monotonic()
        if cmd == ["ping"]:
            res = {"rc": 0, "out": "pong\n"}
        elif cmd == ["killjobs"]:
            with jobs_lock:
                for pid in jobs:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                res = {"rc": 0, "out": "killed %d\n" % len(jobs)}
        else:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            with jobs_lock:
                jobs.add(p.pid)
            try:
                out, _ = p.communicate(timeout=timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
                rc = 124
            finally:
                with jobs_lock:
                    jobs.discard(p.pid)
            res = {"rc": rc, "out": out.decode(errors="replace")}
        res["secs"] = round(time.monotonic() - t0, 3)
        f.write((json.dumps(res) + "\n").encode())
        f.flush()
    except Exception as e:  # a broken request must not kill the agent
        try:
            conn.sendall((json.dumps({"rc": 125, "out": "agent: %r\n" % e}) + "\n").encode())
        except OSError:
            pass
    finally:
        conn.close()

def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(8)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()

main()
