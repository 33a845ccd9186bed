# SPDX-License-Identifier: BSD-3-Clause
# The guest's side of the rxe matrix's nvmf cell (issue 26 §2), sent as
# `python3 -c`: Linux's own NVMe-oF RDMA host (nvme-rdma over rxe0) against
# droce-nvmf.  The guest image has no nvme-cli, so this does what it does
# with the kernel's interfaces: /dev/nvme-fabrics to connect, the admin
# passthrough ioctl for the discovery log page, sysfs delete_controller to
# disconnect.  Then fio with crc32c verification over the namespace.
#
#   nvmf_guest.py TRADDR SUBNQN [figures]
# With `figures`, after the checks: fio's IOPS and completion latency (4 KiB
# random read / write at QD 1, 32, 128; 128 KiB sequential at QD 32) on the
# droce namespace, then the same jobs through the kernel's own target
# (nvmet-rdma on rxe0 in this guest, a 64 MiB brd RAM disk) as the reference.
import ctypes, fcntl, glob, json, os, re, struct, subprocess, sys, time

traddr, subnqn = sys.argv[1], sys.argv[2]
figures = len(sys.argv) > 3 and sys.argv[3] == "figures"
DISC = "nqn.2014-08.org.nvmexpress.discovery"
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:6b1f3a52-0c1d-4a8e-9f00-d20ce0000001"

def log(*a):
    print("nvmf-guest:", *a, flush=True)

def connect(nqn, extra="", hostnqn=HOSTNQN):
    opts = "transport=rdma,traddr=%s,trsvcid=4420,nqn=%s,hostnqn=%s%s" % (traddr, nqn, hostnqn, extra)
    fd = os.open("/dev/nvme-fabrics", os.O_RDWR)
    try:
        os.write(fd, opts.encode())
        ans = os.read(fd, 256).decode()
    finally:
        os.close(fd)
    d = dict(kv.split("=", 1) for kv in ans.strip().split(",") if "=" in kv)
    log("connected %s: %s" % (nqn, ans.strip()))
    return int(d["instance"]), int(d["cntlid"])

def delete(inst):
    with open("/sys/class/nvme/nvme%d/delete_controller" % inst, "w") as f:
        f.write("1")
    log("deleted nvme%d" % inst)

# struct nvme_admin_cmd (linux/nvme_ioctl.h), NVME_IOCTL_ADMIN_CMD = _IOWR('N', 0x41, 72 bytes)
ADMIN_CMD = 0xC0484E41
def admin(dev, opcode, nsid, cdw10, cdw11, cdw12, length):
    buf = ctypes.create_string_buffer(length)
    cmd = bytearray(struct.pack("<BBHIIIQQII6III", opcode, 0, 0, nsid, 0, 0, 0,
                                ctypes.addressof(buf), 0, length,
                                cdw10, cdw11, cdw12, 0, 0, 0, 0, 0))
    with open(dev, "rb") as f:
        fcntl.ioctl(f.fileno(), ADMIN_CMD, cmd)
    return buf.raw

def wait_path(p, secs=30):
    for _ in range(secs * 10):
        if os.path.exists(p):
            return True
        time.sleep(0.1)
    return False

subprocess.run(["modprobe", "nvme-rdma"], check=True)
if not wait_path("/dev/nvme-fabrics"):
    sys.exit("no /dev/nvme-fabrics")

