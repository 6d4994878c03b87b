#!/usr/bin/python3
"""Capture what a real Linux guest stack hands to a vhost/virtio-net device.

    sudo /usr/bin/python3 testdata/capture/vhost-capture.py [--out DIR] [--verify-only]

Run by hand as root (never by `make check`). It writes, into DIR (default:
the directory of this script):

  vhost-csum-on.pcap   tap with TUN_F_CSUM: the kernel leaves TCP/UDP
                       checksums to the "device": every frame carries a
                       NEEDS_CSUM virtio-net header (csum_start = 14 + IP
                       header length, csum_offset = 16 for TCP, 6 for UDP)
                       and the L4 checksum field holds only the folded
                       pseudo-header sum;
  vhost-csum-off.pcap  the same traffic with TUN_F_CSUM off: complete
                       checksums and all-zero headers.

Both are LINKTYPE_USER0 (147) microsecond pcaps in the vnet-hdr record
layout of testdata/README.md: each record is the 12-byte virtio_net_hdr
(mrg_rxbuf layout) exactly as read from the tap, then the Ethernet frame.

How: inside a private network namespace (created with `ip netns add`,
deleted at the end) the script opens a tap device with IFF_TAP | IFF_NO_PI
| IFF_VNET_HDR, TUNSETVNETHDRSZ 12 and TUNSETOFFLOAD TUN_F_CSUM (or 0; never
TSO/UFO), gives it 192.0.2.1/24 and 2001:db8::1/64 and static neighbours
for the peer 192.0.2.2 / 2001:db8::2 (documentation addresses; nothing
leaves the namespace: the only "wire" is this script's tap fd). The
kernel's own sockets then drive
  * TCP over IPv4 and over IPv6: connect (full handshake), three data
    segments of different sizes (TCP_NODELAY), shutdown (FIN), final ACK;
  * UDP over IPv4 and IPv6: datagrams of 0, 1, 17, 200, 1001 and 1400 bytes;
and a responder thread plays the peer: it reads the frames the kernel sends
to the tap, records them, and writes crafted replies back into the tap
(SYN-ACK with an MSS option only, ACKs for data, FIN-ACK for the FIN), each
with a complete checksum and a zero virtio-net header. Frames that are not
part of this traffic (IPv6 control traffic such as MLD reports) are not
recorded; their count is printed.

Reads go through a zero-filled buffer with os.readv(): the tap writes only
the 10-byte virtio_net_hdr and skips num_buffers, so bytes 10..11 of every
record are 0 rather than stale memory.

After writing, the capture is verified (also alone with --verify-only):
csum-on frames must all be NEEDS_CSUM with the location above and the
pseudo-header sum in the field, and complete to a valid checksum;
csum-off frames must have zero headers and valid checksums.
"""

import argparse
import fcntl
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
TUNSETVNETHDRSZ = 0x400454D8
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000
TUN_F_CSUM = 0x01

VNET_HDR_LEN = 12
VNET_F_NEEDS_CSUM = 1
LINKTYPE_USER0 = 147

TAP = "fscap0"
TAP_MAC = bytes.fromhex("020000000001")
PEER_MAC = bytes.fromhex("020000000002")
LOCAL4, PEER4 = "192.0.2.1", "192.0.2.2"
LOCAL6, PEER6 = "2001:db8::1", "2001:db8::2"
TCP_PORT4, TCP_PORT6, UDP_PORT = 8004, 8006, 9000
PEER_ISN = 0x10000000
UDP_SIZES = (0, 1, 17, 200, 1001, 1400)
TCP_SEGMENTS = (b"G" * 100, b"H" * 333, b"I" * 1000)


# --------------------------------------------------------------------------
# checksums (independent of flowswitch)

def csum_sum(data):
    if len(data) % 2:
        data = data + b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
    return s


def fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo_sum(frame, l3, proto, l4len):
    if frame[12:14] == b"\x08\x00":
        return csum_sum(frame[l3 + 12:l3 + 20] + struct.pack("!BBH", 0, proto, l4len))
    return csum_sum(frame[l3 + 8:l3 + 40] + struct.pack("!IxxxB", l4len, proto))


