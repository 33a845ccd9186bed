#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The switch model's memif links (issue 25 section 5, two processes).

Runs scripts/incast --two-process: the receiver is a process of its own,
its memif port a link of the switch in the senders' process.  Checks
counts, never speeds:
- both runs end with exit 0 and the receiver's bytes equal the senders'
  pattern (droce-incast's check, bytes_bad);
- DCQCN off: the link's egress queue (read through droce_stats_switch_link)
  passes kmax, the switch marks CE, and the receiver in the other process
  counts CE frames and sends CNPs;
- DCQCN on (ConnectX's defaults): the senders receive CNPs from the other
  process, and the queue's p99 stays below DCQCN off's.

usage: test_switch_link.py DROCE_INCAST SCRIPTS_INCAST
"""
import json
import os
import subprocess
import sys
import tempfile

N = 2


def main():
    binary, script = sys.argv[1], sys.argv[2]
    fails = []
    with tempfile.TemporaryDirectory(prefix='droce-swlink-') as out:
        cmd = [sys.executable, script, '--two-process', '--senders', str(N), '--modes', 'off,mlx5',
               '--warmup-ms', '1000', '--run-ms', '3000', '--sample-us', '5000',
               '--no-plots', '--out', out, '--binary', binary]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
        print(r.stdout)
        print(r.stderr, file=sys.stderr)
        path = os.path.join(out, 'incast-2p.json')
        if r.returncode != 0 or not os.path.exists(path):
            print('not ok: scripts/incast failed (exit %d)' % r.returncode)
            return 1
        with open(path) as f:
            res = {x['mode']: x for x in json.load(f)['results']}

    def check(what, ok):
        print('%s: %s' % ('ok' if ok else 'FAIL', what))
        if not ok:
            fails.append(what)

    kmax = 100 << 10  # scripts/incast's default --kmax-kib
    for mode in ('off', 'mlx5'):
        check('%s: the run gave results' % mode, mode in res)
    if fails:
        return 1
    for mode, x in res.items():
        check('%s: through the link (two_process)' % mode, x['two_process'] is True)
        check('%s: the receiver holds the senders\' bytes (bytes_bad %d)' % (mode, x['bytes_bad']),
              x['bytes_bad'] == 0)
        check('%s: WRITEs completed (goodput %.0f Mb/s)' % (mode, x['goodput_mbps']),
              x['goodput_mbps'] > 0)
        check('%s: probes completed (%d)' % (mode, x['probe_n']), x['probe_n'] > 0)
    off, on = res['off'], res['mlx5']
    check('off: the link queue passed kmax (max %d)' % off['queue_max_bytes'],
          off['queue_max_bytes'] > kmax)
    check('off: the switch marked CE (%d)' % off['ce_marked'], off['ce_marked'] > 0)
    check('off: the receiver process counted CE frames (%d)' % off['ce_received'],
          off['ce_received'] > 0)
    check('off: the receiver process sent CNPs (%d)' % off['cnp_sent'], off['cnp_sent'] > 0)
    # the two counts are taken in two processes a socket message apart:
    # frames marked at the window's edges may fall on one side only
    for mode, x in res.items():
        check('%s: CE frames received (%d) = marked by the switch (%d), give or take the edges' %
              (mode, x['ce_received'], x['ce_marked']),
              abs(x['ce_received'] - x['ce_marked']) <= max(64, x['ce_marked'] // 50))
    check('mlx5: the senders received CNPs from the other process (%d)' % on['cnp_received'],
          on['cnp_received'] > 0)
    check('mlx5: the queue p99 (%d) below DCQCN off\'s (%d)' %
          (on['queue_p99_bytes'], off['queue_p99_bytes']),
          on['queue_p99_bytes'] < off['queue_p99_bytes'])
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
