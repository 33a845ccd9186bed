#!/usr/bin/env bash
# The main job: installs what is missing, builds the release flavour and runs
# the loopback benchmark over the embedded in-memory config (two ports joined
# in memory, 198.18.0.1 <-> 198.18.0.2, --no-huge --no-pci).  Until droce-perf
# exists this is droce-loop: RoCEv2 frames built, sent, received, parsed and
# checked in both directions.  Arguments go to droce-loop (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh release
exec build/apps/droce-loop "$@"