# 1. discovery: the log page, header then every record (as nvme-cli reads it)
inst, _ = connect(DISC)
wait_path("/dev/nvme%d" % inst)
hdr = admin("/dev/nvme%d" % inst, 0x02, 0, 0x70 | (1024 // 4 - 1) << 16, 0, 0, 1024)
genctr, numrec = struct.unpack_from("<QQ", hdr, 0)
page = admin("/dev/nvme%d" % inst, 0x02, 0, 0x70 | ((1024 + numrec * 1024) // 4 - 1) << 16, 0, 0,
             1024 + numrec * 1024)
log("discovery log: %d records, generation %d" % (numrec, genctr))
found = False
for i in range(numrec):
    e = page[1024 + i * 1024: 2048 + i * 1024]
    trtype, adrfam, subtype = e[0], e[1], e[2]
    nqn = e[256:512].split(b"\0")[0].decode()
    addr = e[512:768].split(b"\0")[0].decode()
    svc = e[32:64].split(b"\0")[0].decode()
    log("  entry %d: trtype %d adrfam %d subtype %d traddr %s trsvcid %s subnqn %s qptype %d cms %d"
        % (i, trtype, adrfam, subtype, addr, svc, nqn, e[768], e[770]))
    found |= nqn == subnqn and addr == traddr and svc == "4420" and trtype == 1
delete(inst)
if not found:
    sys.exit("nvmf-guest: %s not in the discovery log" % subnqn)

# 2. connect the subsystem (I/O queues: one per vCPU, as nvme connect does)
before = set(glob.glob("/sys/block/nvme*"))
inst, cntlid = connect(subnqn)
blk = None
for _ in range(300):
    # the namespace's disk: nvme<subsys>n<nsid>; with native multipath the
    # path device nvme<subsys>c<ctrl>n<nsid> is hidden (no /dev node)
    new = [os.path.basename(p) for p in set(glob.glob("/sys/block/nvme*")) - before
           if re.fullmatch(r"nvme\d+n\d+", os.path.basename(p))]
    if new:
        blk = "/dev/" + sorted(new)[0]
        break
    time.sleep(0.1)
if blk is None or not wait_path(blk):
    log("/sys/block: %s" % " ".join(sorted(os.listdir("/sys/block"))))
    log("/sys/class/nvme/nvme%d: %s" % (inst, " ".join(sorted(os.listdir("/sys/class/nvme/nvme%d" % inst)))))
    for f in ("state", "queue_count", "sqsize"):
        log("  %s: %s" % (f, open("/sys/class/nvme/nvme%d/%s" % (inst, f)).read().strip()))
    sys.exit("nvmf-guest: no namespace block device appeared")
for f in ("state", "transport", "subsysnqn", "queue_count", "sqsize"):
    try:
        log("  /sys/class/nvme/nvme%d/%s: %s" % (inst, f, open("/sys/class/nvme/nvme%d/%s" % (inst, f)).read().strip()))
    except OSError:
        pass
log("namespace %s, %d bytes" % (blk, int(open("/sys/block/%s/size" % os.path.basename(blk)).read()) * 512))

# 3. fio, verified: random mixed sizes (in-capsule and keyed writes), 4 KiB
# random read/write mix, 128 KiB sequential; each writes then reads back with
# crc32c; several queue depths
jobs = [
    ["--rw=randwrite", "--bsrange=512-128k", "--iodepth=16"],
    ["--rw=randrw", "--bs=4k", "--iodepth=32"],
    ["--rw=write", "--bs=128k", "--iodepth=4"],
    ["--rw=randwrite", "--bs=4k", "--iodepth=1"],
]
for j in jobs:
    cmd = ["fio", "--name=v", "--filename=" + blk, "--direct=1", "--ioengine=libaio", "--size=8m",
           "--verify=crc32c", "--verify_fatal=1", "--do_verify=1", "--group_reporting",
           "--output-format=terse", "--terse-version=3"] + j
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    t = r.stdout.strip().splitlines()
    last = t[-1].split(";") if t else []
    # terse v3: field 5 is the error count
    err = last[4] if len(last) > 4 else "?"
    log("fio %s: rc %d err %s" % (" ".join(j), r.returncode, err))
    if r.returncode != 0 or err != "0":
        print(r.stdout)
        sys.exit("nvmf-guest: fio failed")

FIG_JOBS = [("4k randread", "randread", "4k", q) for q in (1, 32, 128)] + \
           [("4k randwrite", "randwrite", "4k", q) for q in (1, 32, 128)] + \
           [("128k seqread", "read", "128k", 32), ("128k seqwrite", "write", "128k", 32)]

def fio_figures(dev, label):
    for name, rw, bs, qd in FIG_JOBS:
        r = subprocess.run(["fio", "--name=f", "--filename=" + dev, "--direct=1", "--ioengine=libaio",
                            "--rw=" + rw, "--bs=" + bs, "--iodepth=%d" % qd, "--size=32m",
                            "--runtime=4", "--time_based", "--output-format=json"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        try:
            j = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
            d = j["read"] if "read" in rw else j["write"]
            pc = d["clat_ns"].get("percentile", {})
            log("figure %-10s %-14s qd %3d: %8.0f IOPS %8.1f MiB/s p50 %8.1f us p99 %8.1f us" % (
                label, name, qd, d["iops"], d["bw_bytes"] / 1048576.0,
                pc.get("50.000000", 0) / 1000.0, pc.get("99.000000", 0) / 1000.0))
        except (ValueError, KeyError, IndexError):
            log("figure %s %s qd %d: fio said: %s" % (label, name, qd, r.stdout[-400:]))

# a second host connects, moves data and leaves while the first one's fio runs
fio = subprocess.Popen(["fio", "--name=bg", "--filename=" + blk, "--direct=1", "--ioengine=libaio",
                        "--rw=randwrite", "--bs=4k", "--iodepth=8", "--size=8m", "--loops=4",
                        "--verify=crc32c", "--verify_fatal=1", "--do_verify=1",
                        "--output-format=terse", "--terse-version=3"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
time.sleep(2)
inst2, cntlid2 = connect(subnqn, ",hostid=6b1f3a52-0c1d-4a8e-9f00-d20ce0000002",
                         "nqn.2014-08.org.nvmexpress:uuid:6b1f3a52-0c1d-4a8e-9f00-d20ce0000002")
state2 = open("/sys/class/nvme/nvme%d/state" % inst2).read().strip()
log("second host: nvme%d cntlid %d (first %d), state %s" % (inst2, cntlid2, cntlid, state2))
time.sleep(3)
delete(inst2)
out, _ = fio.communicate(timeout=600)
last = out.strip().splitlines()[-1].split(";") if out.strip() else []
err = last[4] if len(last) > 4 else "?"
log("fio while a second host came and went: rc %d err %s" % (fio.returncode, err))
if fio.returncode != 0 or err != "0" or cntlid2 == cntlid or state2 != "live":
    print(out)
    sys.exit("nvmf-guest: the second host's visit disturbed the first")

if figures:
    fio_figures(blk, "droce-nvmf")

# 4. disconnect
delete(inst)

def nvmet_reference():
    # the kernel's own target on this guest's rxe0, a RAM disk namespace
    ref = "nqn.2026-11.dev.droce:nvmet-ref"
    subprocess.run(["modprobe", "brd", "rd_nr=1", "rd_size=65536"], check=True)
    subprocess.run(["modprobe", "nvmet-rdma"], check=True)
    cfs = "/sys/kernel/config/nvmet"
    if not os.path.isdir(cfs):
        subprocess.run(["mount", "-t", "configfs", "none", "/sys/kernel/config"], check=False)
    sd, pd = cfs + "/subsystems/" + ref, cfs + "/ports/1"
    os.makedirs(sd, exist_ok=True)
    open(sd + "/attr_allow_any_host", "w").write("1")
    os.makedirs(sd + "/namespaces/1", exist_ok=True)
    open(sd + "/namespaces/1/device_path", "w").write("/dev/ram0")
    open(sd + "/namespaces/1/enable", "w").write("1")
    os.makedirs(pd, exist_ok=True)
    for k, v in (("addr_trtype", "rdma"), ("addr_adrfam", "ipv4"), ("addr_traddr", guest_ip),
                 ("addr_trsvcid", "4420")):
        open(pd + "/" + k, "w").write(v)
    os.symlink(sd, pd + "/subsystems/" + ref)
    try:
        global traddr
        saved, traddr = traddr, guest_ip
        before = set(glob.glob("/sys/block/nvme*"))
        i, _ = connect(ref)
        traddr = saved
        dev = None
        for _ in range(300):
            new = [os.path.basename(p) for p in set(glob.glob("/sys/block/nvme*")) - before
                   if re.fullmatch(r"nvme\d+n\d+", os.path.basename(p))]
            if new:
                dev = "/dev/" + sorted(new)[0]
                break
            time.sleep(0.1)
        if dev and wait_path(dev):
            fio_figures(dev, "nvmet-rdma")
        delete(i)
    finally:
        os.unlink(pd + "/subsystems/" + ref)
        os.rmdir(pd)
        open(sd + "/namespaces/1/enable", "w").write("0")
        os.rmdir(sd + "/namespaces/1")
        os.rmdir(sd)

if figures:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "eth0"], stdout=subprocess.PIPE, text=True).stdout
    guest_ip = out.split("inet ")[1].split("/")[0]
    nvmet_reference()
log("ok")