def ip4_hdr_csum(hdr):
    h = bytearray(hdr)
    h[10:12] = b"\0\0"
    return 0xFFFF ^ fold(csum_sum(bytes(h)))


def l4_csum(frame, l3, l4, proto, l4len):
    seg = bytearray(frame[l4:l4 + l4len])
    field = 16 if proto == 6 else 6
    seg[field:field + 2] = b"\0\0"
    c = 0xFFFF ^ fold(csum_sum(bytes(seg)) + pseudo_sum(frame, l3, proto, l4len))
    if proto == 17 and c == 0:
        c = 0xFFFF
    return c


def layout(frame):
    """(l3, l4, proto, l4len) of an untagged IPv4/IPv6 TCP/UDP frame, or None."""
    et = frame[12:14]
    if et == b"\x08\x00":
        ihl = (frame[14] & 0x0F) * 4
        total = struct.unpack("!H", frame[16:18])[0]
        return 14, 14 + ihl, frame[23], total - ihl
    if et == b"\x86\xdd":
        plen = struct.unpack("!H", frame[18:20])[0]
        return 14, 54, frame[20], plen
    return None


# --------------------------------------------------------------------------
# crafting the peer's replies

def ip4(src, dst, proto, payload):
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0,
                                0x4000, 64, proto, 0, socket.inet_aton(src),
                                socket.inet_aton(dst)))
    hdr[10:12] = struct.pack("!H", ip4_hdr_csum(hdr))
    return b"\x08\x00" + bytes(hdr) + payload


def ip6(src, dst, proto, payload):
    return b"\x86\xdd" + struct.pack("!IHBB16s16s", 0x60000000, len(payload), proto, 64,
                                     socket.inet_pton(socket.AF_INET6, src),
                                     socket.inet_pton(socket.AF_INET6, dst)) + payload


def tcp_frame(v6, sport, dport, seq, ack, flags, mss=None):
    opts = struct.pack("!BBH", 2, 4, mss) if mss else b""
    off = (20 + len(opts)) // 4
    seg = bytearray(struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags,
                                65535, 0, 0) + opts)
    src, dst = (PEER6, LOCAL6) if v6 else (PEER4, LOCAL4)
    l3 = (ip6 if v6 else ip4)(src, dst, 6, bytes(seg))
    frame = bytearray(TAP_MAC + PEER_MAC + l3)
    l4 = 54 if v6 else 34
    frame[l4 + 16:l4 + 18] = struct.pack("!H", l4_csum(bytes(frame), 14, l4, 6, len(seg)))
    return bytes(frame)


# --------------------------------------------------------------------------
# the responder: records the kernel's frames and answers TCP

F_FIN, F_SYN, F_RST, F_PSH, F_ACK = 0x01, 0x02, 0x04, 0x08, 0x10


class Responder(threading.Thread):
    def __init__(self, fd):
        super().__init__(daemon=True)
        self.fd = fd
        self.records = []  # (ts_us, vnet header + frame)
        self.skipped = 0
        self.stop = False
        self.peer_fin = {}  # connection -> our FIN sent
        self.error = None

    def wanted(self, frame):
        lay = layout(frame)
        if not lay or lay[2] not in (6, 17):
            return False
        if frame[12:14] == b"\x08\x00":
            return frame[30:34] == socket.inet_aton(PEER4)
        return frame[38:54] == socket.inet_pton(socket.AF_INET6, PEER6)

    def send(self, frame):
        os.write(self.fd, bytes(VNET_HDR_LEN) + frame)

    def answer_tcp(self, frame):
        _, l4, _, l4len = layout(frame)
        v6 = frame[12:14] == b"\x86\xdd"
        sport, dport, seq, ack, off, flags = struct.unpack("!HHIIBB", frame[l4:l4 + 14])
        dlen = l4len - (off >> 4) * 4
        key = (v6, sport, dport)
        if flags & F_RST:
            return
        if flags & F_SYN:
            self.peer_fin[key] = False
            self.send(tcp_frame(v6, dport, sport, PEER_ISN, (seq + 1) & 0xFFFFFFFF,
                                F_SYN | F_ACK, mss=1460))
            return
        our_seq = PEER_ISN + 1 + (1 if self.peer_fin.get(key) else 0)
        if flags & F_FIN:
            nxt = (seq + dlen + 1) & 0xFFFFFFFF
            if not self.peer_fin.get(key):
                self.peer_fin[key] = True
                self.send(tcp_frame(v6, dport, sport, our_seq, nxt, F_FIN | F_ACK))
            else:
                self.send(tcp_frame(v6, dport, sport, our_seq, nxt, F_ACK))
        elif dlen:
            self.send(tcp_frame(v6, dport, sport, our_seq, (seq + dlen) & 0xFFFFFFFF,
                                F_ACK))

    def run(self):
        buf = bytearray(VNET_HDR_LEN + 65536)
        try:
            while not self.stop:
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if not r:
                    continue
                buf[:] = bytes(len(buf))
                n = os.readv(self.fd, [buf])
                rec = bytes(buf[:n])
                frame = rec[VNET_HDR_LEN:]
                if not self.wanted(frame):
                    self.skipped += 1
                    continue
                self.records.append((int(time.time() * 1e6), rec))
                if layout(frame)[2] == 6:
                    self.answer_tcp(frame)
        except Exception as e:  # reported by the main thread
            self.error = e


