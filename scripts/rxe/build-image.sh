#!/bin/bash
# Build (or reuse) the Debian 12 guest used by scripts/rxe-interop:
#   $DIR/rootfs/      debootstrap'ed bookworm (minbase + Debian kernel, rdma-core, perftest,
#                     rdmacm-utils); rebuilt when PACKAGES below changes (the list is
#                     recorded in rootfs/.droce-rootfs-done)
#   $DIR/vmlinuz, $DIR/initrd.img   kernel and a small initramfs (virtio + ext4 only)
#   $DIR/disk.ext4    the root file system (rebuilt when the agent files change)
# Usage: build-image.sh DIR [--rebuild]
set -euo pipefail
DIR=${1:?usage: build-image.sh DIR [--rebuild]}
HERE=$(cd "$(dirname "$0")" && pwd)
MIRROR=${DROCE_RXE_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
ROOT=$DIR/rootfs

if [ "${2:-}" = --rebuild ]; then rm -rf "$ROOT" "$DIR"/rootfs.tmp "$DIR"/disk.ext4 "$DIR"/vmlinuz "$DIR"/initrd.img; fi

need() { command -v "$1" >/dev/null 2>&1; }
if ! need debootstrap || ! need qemu-system-x86_64 || ! need mkfs.ext4; then
    echo "rxe: installing debootstrap, qemu-system-x86, e2fsprogs" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        debootstrap qemu-system-x86 e2fsprogs >&2
fi

# The guest's packages.  The rootfs cache is keyed on this list: changing it
# rebuilds the rootfs (as --rebuild does).
PACKAGES=linux-image-amd64,initramfs-tools,kmod,rdma-core,ibverbs-providers,ibverbs-utils,perftest,rdmacm-utils,iproute2,python3,procps,ethtool,python3-pyverbs,iperf3,sockperf,libfabric-bin,ucx-utils,fio
if [ -e "$ROOT/.droce-rootfs-done" ] && [ "$(cat "$ROOT/.droce-rootfs-done")" != "$PACKAGES" ]; then
    echo "rxe: the guest's package list changed: rebuilding the rootfs" >&2
    rm -rf "$ROOT" "$DIR"/disk.ext4
fi

if [ ! -e "$ROOT/.droce-rootfs-done" ]; then
    t0=$(date +%s)
    echo "rxe: debootstrap bookworm into $ROOT (a few minutes)" >&2
    rm -rf "$DIR/rootfs.tmp"
    debootstrap --variant=minbase \
        --include="$PACKAGES" \
        bookworm "$DIR/rootfs.tmp" "$MIRROR" >&2
    R=$DIR/rootfs.tmp
    # A small initramfs: only what finding /dev/vda needs.
    sed -i 's/^MODULES=.*/MODULES=list/' "$R/etc/initramfs-tools/initramfs.conf"
    printf '%s\n' virtio_pci virtio_blk virtio_net ext4 crc32c_generic > "$R/etc/initramfs-tools/modules"
    KVER=$(ls "$R/lib/modules" | sort -V | tail -1)
    chroot "$R" update-initramfs -u -k "$KVER" >&2
    # Trim what a headless perftest guest never uses (keeps the ext4 image small).
    # /usr/share/doc goes, but for rdma-core's tests (python3-pyverbs puts the
    # conformance suite there: --conformance runs it in the guest)
    find "$R"/usr/share/doc -mindepth 1 -maxdepth 1 ! -name rdma-core -exec rm -rf {} +
    find "$R"/usr/share/doc/rdma-core -mindepth 1 -maxdepth 1 ! -name tests -exec rm -rf {} +
    rm -rf "$R"/lib/modules/"$KVER"/kernel/drivers/{gpu,media,net/wireless,sound,staging,bluetooth} \
           "$R"/lib/modules/"$KVER"/kernel/sound "$R"/usr/share/man/* \
           "$R"/usr/share/locale/* "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
    chroot "$R" depmod "$KVER"
    echo droce-rxe-guest > "$R/etc/hostname"
    echo "$PACKAGES" > "$R/.droce-rootfs-done"
    mv "$R" "$ROOT"
    echo "rxe: rootfs built in $(( $(date +%s) - t0 )) s" >&2
fi

# A rootfs trimmed before the line above kept has no pyverbs tests: take them
# from the same python3-pyverbs .deb the guest has (the version its dpkg
# status names, from Debian's archive), and write the disk image again.
if [ ! -e "$ROOT/usr/share/doc/rdma-core/tests/run_tests.py" ] && [ -e "$ROOT/usr/lib/python3/dist-packages/pyverbs" ]; then
    v=$(awk '/^Package: python3-pyverbs$/ {p = 1} p && /^Version:/ {print $2; exit}' "$ROOT/var/lib/dpkg/status")
    t=$(mktemp -d)
    if (cd "$t" && apt-get download -q "python3-pyverbs=$v" >&2) && dpkg-deb -x "$t"/python3-pyverbs_*.deb "$t/x"; then
        mkdir -p "$ROOT/usr/share/doc/rdma-core"
        cp -a "$t/x/usr/share/doc/rdma-core/tests" "$ROOT/usr/share/doc/rdma-core/"
        rm -f "$DIR/disk.ext4"
        echo "rxe: pyverbs tests $v added to the guest image" >&2
    else
        echo "rxe: could not fetch python3-pyverbs $v: the guest has no pyverbs tests" >&2
    fi
    rm -rf "$t"
fi

KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
cp -L "$ROOT/boot/vmlinuz-$KVER" "$DIR/vmlinuz"
cp -L "$ROOT/boot/initrd.img-$KVER" "$DIR/initrd.img"

# The guest agent lives in the image; rebuild the (cheap) ext4 image when it changed.
if [ ! -e "$DIR/disk.ext4" ] || [ "$HERE/guest-init" -nt "$DIR/disk.ext4" ] \
   || [ "$HERE/agent.py" -nt "$DIR/disk.ext4" ] || [ "$ROOT/.droce-rootfs-done" -nt "$DIR/disk.ext4" ]; then
    install -m 0755 "$HERE/guest-init" "$ROOT/sbin/droce-guest-init"
    install -m 0755 "$HERE/agent.py" "$ROOT/sbin/droce-agent"
    rm -f "$DIR/disk.ext4.tmp"
    mkfs.ext4 -q -F -L droce-rxe -d "$ROOT" "$DIR/disk.ext4.tmp" 1536M >&2
    mv "$DIR/disk.ext4.tmp" "$DIR/disk.ext4"
    echo "rxe: wrote $DIR/disk.ext4" >&2
fi
