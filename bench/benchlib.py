"""What the bench scripts share (bench/run, bench/dpdk/*,
bench/sim-validation/run): the CPUs their runs are pinned to, the counts
of a callgrind output, and the DPDK devices, flowswitch ports and EAL
arguments of their DPDK runs. What machine a result came from is
machine.py's."""
import math
import os
import re
import shutil

# ---- CPUs ---------------------------------------------------------------------

# The DPDK runs: the forwarding (PMD) thread on CPU 1, the main thread (the
# EAL's main lcore) on CPU 0.
PMD_CORE = 1
MAIN_CORE = 0


def bench_cpus():
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def pin(cpu):
    """A subprocess preexec_fn that pins the child to cpu, or None when this
    process may run on one CPU only (there is nothing to choose)."""
    if len(bench_cpus()) < 2:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


# ---- callgrind ------------------------------------------------------------------

def callgrind_cmd(out, toggle, valgrind="valgrind", instr_atstart=True):
    """The start of a command line that runs a program under callgrind,
    counting the instructions of function toggle (and what it calls) into
    the file out; instr_atstart=False leaves instrumentation off until
    `callgrind_control -i on`."""
    return ([valgrind, "--tool=callgrind"] + ([] if instr_atstart else ["--instr-atstart=no"]) +
            [f"--toggle-collect={toggle}", f"--callgrind-out-file={out}"])


def callgrind_counts(path, calls_of=None):
    """(instructions, calls) of a callgrind output file: the count of its
    summary (or totals) line, None if it has none, and the calls it records
    of the function named calls_of (0 without one)."""
    names, total, calls, want = {}, None, 0, False
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
            if calls_of is None:
                continue
            # Function names are compressed: "fn=(id) name" once, "(id)" after.
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if m and m.group(2):
                names[m.group(1)] = m.group(2).strip()
            if line.startswith("cfn="):
                want = bool(m) and names.get(m.group(1)) == calls_of
            elif line.startswith("calls=") and want:
                calls += int(line.split("=")[1].split()[0])
                want = False
    return total, calls


# ---- DPDK devices, ports and EAL arguments --------------------------------------

# Memory per mbuf, generous for every system's default 2176-byte data room
# with its metadata (flowswitch's struct pkt, OVS's dp_packet) and the
# mempool's headers: sizes -m and the hugepage reservation.
MBUF_KB = 3.2


def pcap_rx_devargs(pcap, n=0):
    """net_pcap port n replaying the file pcap in a loop (the traffic)."""
    return f"net_pcap{n},rx_pcap={pcap},infinite_rx=1"


def null_tx_devargs(n=0):
    """net_null port n: takes what is sent, receives nothing (the sink)."""
    return f"net_null{n},size=64,no-rx=1"


def fs_mbufs(packets):
    """flowswitch's rx pool for a file of packets: net_pcap infinite_rx
    keeps every packet of the file in an mbuf, plus room for the queues."""
    return packets + 16384


def run_mem_mb(system, packets):
    """EAL memory (MB) of one run on a file of packets; OVS at least the
    2 GB its per-port pools and datapath need at MTU 1500."""
    if system == "ovs":
        return max(2048, 1024 + math.ceil((packets + 40960) * MBUF_KB / 1024))
    return 512 + math.ceil((packets + 32768) * MBUF_KB / 1024)


def fs_pcap_port(pcap, mbufs):
    """The lines of a flowswitch [port] replaying pcap (pcap_rx_devargs())."""
    return ["type = dpdk", f"devargs = {pcap_rx_devargs(pcap)}", f"mbufs = {mbufs}"]


def fs_null_port(n=0):
    """The lines of a flowswitch [port] on net_null port n, polled for
    nothing (no rx queue)."""
    return ["type = dpdk", f"devargs = {null_tx_devargs(n)}", "rxqs = 0"]


def fs_pcap_null_config(pcap, mbufs, rules, p0_extra=()):
    """A flowswitch config: p0 replays pcap (with the lines p0_extra), p1 is
    the net_null sink, the rules are the file rules's."""
    return ("[port p0]\n" + "\n".join(fs_pcap_port(pcap, mbufs) + list(p0_extra)) +
            "\n\n[port p1]\n" + "\n".join(fs_null_port()) +
            f"\n\n[rules]\ninclude = {rules}\n")


def dpdk_runtime_dir():
    """Where the EAL keeps a process's runtime files (one directory per
    --file-prefix)."""
    if os.geteuid() == 0:
        return "/var/run/dpdk"
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")


def remove_runtime(prefix):
    """Removes the EAL runtime directory of --file-prefix prefix."""
    shutil.rmtree(os.path.join(dpdk_runtime_dir(), prefix), ignore_errors=True)


def eal_mem_args(mem, huge_dir=None, legacy=False):
    """-m mem (MB) on the hugepages mounted at huge_dir (unlinked once
    mapped), or without hugepages when huge_dir is None (with OVS's
    --legacy-mem when legacy)."""
    if huge_dir:
        return ["-m", str(mem), "--huge-dir", huge_dir, "--huge-unlink"]
    return ["--no-huge"] + (["--legacy-mem"] if legacy else []) + ["-m", str(mem)]


def ovs_eal_extra(prefix, mem, huge_dir=None):
    """OVS-DPDK's other_config:dpdk-extra: its memory and --file-prefix,
    without PCI and telemetry."""
    return " ".join(eal_mem_args(mem, huge_dir, legacy=True) +
                    ["--no-pci", "--no-telemetry", "--file-prefix", prefix])


class Eal:
    """The EAL arguments of one flowswitch or testpmd process: the lcores
    of cores, mem MB (eal_mem_args()), its own --file-prefix, whose runtime
    directory cleanup() removes."""

    def __init__(self, prefix, mem, cores=str(MAIN_CORE), huge_dir=None):
        self.prefix = prefix
        self.args = (["-l", cores, "--no-pci"] + eal_mem_args(mem, huge_dir) +
                     ["--file-prefix", prefix, "--log-level", "error", "--no-telemetry"])

    def cleanup(self):
        remove_runtime(self.prefix)