# --------------------------------------------------------------------------
# inner run (inside the namespace)

def sh(*cmd):
    subprocess.run(cmd, check=True)


def open_tap(csum):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    ifr = struct.pack("16sH22x", TAP.encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)
    fcntl.ioctl(fd, TUNSETIFF, ifr)
    fcntl.ioctl(fd, TUNSETVNETHDRSZ, struct.pack("i", VNET_HDR_LEN))
    fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM if csum else 0)
    return fd


def set_sysctl(path, value):
    with open("/proc/sys/" + path, "w") as f:
        f.write(value)


def drive_tcp(v6):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    peer = (PEER6, TCP_PORT6) if v6 else (PEER4, TCP_PORT4)
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(5)
    s.connect(peer)
    for seg in TCP_SEGMENTS:
        s.sendall(seg)
        time.sleep(0.05)  # one segment each, acked before the next
    s.shutdown(socket.SHUT_WR)
    if s.recv(10) != b"":  # the peer's FIN-ACK
        raise RuntimeError("unexpected data from the responder")
    time.sleep(0.05)
    s.close()


def drive_udp(v6):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    peer = (PEER6, UDP_PORT) if v6 else (PEER4, UDP_PORT)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for n in UDP_SIZES:
        s.sendto(bytes((i * 7 + n) & 0xFF for i in range(n)), peer)
        time.sleep(0.01)
    s.close()


def inner(csum, out):
    fd = open_tap(csum)
    set_sysctl(f"net/ipv6/conf/{TAP}/router_solicitations", "0")
    set_sysctl(f"net/ipv6/conf/{TAP}/accept_ra", "0")
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "link", "set", TAP, "address", TAP_MAC.hex(":"))
    sh("ip", "addr", "add", LOCAL4 + "/24", "dev", TAP)
    sh("ip", "-6", "addr", "add", LOCAL6 + "/64", "dev", TAP, "nodad")
    sh("ip", "link", "set", TAP, "up")
    sh("ip", "neigh", "replace", PEER4, "lladdr", PEER_MAC.hex(":"), "dev", TAP,
       "nud", "permanent")
    sh("ip", "-6", "neigh", "replace", PEER6, "lladdr", PEER_MAC.hex(":"), "dev", TAP,
       "nud", "permanent")
    resp = Responder(fd)
    resp.start()
    time.sleep(0.3)
    resp.records.clear()  # nothing before the traffic (it is filtered anyway)
    try:
        drive_tcp(False)
        drive_tcp(True)
        drive_udp(False)
        drive_udp(True)
        time.sleep(0.2)
    finally:
        resp.stop = True
        resp.join()
        os.close(fd)
    if resp.error:
        raise resp.error
    write_pcap(out, resp.records)
    print(f"{out}: {len(resp.records)} frames (TUN_F_CSUM {'on' if csum else 'off'}), "
          f"{resp.skipped} unrelated frames not recorded")


def write_pcap(path, records):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_USER0))
        for ts, rec in records:
            f.write(struct.pack("<IIII", ts // 10**6, ts % 10**6, len(rec), len(rec)))
            f.write(rec)


# --------------------------------------------------------------------------
# verification

def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", data[:24])
    if magic != 0xA1B2C3D4 or link != LINKTYPE_USER0:
        raise ValueError(f"{path}: not a LINKTYPE_USER0 microsecond pcap")
    off, recs = 24, []
    while off < len(data):
        _, _, caplen, _ = struct.unpack("<IIII", data[off:off + 16])
        recs.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return recs


def verify(path, csum):
    recs = read_pcap(path)
    problems = []
    kinds = {}
    for i, rec in enumerate(recs, 1):
        hdr, frame = rec[:VNET_HDR_LEN], rec[VNET_HDR_LEN:]
        flags, gso, _, _, start, offset, nbuf = struct.unpack("<BBHHHHH", hdr)
        l3, l4, proto, l4len = layout(frame)
        field = 16 if proto == 6 else 6
        stored = struct.unpack("!H", frame[l4 + field:l4 + field + 2])[0]
        full = l4_csum(frame, l3, l4, proto, l4len)
        name = ("ipv6" if l3 and frame[12:14] == b"\x86\xdd" else "ipv4") + \
            ("/tcp" if proto == 6 else "/udp")
        kinds[name] = kinds.get(name, 0) + 1
        if gso or nbuf:
            problems.append(f"record {i}: gso_type {gso}, num_buffers {nbuf}")
        if frame[12:14] == b"\x08\x00" and ip4_hdr_csum(frame[14:l4]) != \
                struct.unpack("!H", frame[24:26])[0]:
            problems.append(f"record {i}: bad IPv4 header checksum")
        if csum:
            want = fold(pseudo_sum(frame, l3, proto, l4len))
            if flags != VNET_F_NEEDS_CSUM or start != l4 or offset != field:
                problems.append(f"record {i}: header flags {flags} start {start} "
                                f"offset {offset}, expected 1/{l4}/{field}")
            if stored != want:
                problems.append(f"record {i}: field 0x{stored:04x}, pseudo-header "
                                f"sum 0x{want:04x}")
            # Completing per the virtio spec (sum from csum_start, field
            # included) must give the full checksum.
            done = 0xFFFF ^ fold(csum_sum(frame[start:]))
            if proto == 17 and done == 0:
                done = 0xFFFF
            if done != full:
                problems.append(f"record {i}: completion 0x{done:04x} != 0x{full:04x}")
        else:
            if hdr != bytes(VNET_HDR_LEN):
                problems.append(f"record {i}: non-zero header {hdr.hex()}")
            if stored != full:
                problems.append(f"record {i}: checksum 0x{stored:04x}, "
                                f"expected 0x{full:04x}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    print(f"{path}: {len(recs)} records ({summary}): "
          f"{'OK' if not problems else str(len(problems)) + ' problems'}")
    for p in problems:
        print("  " + p)
    return not problems


# --------------------------------------------------------------------------

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=here, help="output directory (default: %(default)s)")
    ap.add_argument("--verify-only", action="store_true",
                    help="only verify the captures already in --out")
    ap.add_argument("--inner", choices=["on", "off"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    on = os.path.join(args.out, "vhost-csum-on.pcap")
    off = os.path.join(args.out, "vhost-csum-off.pcap")
    if args.inner:
        inner(args.inner == "on", on if args.inner == "on" else off)
        return 0
    if not args.verify_only:
        if os.geteuid() != 0:
            print("vhost-capture.py: must run as root (network namespace, tap)",
                  file=sys.stderr)
            return 2
        os.makedirs(args.out, exist_ok=True)
        for mode in ("on", "off"):
            ns = f"fscap-{os.getpid()}-{mode}"
            sh("ip", "netns", "add", ns)
            try:
                sh("ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__),
                   "--out", args.out, "--inner", mode)
            finally:
                sh("ip", "netns", "delete", ns)
    ok = verify(on, True) & verify(off, False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
