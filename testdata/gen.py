#!/usr/bin/python3
"""Generate flowswitch's test pcaps and the expected replay outputs.

    /usr/bin/python3 testdata/gen.py           # (re)write every generated file
    /usr/bin/python3 testdata/gen.py --check   # regenerate into a temp dir and
                                               # diff against the committed files

What it writes (paths relative to the repository root):

* testdata/pcap/*.pcap: a mixed corpus (IPv4/IPv6 TCP, UDP, ICMP, SCTP, ARP,
  802.1Q, QinQ, IPv6 extension headers, fragments, VXLAN, malformed frames),
  replayed by `make demo` through demo/demo.ini (also written here).
* tests/replay/<case>/: config.ini, in-*.pcap (the inputs), expected/*.pcap
  (one per tx file the config writes) and `checks` (JSON counters). See
  tests/replay/README.md.

The expected outputs are computed here, independently of flowswitch: a small
Python reference model parses each frame (raw bytes), looks up the case's
rules (the same ovs-ofctl text that goes into config.ini) and applies the
documented action semantics. Set-field actions update checksums
incrementally (RFC 1624) exactly as the datapath contract says (an IPv4 UDP
checksum of 0 stays 0, later fragments keep their L4 bytes); every frame the
model emits that is not a fragment is then cross-checked against scapy
recomputing its IP/L4 checksums from scratch, and modified first fragments
against re-fragmenting the modified whole datagram.

Everything is deterministic: fixed addresses, fixed integer-microsecond
timestamps, no randomness. Pcap files are written byte by byte by
pcap_bytes() below (libpcap format 2.4, little endian, snaplen 65535).
"""

import argparse
import ipaddress
import os
import shutil
import struct
import sys
import tempfile

import logging

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import (  # noqa: E402
    ARP, ICMP, IP, SCTP, TCP, UDP, VXLAN, Ether, ICMPv6EchoReply,
    ICMPv6EchoRequest, ICMPv6ND_NS, IPOption_RR, IPv6, IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting, Raw,
    conf)

conf.verb = 0

# --------------------------------------------------------------------------
# pcap files

PCAP_MAGIC_US = 0xa1b2c3d4
PCAP_MAGIC_NS = 0xa1b23c4d
LINKTYPE_ETHERNET = 1


class Frame:
    """One pcap record: ts in microseconds (nanoseconds in an nsec file),
    the captured bytes, the wire length (> len(data): caplen < len) and,
    for frames built to be malformed, the parse error they must raise."""

    def __init__(self, ts, data, wirelen=None, bad=None, want=False):
        self.ts = ts
        self.data = bytes(data)
        self.wirelen = len(self.data) if wirelen is None else wirelen
        self.bad = bad
        self.want = want  # the port its first copy must leave on, None: dropped


def pcap_bytes(frames, nsec=False, linktype=LINKTYPE_ETHERNET):
    magic = PCAP_MAGIC_NS if nsec else PCAP_MAGIC_US
    unit = 10**9 if nsec else 10**6
    out = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)]
    for f in frames:
        sec, frac = divmod(f.ts, unit)
        out.append(struct.pack("<IIII", sec, frac, len(f.data), f.wirelen))
        out.append(f.data)
    return b"".join(out)


# --------------------------------------------------------------------------
# addresses, timestamps, packet helpers

T0 = 1700000000 * 10**6  # 2023-11-14 22:13:20 UTC, in microseconds


def ts(ms, us=0):
    """A timestamp ms milliseconds (+ us microseconds) after T0."""
    return T0 + ms * 1000 + us


def mac(n):
    return "02:00:00:00:00:%02x" % n


BCAST = "ff:ff:ff:ff:ff:ff"


def E(s=1, d=2):
    return Ether(src=mac(s), dst=d if isinstance(d, str) else mac(d))


def pay(tag, n=0):
    """A recognisable payload: the tag, then filler up to n bytes."""
    b = tag.encode()
    return b + bytes((i * 7 + 3) & 0xff for i in range(max(0, n - len(b))))


def ip4_frags(pkt, cut):
    """Splits the IPv4 datagram pkt (Ether/[tags/]IP/...) at byte offsets
    'cut' (multiples of 8, into the IP payload) into fragments, keeping the
    L2 header, the IP header fields and the L4 checksum of the whole."""
    full = Ether(bytes(pkt))
    ip = full[IP]
    l2 = bytes(full)[: len(bytes(full)) - len(bytes(ip))]
    hdr_len = ip.ihl * 4
    payload = bytes(ip)[hdr_len:]
    edges = [0] + list(cut) + [len(payload)]
    frames = []
    for i in range(len(edges) - 1):
        a, b = edges[i], edges[i + 1]
        assert a % 8 == 0
        f = IP(src=ip.src, dst=ip.dst, id=ip.id, ttl=ip.ttl, tos=ip.tos, proto=ip.proto,
               options=ip.options, flags="MF" if b < len(payload) else 0, frag=a // 8)
        f = f / Raw(payload[a:b])
        frames.append(l2 + bytes(f))
    return frames


def ip6_frags(pkt, cut, ident):
    """Splits Ether/IPv6/L4... into IPv6 fragments (fragment header directly
    after the fixed header) at byte offsets 'cut' into the L4 datagram."""
    full = Ether(bytes(pkt))
    ip6 = full[IPv6]
    raw = bytes(full)
    l2 = raw[:14]
    payload = bytes(ip6)[40:]
    nh = ip6.nh
    edges = [0] + list(cut) + [len(payload)]
    frames = []
    for i in range(len(edges) - 1):
        a, b = edges[i], edges[i + 1]
        f = IPv6(src=ip6.src, dst=ip6.dst, hlim=ip6.hlim, tc=ip6.tc) / IPv6ExtHdrFragment(
            nh=nh, offset=a // 8, m=1 if b < len(payload) else 0, id=ident) / Raw(payload[a:b])
        frames.append(l2 + bytes(f))
    return frames


# --------------------------------------------------------------------------
# the reference parser (raw bytes) -- mirrors the contract of src/parse.h


def be16(b, o):
    return (b[o] << 8) | b[o + 1]


class Parsed:
    pass


IPV6_EXT = (0, 43, 44, 60)


def rh_final(b, q):
    """The routing header at b[q:] (present in full) with segments left
    not 0: the offset of its final destination in b, None for a routing
    type whose address layout is not modelled, or "bad" if it breaks the
    rules of its type. RFC 8200 4.4 (type 0: Hdr Ext Len = 2 x addresses,
    Segments Left <= addresses, the addresses in visiting order), RFC 6275
    6.4 (type 2: exactly one address, Segments Left 1), RFC 8754 2 and
    4.3.1.1 (type 4: Segment List[0] is the last segment; Last Entry <=
    Hdr Ext Len / 2 - 1, Segments Left <= Last Entry + 1)."""
    hlen, rtype, left = b[q + 1], b[q + 2], b[q + 3]
    if rtype == 0:
        n = hlen // 2
        if hlen % 2 or left > n:
            return "bad"
        return q + 8 + 16 * (n - 1)
    if rtype == 2:
        if hlen != 2 or left != 1:
            return "bad"
        return q + 8
    if rtype == 4:
        last = b[q + 4]
        if hlen < 2 or last > hlen // 2 - 1 or left > last + 1:
            return "bad"
        return q + 8
    return None


def ipv6_final_dst(b, l3):
    """Where the destination of the upper-layer pseudo-header of the IPv6
    packet at b[l3:] is (RFC 8200 8.1): the final destination, named by the
    last routing header whose Segments Left is not 0, else the Destination
    Address (l3 + 24). None if that header's type is not modelled. The
    headers must be well formed (the parser's checks passed)."""
    final = l3 + 24
    nh, q = b[l3 + 6], l3 + 40
    while nh in IPV6_EXT:
        if nh == 44:
            if be16(b, q + 2) & 0xfff8:
                break
            nh, q = b[q], q + 8
            continue
        if nh == 43 and b[q + 3]:
            final = rh_final(b, q)
            assert final != "bad", "ipv6_final_dst of a malformed routing header"
        nh, q = b[q], q + (b[q + 1] + 1) * 8
    return final


def routed6(src, hops, rtype=4, left=None, **kw):
    """scapy IPv6 / routing header of a packet from src that visits 'hops'
    in order (the last is its final destination) and has 'left' of them
    still to visit after the current one (default: all but the first). The
    Destination Address is the hop being visited. Type 4 (RFC 8754 2)
    lists the segments in reverse, Segment List[0] the final one; type 0
    (RFC 8200 4.4, processing as RFC 2460 8.4 describes) lists the hops
    after the first, the visited ones swapped in for the Destination
    Address; type 2 (RFC 6275 6.4) carries the home address only."""
    n = len(hops) - 1
    left = n if left is None else left
    if rtype == 4:
        rh = IPv6ExtHdrSegmentRouting(addresses=list(reversed(hops)), segleft=left)
        dst = hops[n - left]
    elif rtype in (0, 2):
        dst = hops[n - left]
        rh = IPv6ExtHdrRouting(type=rtype, addresses=hops[:n - left] + hops[n - left + 1:],
                               segleft=left)
    else:
        raise ValueError("routed6: type %d" % rtype)
    return IPv6(src=src, dst=dst, **kw) / rh


def parse(b, in_port=0):
    """Returns (error or None, Parsed). Parsed has the flow key in .key and
    offsets: vlans [(tpid_ofs, tpid, tci)], l3, ipv (4/6/'arp'/None), l4
    (None if no complete L4 header), proto, frag, later."""
    p = Parsed()
    p.vlans, p.l3, p.ipv, p.l4, p.proto, p.frag, p.later = [], None, None, None, None, False, False
    k = p.key = dict(in_port=in_port, dl_src=0, dl_dst=0, dl_type=0, vlan_tci=0, nw_src=0,
                     nw_dst=0, ipv6_src=0, ipv6_dst=0, nw_proto=0, nw_tos=0, nw_ttl=0,
                     nw_frag=0, tp_src=0, tp_dst=0, arp_sha=0, arp_tha=0)
    n = len(b)
    if n < 14:
        return "eth_trunc", p
    k["dl_dst"] = int.from_bytes(b[0:6], "big")
    k["dl_src"] = int.from_bytes(b[6:12], "big")
    t, o = be16(b, 12), 14
    while t in (0x8100, 0x88a8):
        if len(p.vlans) == 2:
            return "vlan_depth", p
        if n - o < 4:
            return "vlan_trunc", p
        tci = be16(b, o)
        if not p.vlans:
            k["vlan_tci"] = tci | 0x1000
        p.vlans.append((o - 2, t, tci))
        t, o = be16(b, o + 2), o + 4
    k["dl_type"] = t
    if t == 0x0806:
        p.ipv, p.l3 = "arp", o
        if n - o < 8:
            return "arp_trunc", p
        if be16(b, o) == 1 and be16(b, o + 2) == 0x0800 and b[o + 4] == 6 and b[o + 5] == 4:
            if n - o < 28:
                return "arp_trunc", p
            k["nw_proto"] = b[o + 7]
            k["arp_sha"] = int.from_bytes(b[o + 8:o + 14], "big")
            k["nw_src"] = int.from_bytes(b[o + 14:o + 18], "big")
            k["arp_tha"] = int.from_bytes(b[o + 18:o + 24], "big")
            k["nw_dst"] = int.from_bytes(b[o + 24:o + 28], "big")
        return None, p
    if t == 0x0800:
        p.ipv, p.l3 = 4, o
        if n - o < 20:
            return "ip_trunc", p
        if b[o] >> 4 != 4:
            return "ip_version", p
        ihl = (b[o] & 15) * 4
        if ihl < 20:
            return "ip_hlen", p
        if n - o < ihl:
            return "ip_trunc", p
        tot = be16(b, o + 2)
        if tot < ihl:
            return "ip_len", p
        if tot > n - o:
            return "ip_trunc", p
        k["nw_tos"], k["nw_ttl"], k["nw_proto"] = b[o + 1], b[o + 8], b[o + 9]
        k["nw_src"] = int.from_bytes(b[o + 12:o + 16], "big")
        k["nw_dst"] = int.from_bytes(b[o + 16:o + 20], "big")
        fr = be16(b, o + 6)
        if fr & 0x3fff:
            p.frag = True
            p.later = bool(fr & 0x1fff)
        k["nw_frag"] = (1 if p.frag else 0) | (2 if p.later else 0)
        p.proto = b[o + 9]
        if p.later:
            return None, p
        return parse_l4(b, p, o + ihl, o + tot, False)
    if t == 0x86dd:
        p.ipv, p.l3 = 6, o
        if n - o < 40:
            return "ip_trunc", p
        if b[o] >> 4 != 6:
            return "ip_version", p
        plen = be16(b, o + 4)
        if plen == 0:
            return "ip_len", p
        if plen > n - o - 40:
            return "ip_trunc", p
        k["nw_tos"] = ((b[o] & 15) << 4) | (b[o + 1] >> 4)
        k["nw_ttl"] = b[o + 7]
        k["ipv6_src"] = int.from_bytes(b[o + 8:o + 24], "big")
        k["ipv6_dst"] = int.from_bytes(b[o + 24:o + 40], "big")
        end = o + 40 + plen
        nh, q, n_ext = b[o + 6], o + 40, 0
        while nh in IPV6_EXT:
            n_ext += 1
            if n_ext > 8 or end - q < 8:
                return "ipv6_ext", p
            if nh == 44:
                if p.frag:
                    return "ipv6_ext", p
                p.frag = True
                p.later = bool(be16(b, q + 2) & 0xfff8)
                nh, q = b[q], q + 8
                if p.later:
                    break
            else:
                ln = (b[q + 1] + 1) * 8
                if end - q < ln:
                    return "ipv6_ext", p
                if nh == 43 and b[q + 3] and rh_final(b, q) == "bad":
                    return "ipv6_rh", p
                nh, q = b[q], q + ln
        k["nw_proto"] = p.proto = nh
        k["nw_frag"] = (1 if p.frag else 0) | (2 if p.later else 0)
        if p.later:
            return None, p
        return parse_l4(b, p, q, end, True)
    return None, p


def parse_l4(b, p, o, end, v6):
    k, avail, frag, proto = p.key, end - o, p.frag, p.proto
    if proto == 6:
        if avail < 20:
            return (None if frag else "l4_trunc"), p
        doff = (b[o + 12] >> 4) * 4
        if doff < 20 or doff > avail:
            return (None if frag else "tcp_hlen"), p
    elif proto == 17:
        if avail < 8:
            return (None if frag else "l4_trunc"), p
        ulen = be16(b, o + 4)
        if ulen < 8 or (not frag and ulen > avail):
            return "udp_len", p
    elif proto == 132:
        if avail < 12:
            return (None if frag else "l4_trunc"), p
    elif proto == (58 if v6 else 1):
        if avail < 4:
            return (None if frag else "l4_trunc"), p
        p.l4 = o
        k["tp_src"], k["tp_dst"] = b[o], b[o + 1]
        return None, p
    else:
        return None, p
    p.l4 = o
    k["tp_src"], k["tp_dst"] = be16(b, o), be16(b, o + 2)
    return None, p


# --------------------------------------------------------------------------
# the reference rule syntax and matcher (the ovs-ofctl subset used here)

ALL16, ALL32 = 0xffff, 0xffffffff
PROTO_KW = {
    "ip": (0x0800, None), "ipv6": (0x86dd, None), "arp": (0x0806, None),
    "icmp": (0x0800, 1), "tcp": (0x0800, 6), "udp": (0x0800, 17), "sctp": (0x0800, 132),
    "icmp6": (0x86dd, 58), "tcp6": (0x86dd, 6), "udp6": (0x86dd, 17), "sctp6": (0x86dd, 132),
}
FRAG = {"no": (0, 1), "yes": (1, 1), "first": (1, 3), "later": (3, 3), "not_later": (0, 2)}


def num(s):
    return int(s, 0)


def mac_int(s):
    return int(s.replace(":", ""), 16)


def prefix(s, bits):
    if "/" in s:
        a, m = s.split("/")
    else:
        a, m = s, str(bits)
    cls = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
    v = int(cls(a))
    if "." in m or ":" in m:
        mask = int(cls(m))
    else:
        mask = ((1 << bits) - 1) ^ ((1 << (bits - int(m))) - 1)
    return v & mask, mask


def masked(s, full):
    if "/" in s:
        v, m = s.split("/")
        return num(v) & num(m), num(m)
    return num(s), full


class Rule:
    def __init__(self, text, ports, seq):
        self.text, self.seq, self.priority, self.conds = text, seq, 32768, []
        match, acts = text.split("actions=")
        for tok in [t for t in match.replace(" ", "").split(",") if t]:
            key, _, val = tok.partition("=")
            c = self.conds
            if key in PROTO_KW and not val:
                dl, pr = PROTO_KW[key]
                c.append(("dl_type", dl, ALL16))
                if pr is not None:
                    c.append(("nw_proto", pr, 0xff))
            elif key == "priority":
                self.priority = num(val)
            elif key == "in_port":
                c.append(("in_port", ports.index(val), ALL32))
            elif key in ("dl_src", "dl_dst", "arp_sha", "arp_tha"):
                v, _, m = val.partition("/")
                m = mac_int(m) if m else (1 << 48) - 1
                c.append((key, mac_int(v) & m, m))
            elif key == "dl_type":
                c.append(("dl_type", num(val), ALL16))
            elif key == "dl_vlan":
                if num(val) == 0xffff:
                    c.append(("vlan_tci", 0, ALL16))
                else:
                    c.append(("vlan_tci", 0x1000 | num(val), 0x1fff))
            elif key == "dl_vlan_pcp":
                c.append(("vlan_tci", 0x1000 | (num(val) << 13), 0xf000))
            elif key == "vlan_tci":
                v, m = masked(val, ALL16)
                c.append(("vlan_tci", v, m))
            elif key in ("nw_src", "nw_dst", "arp_spa", "arp_tpa"):
                f = {"arp_spa": "nw_src", "arp_tpa": "nw_dst"}.get(key, key)
                v, m = prefix(val, 32)
                c.append((f, v, m))
            elif key in ("ipv6_src", "ipv6_dst"):
                v, m = prefix(val, 128)
                c.append((key, v, m))
            elif key in ("nw_proto", "arp_op"):
                c.append(("nw_proto", num(val), 0xff))
            elif key == "nw_tos":
                c.append(("nw_tos", num(val), 0xfc))
            elif key == "ip_dscp":
                c.append(("nw_tos", num(val) << 2, 0xfc))
            elif key == "nw_ecn":
                c.append(("nw_tos", num(val), 0x03))
            elif key == "nw_ttl":
                c.append(("nw_ttl", num(val), 0xff))
            elif key == "ip_frag":
                v, m = FRAG[val]
                c.append(("nw_frag", v, m))
            elif key in ("tp_src", "tp_dst"):
                v, m = masked(val, ALL16)
                c.append((key, v, m))
            elif key in ("icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code"):
                c.append(("tp_src" if key.endswith("type") else "tp_dst", num(val), 0xff))
            else:
                raise ValueError("model: unknown match field %r in %r" % (key, text))
        self.actions = []
        for a in [x for x in acts.strip().split(",") if x]:
            name, _, arg = a.partition(":")
            if name == "output":
                self.actions.append(("output", ports.index(arg)))
            elif name in ("drop", "pop_vlan", "dec_ttl"):
                self.actions.append((name, None))
            elif name in ("mod_dl_src", "mod_dl_dst"):
                self.actions.append((name, bytes.fromhex(arg.replace(":", ""))))
            elif name in ("mod_nw_src", "mod_nw_dst"):
                self.actions.append((name, ipaddress.IPv4Address(arg).packed))
            elif name in ("mod_nw_tos", "mod_tp_src", "mod_tp_dst", "push_vlan",
                          "mod_vlan_vid", "mod_vlan_pcp"):
                self.actions.append((name, num(arg)))
            else:
                raise ValueError("model: unknown action %r in %r" % (a, text))

    def matches(self, key):
        return all((key[f] & m) == v for f, v, m in self.conds)


def lookup(rules, key):
    best = None
    for r in rules:
        if r.matches(key) and (best is None or r.priority > best.priority):
            best = r
    return best


# --------------------------------------------------------------------------
# the reference actions (on a bytearray, re-parsed after every change)


def csum_fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def csum_update(old, before, after):
    """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over 16-bit words."""
    s = ~old & 0xffff
    for i in range(0, len(before), 2):
        s += ~be16(before, i) & 0xffff
        s += be16(after, i)
    return ~csum_fold(s) & 0xffff


class ModelError(Exception):
    pass


def set_csum(pkt, o, v):
    pkt[o:o + 2] = struct.pack(">H", v)


def l4_csum_ofs(p):
    """Offset of the TCP/UDP checksum if L4 is present and it must be
    updated (an IPv4 UDP checksum of 0 is left alone), else None."""
    if p.l4 is None or p.later:
        return None
    if p.proto == 6:
        return p.l4 + 16
    if p.proto == 17:
        return p.l4 + 6
    return None


def guard(v, what):
    if v in (0, 0xffff):
        raise ModelError("%s checksum became 0x%04x: change the packet so the "
                         "expectation does not depend on +0/-0" % (what, v))
    return v


def rewrite(pkt, p, ofs, new, pseudo):
    """Replaces pkt[ofs:ofs+len(new)] (even offset relative to the header it
    is in: callers pass 16-bit aligned fields), updating the IPv4 header
    checksum if the field is in it and the L4 checksum if 'pseudo'."""
    old = bytes(pkt[ofs:ofs + len(new)])
    if p.ipv == 4 and p.l3 <= ofs < p.l3 + 20:
        o = p.l3 + 10
        set_csum(pkt, o, guard(csum_update(be16(pkt, o), old, new), "ip"))
    if pseudo:
        o = l4_csum_ofs(p)
        if o is not None and not (p.proto == 17 and be16(pkt, o) == 0):
            set_csum(pkt, o, guard(csum_update(be16(pkt, o), old, new), "l4"))
    pkt[ofs:ofs + len(new)] = new


def apply(name, arg, pkt):
    """Applies one set-field/vlan/ttl action in place. Returns None, or a
    drop reason."""
    err, p = parse(bytes(pkt))
    assert err is None
    if name == "mod_dl_src":
        pkt[6:12] = arg
    elif name == "mod_dl_dst":
        pkt[0:6] = arg
    elif name in ("mod_nw_src", "mod_nw_dst"):
        if p.ipv != 4:
            raise ModelError("mod_nw_* on a non-IPv4 packet")
        rewrite(pkt, p, p.l3 + (12 if name == "mod_nw_src" else 16), arg, True)
    elif name == "mod_nw_tos":
        if p.ipv != 4:
            raise ModelError("mod_nw_tos is modelled for IPv4 only")
        o = p.l3
        word = bytes([pkt[o], (arg & 0xfc) | (pkt[o + 1] & 3)])
        rewrite(pkt, p, o, word, False)
    elif name in ("mod_tp_src", "mod_tp_dst"):
        if p.later or p.l4 is None:
            return None  # no L4 header here (later fragment): untouched
        if p.proto not in (6, 17):
            raise ModelError("mod_tp_* is modelled for TCP/UDP only")
        rewrite(pkt, p, p.l4 + (0 if name == "mod_tp_src" else 2), struct.pack(">H", arg), True)
    elif name == "push_vlan":
        tci = p.vlans[0][2] if p.vlans else 0
        pkt[12:12] = struct.pack(">HH", arg, tci)
    elif name == "mod_vlan_vid":
        if p.vlans:
            tci = (p.vlans[0][2] & 0xf000) | (arg & 0xfff)
            pkt[14:16] = struct.pack(">H", tci)
        else:
            pkt[12:12] = struct.pack(">HH", 0x8100, arg & 0xfff)
    elif name == "mod_vlan_pcp":
        if not p.vlans:
            raise ModelError("mod_vlan_pcp on an untagged frame is not modelled")
        tci = (p.vlans[0][2] & 0x1fff) | ((arg & 7) << 13)
        pkt[14:16] = struct.pack(">H", tci)
    elif name == "pop_vlan":
        if p.vlans:
            del pkt[12:16]
    elif name == "dec_ttl":
        if p.ipv == 4:
            o = p.l3 + 8
            if pkt[o] <= 1:
                return "ttl_exceeded"
            rewrite(pkt, p, o, bytes([pkt[o] - 1, pkt[o + 1]]), False)
        elif p.ipv == 6:
            o = p.l3 + 7
            if pkt[o] <= 1:
                return "ttl_exceeded"
            pkt[o] -= 1
        else:
            raise ModelError("dec_ttl on a non-IP packet is not modelled")
    else:
        raise ModelError("unknown action " + name)
    return None


# --------------------------------------------------------------------------
# scapy cross-checks


CSUM_FIELDS = ("chksum", "cksum")


def scapy_recompute(b):
    """b with every IP/L4 checksum scapy knows recomputed from scratch
    (an IPv4 UDP checksum of 0 kept), or None if b is a fragment or does not
    survive a scapy round trip unchanged."""
    pk = Ether(b)
    if bytes(pk) != b:
        return None
    layer = pk
    while layer:  # NoPayload is false
        if isinstance(layer, IP) and (layer.flags.MF or layer.frag):
            return None
        if isinstance(layer, IPv6ExtHdrFragment):
            return None
        keep_zero = isinstance(layer, UDP) and layer.chksum == 0 and \
            isinstance(layer.underlayer, IP)
        if not keep_zero:
            for f in CSUM_FIELDS:
                if f in layer.fields:
                    delattr(layer, f)
        layer = layer.payload
    return bytes(pk)


def verify_csums(b, what):
    r = scapy_recompute(b)
    if r is not None and r != b:
        raise ModelError("%s: checksums differ from a scapy recompute:\n %s\n %s"
                         % (what, b.hex(), r.hex()))
    return r is not None


# --------------------------------------------------------------------------
# cases

class Port:
    def __init__(self, name, rx=None, tx=None, burst=None, type="pcap", rx_path=None,
                 nsec=False, cut=0):
        self.name, self.rx, self.tx, self.burst, self.type = name, rx, tx, burst, type
        self.rx_path = rx_path  # an existing pcap (testdata corpus) instead of in-NAME.pcap
        self.nsec = nsec
        self.cut = cut  # bytes cut off the end of the written rx file

    @property
    def rx_file(self):
        if self.rx is None:
            return None
        return self.rx_path or "in-%s.pcap" % self.name


class Case:
    def __init__(self, name, doc, ports, rules, include=False, exit=0, knobs=None,
                 stderr=None):
        self.name, self.doc, self.ports, self.rules = name, doc, ports, rules
        self.include, self.exit, self.knobs = include, exit, knobs
        self.stderr = stderr  # a regex the replay's stderr must match


def delivered(port):
    """The frames a port delivers (a cut file loses its last record)."""
    if not port.cut:
        return list(port.rx)
    data = pcap_bytes(port.rx, port.nsec)
    whole = data[:len(data) - port.cut]
    out, o = [], 24
    for f in port.rx:
        n = 16 + len(f.data)
        if o + n > len(whole):
            break
        out.append(f)
        o += n
    assert len(out) < len(port.rx), "cut must truncate a record"
    return out


def run_model(case):
    names = [p.name for p in case.ports]
    rules = [Rule(t, names, i) for i, t in enumerate(case.rules)]
    stats = {p.name: dict(rx_packets=0, rx_bytes=0, tx_packets=0, tx_bytes=0) for p in case.ports}
    drops = dict(no_rule=0, rule_drop=0, parse_error=0, rx_truncated=0, ttl_exceeded=0)
    out = {p.name: [] for p in case.ports}
    copies = 0
    events = []
    for pi, p in enumerate(case.ports):
        if p.rx is None:
            continue
        for i, f in enumerate(delivered(p)):
            t = f.ts // 1000 if p.nsec else f.ts
            events.append((t, pi, i, f))
    events.sort(key=lambda e: e[:3])
    for t, pi, _, f in events:
        first = []
        process(case, rules, names, stats, drops, out, first, t, pi, f)
        copies += max(0, len(first) - 1)
        if f.want is not False and (first[0] if first else None) != f.want:
            raise ModelError("%s: frame %s went to %r, the case meant %r"
                             % (case.name, f.data.hex(), first, f.want))
    rx = sum(s["rx_packets"] for s in stats.values())
    tx = sum(s["tx_packets"] for s in stats.values())
    dropped = sum(drops.values())
    assert rx + copies == tx + dropped
    totals = dict(rx=rx, tx=tx, copies=copies, dropped=dropped, queued=0)
    return out, stats, drops, totals


def process(case, rules, names, stats, drops, out, sent, t, pi, f):
    """One received frame through the model; appends the ports it is sent
    to (in order) to 'sent'."""
    if True:
        port = case.ports[pi]
        st = stats[port.name]
        st["rx_packets"] += 1
        st["rx_bytes"] += len(f.data)
        if f.wirelen > len(f.data):
            drops["rx_truncated"] += 1
            return
        err, p = parse(f.data, pi)
        if err != f.bad:
            raise ModelError("%s: frame %s: reference parser says %r, frame built as %r"
                             % (case.name, f.data.hex(), err, f.bad))
        if err:
            drops["parse_error"] += 1
            return
        r = lookup(rules, p.key)
        if r is None:
            drops["no_rule"] += 1
            return
        pkt = bytearray(f.data)
        acts = r.actions
        if acts == [("drop", None)]:
            drops["rule_drop"] += 1
            return
        if acts[-1][0] != "output":
            raise ModelError("%s: %r: end every action list with output" % (case.name, r.text))
        for name, arg in acts:
            if name == "output":
                if arg == pi:
                    raise ModelError("%s: output to the in_port is not modelled" % case.name)
                out[names[arg]].append((t, bytes(pkt)))
                stats[names[arg]]["tx_packets"] += 1
                stats[names[arg]]["tx_bytes"] += len(pkt)
                sent.append(names[arg])
                continue
            why = apply(name, arg, pkt)
            if why:
                if sent:
                    raise ModelError("%s: a drop after an output is not modelled" % case.name)
                drops[why] += 1
                return


# ---- frames shared by several cases -------------------------------------

def tcp4(src, dst, dport, sport=40000, s=1, d=2, flags="S", ttl=64, tos=0, load=b"", **kw):
    return E(s, d) / IP(src=src, dst=dst, ttl=ttl, tos=tos, **kw) / TCP(
        sport=sport, dport=dport, flags=flags, seq=1000, window=64240) / Raw(load)


def udp4(src, dst, dport, sport=40001, s=1, d=2, ttl=64, tos=0, load=b"", chksum=None, **kw):
    u = UDP(sport=sport, dport=dport)
    if chksum is not None:
        u.chksum = chksum
    return E(s, d) / IP(src=src, dst=dst, ttl=ttl, tos=tos, **kw) / u / Raw(load)


def tagged(pkt, *tags):
    """Inserts VLAN tags (tpid, vid, pcp) after the Ethernet header of pkt."""
    b = bytes(pkt)
    tagb = b"".join(struct.pack(">HH", tp, (pcp << 13) | vid) for tp, vid, pcp in tags)
    return b[:12] + tagb + b[12:]


def frames(t, pkts):
    """Frames (all at timestamp t: one rx burst) from packets or bytes."""
    return [Frame(t, bytes(p)) for p in pkts]


# ---- the cases ----------------------------------------------------------

def case_fwd_in_port():
    a = frames(ts(0), [tcp4("10.0.0.1", "10.0.0.2", 80, sport=41000 + i, load=pay("a%d" % i))
                       for i in range(3)])
    a += frames(ts(2), [udp4("10.0.0.1", "10.0.0.2", 53, load=pay("a-dns", 20))])
    a += frames(ts(5), [E(1, 2) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.0.2")])
    b = frames(ts(0), [tcp4("10.0.0.2", "10.0.0.1", 41000, sport=80, s=2, d=1, flags="SA",
                            load=pay("b%d" % i)) for i in range(2)])
    b += frames(ts(3), [E(2, 1) / IPv6(src="2001:db8::2", dst="2001:db8::1") /
                        ICMPv6EchoRequest(id=7, seq=1, data=pay("b-ping", 16))])
    b += [Frame(ts(4), bytes(E(2, 3))[:12] + b"\x88\xcc" + pay("lldp", 46))]
    return Case("fwd_in_port",
                "in_port forwarding, crossed: every frame from p0 (rx in-p0.pcap) leaves on p1 "
                "and every frame from p1 on p0, unchanged, whatever its protocol; bursts of "
                "several frames share one timestamp.",
                [Port("p0", rx=a, tx="out-p0.pcap"), Port("p1", rx=b, tx="out-p1.pcap")],
                ["in_port=p0 actions=output:p1", "in_port=p1 actions=output:p0"])


def case_interleave():
    def mk(port, i):
        return udp4("10.0.%d.1" % port, "10.9.0.1", 5000, sport=6000 + i, s=port + 1, d=9,
                    load=pay("%s-%02d" % ("zeta" if port == 0 else "alpha", i), 18))
    # zeta's and alpha's timestamps interleave, some tie across ports and
    # within a port; one tie is 1 us apart from its neighbour.
    t0 = [(1, 0), (1, 0), (3, 0), (5, 0), (5, 0), (5, 0), (8, 0), (10, 0), (12, 1)]
    t1 = [(2, 0), (3, 0), (3, 0), (5, 0), (6, 0), (8, 0), (8, 0), (9, 0), (12, 0)]
    a = [Frame(ts(*t), bytes(mk(0, i))) for i, t in enumerate(t0)]
    b = [Frame(ts(*t), bytes(mk(1, i))) for i, t in enumerate(t1)]
    return Case("interleave",
                "Two rx pcaps into one output: out-mix.pcap lists the frames in timestamp "
                "order (down to the microsecond); on equal timestamps every frame of zeta "
                "(listed first in the file, though 'alpha' sorts first by name) precedes "
                "alpha's. Output records keep their input timestamps.",
                [Port("zeta", rx=a), Port("alpha", rx=b), Port("mix", tx="out-mix.pcap")],
                ["in_port=zeta actions=output:mix", "in_port=alpha actions=output:mix"])


def case_l3l4_match():
    rules = [
        "priority=100,ip,nw_dst=10.1.0.0/16,tcp,tp_dst=80 actions=output:web",
        "priority=100,ip,nw_src=192.168.7.0/24,tcp,tp_dst=0x1f00/0xff00 actions=output:web",
        "priority=90,udp,tp_dst=53 actions=output:dns",
        "priority=90,udp6,tp_dst=53 actions=output:dns",
        "priority=90,sctp,tp_dst=2905 actions=output:misc",
        "priority=80,icmp,icmp_type=8 actions=output:icmp",
        "priority=80,icmp6,icmpv6_type=128 actions=output:icmp",
        "priority=70,ipv6,ipv6_dst=2001:db8:1::/48 actions=output:v6",
        "priority=70,ipv6,ipv6_src=2001:db8:ff::1 actions=output:v6",
        "priority=60,arp,arp_op=1,arp_tpa=192.168.1.1 actions=output:misc",
        "priority=60,arp,arp_op=2 actions=output:icmp",
        "priority=50,ip,ip_dscp=46 actions=output:misc",
        "priority=50,ip,nw_ttl=255,nw_proto=89 actions=output:misc",
        "priority=40,ip,ip_frag=later actions=output:misc",
        "priority=30,dl_type=0x88cc actions=output:misc",
        "priority=20,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00 actions=output:v6",
    ]
    P = []
    # -> web
    P.append((tcp4("10.0.0.1", "10.1.2.3", 80, load=pay("web1")), "web"))
    P.append((tcp4("10.0.0.1", "10.1.255.254", 80, flags="PA", load=pay("web2", 30)), "web"))
    P.append((tcp4("10.0.0.1", "10.2.0.1", 80), None))  # outside /16: no rule
    P.append((tcp4("10.0.0.1", "10.1.2.3", 443), None))  # wrong port: no rule
    P.append((tcp4("192.168.7.9", "172.16.0.1", 0x1f90), "web"))  # 8080 under the mask
    P.append((tcp4("192.168.7.9", "172.16.0.1", 0x2090), None))
    # IPv4 options before TCP
    P.append((E() / IP(src="10.0.0.1", dst="10.1.0.9", options=[IPOption_RR(routers=["0.0.0.0"])])
              / TCP(sport=40000, dport=80, flags="S"), "web"))
    # -> dns
    P.append((udp4("10.0.0.1", "8.8.8.8", 53, load=pay("q1", 20)), "dns"))
    P.append((E() / IPv6(src="2001:db8::1", dst="2001:db8:2::53") / UDP(sport=5353, dport=53)
              / Raw(pay("q6", 20)), "dns"))
    P.append((udp4("10.0.0.1", "8.8.8.8", 54, load=pay("q2", 20)), None))
    # sctp
    P.append((E() / IP(src="10.0.0.1", dst="10.3.0.1") / SCTP(sport=2905, dport=2905)
              / Raw(pay("m3ua", 16)), "misc"))
    # icmp: echo request matches, reply does not (no rule for IPv4 type 0)
    P.append((E() / IP(src="10.0.0.1", dst="10.0.0.9") / ICMP(type=8, id=1, seq=1)
              / Raw(pay("ping", 24)), "icmp"))
    P.append((E() / IP(src="10.0.0.9", dst="10.0.0.1") / ICMP(type=0, id=1, seq=1)
              / Raw(pay("pong", 24)), None))
    P.append((E() / IPv6(src="2001:db8::1", dst="2001:db8:5::1") / ICMPv6EchoRequest(id=3)
              / Raw(pay("ping6", 8)), "icmp"))
    P.append((E() / IPv6(src="2001:db8::1", dst="2001:db8:5::1") / ICMPv6EchoReply(id=3), None))
    # ipv6 prefixes
    P.append((E() / IPv6(src="2001:db8::1", dst="2001:db8:1:77::5") / TCP(dport=22), "v6"))
    P.append((E() / IPv6(src="2001:db8:ff::1", dst="2001:db8:9::1") / TCP(dport=22), "v6"))
    P.append((E() / IPv6(src="2001:db8:ff::2", dst="2001:db8:9::1") / TCP(dport=22), None))
    # arp
    P.append((E(1, 0xff) / ARP(op=1, hwsrc=mac(1), psrc="192.168.1.5", pdst="192.168.1.1"), "misc"))
    P.append((E(1, 0xff) / ARP(op=1, hwsrc=mac(1), psrc="192.168.1.5", pdst="192.168.1.2"), None))
    P.append((E(3, 1) / ARP(op=2, hwsrc=mac(3), psrc="192.168.1.2", hwdst=mac(1),
                            pdst="192.168.1.5"), "icmp"))
    # dscp 46 (TOS 0xb8, and 0xbb: ECN bits ignored), ttl+proto
    P.append((udp4("10.0.0.1", "10.7.0.1", 4000, tos=0xb8, load=pay("ef")), "misc"))
    P.append((udp4("10.0.0.1", "10.7.0.1", 4000, tos=0xbb, load=pay("ef-ce")), "misc"))
    P.append((udp4("10.0.0.1", "10.7.0.1", 4000, tos=0xb4, load=pay("dscp45")), None))
    P.append((E(1, 2) / IP(src="10.0.0.1", dst="224.0.0.5", ttl=255, proto=89)
              / Raw(pay("ospf", 24)), "misc"))
    # fragments: the later one matches ip_frag=later, the first one is a
    # tcp,tp_dst=80 packet (ports present)
    fr = ip4_frags(tcp4("10.0.0.1", "10.1.0.1", 80, flags="PA", load=pay("frag", 40), id=77), [24])
    P.append((fr[0], "web"))
    P.append((fr[1], "misc"))
    # LLDP ethertype
    P.append((bytes(E(1, 0x0e))[:12] + b"\x88\xcc" + pay("lldp", 46), "misc"))
    # a multicast IPv4 UDP frame that no earlier rule takes -> dl_dst mask
    P.append((Ether(src=mac(1), dst="01:00:5e:00:00:fb") / IP(src="10.0.0.1", dst="224.0.0.251")
              / UDP(sport=5353, dport=5353) / Raw(pay("mdns", 20)), "v6"))
    # unicast frame of an unknown ethertype: no rule
    P.append((bytes(E(1, 2))[:12] + b"\x88\xb5" + pay("local", 46), None))
    fr_list = [Frame(ts(i // 3), bytes(p), want=w) for i, (p, w) in enumerate(P)]
    return Case("l3l4_match",
                "L3/L4 matches: nw_dst/nw_src prefixes, tcp tp_dst (and with a mask), udp and "
                "udp6 tp_dst, sctp, icmp/icmp6 type, ipv6_src/ipv6_dst prefixes, arp_op/arp_tpa, "
                "ip_dscp (ECN ignored), nw_ttl+nw_proto, ip_frag=later, dl_type, a dl_dst mask; "
                "an IPv4-options header and a first fragment still match on TCP ports. "
                "Non-matching look-alikes count as no_rule.",
                [Port("p0", rx=fr_list)] + [Port(n, tx="out-%s.pcap" % n)
                                           for n in ("web", "dns", "icmp", "v6", "misc")],
                rules)


def case_priority():
    rules = [
        "priority=10,ip actions=output:p1",
        "priority=20,ip,nw_dst=10.0.0.0/8 actions=output:p2",
        "priority=30,ip,nw_dst=10.1.0.0/16 actions=output:p3",
        "priority=30,tcp,tp_dst=22 actions=output:p4",
        "priority=40,udp,tp_dst=7 actions=output:p4",
        "priority=40,ip,nw_dst=10.1.2.0/24 actions=output:p3",
        "priority=32767,ip,nw_dst=10.9.9.0/24 actions=output:p1",
        "ip,nw_dst=10.9.9.0/28 actions=output:p2",
        "priority=32769,ip,nw_dst=10.9.9.5 actions=output:p3",
        "priority=65535,ip,nw_src=10.66.0.0/16 actions=drop",
        "priority=0 actions=drop",
    ]
    P = [
        (udp4("1.1.1.1", "192.0.2.1", 9), "p1"),          # only priority 10
        (udp4("1.1.1.1", "10.200.0.1", 9), "p2"),         # 20 over 10
        (udp4("1.1.1.1", "10.1.9.1", 9), "p3"),           # 30 over 20, 10
        (tcp4("1.1.1.1", "10.1.9.1", 22), "p3"),          # tie at 30: earlier (/16) wins
        (tcp4("1.1.1.1", "192.0.2.1", 22), "p4"),         # only the tcp rule at 30
        (udp4("1.1.1.1", "10.1.2.3", 7), "p4"),           # tie at 40: earlier (udp) wins
        (udp4("1.1.1.1", "10.1.2.3", 8), "p3"),           # only the /24 at 40
        (udp4("1.1.1.1", "10.9.9.100", 9), "p1"),         # 32767 over 30..10
        (udp4("1.1.1.1", "10.9.9.6", 9), "p2"),           # default 32768 over 32767
        (udp4("1.1.1.1", "10.9.9.5", 9), "p3"),           # 32769 over default
        (udp4("10.66.1.1", "10.9.9.5", 9), None),         # 65535 drop over all
        (E() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(dport=9), None),  # prio 0 drop
        (E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.0.2"), None),
    ]
    fr = [Frame(ts(i // 4), bytes(p), want=w) for i, (p, w) in enumerate(P)]
    return Case("priority",
                "Overlapping rules: the highest priority wins (10 < 20 < 30 < 40 < 32767 < "
                "default 32768 < 32769 < 65535); on equal priority the earlier rule wins, "
                "whether it is the less specific one (priority 30) or not (priority 40); a "
                "priority=0 catch-all drop counts rule_drop.",
                [Port("p0", rx=fr)] + [Port("p%d" % i, tx="out-p%d.pcap" % i) for i in (1, 2, 3, 4)],
                rules)


def case_set_dl():
    rules = [
        "priority=10,ip actions=mod_dl_src:0a:00:00:00:00:01,output:p1",
        "priority=10,arp actions=mod_dl_dst:0a:00:00:00:00:02,output:p1",
        "priority=10,ipv6 actions=mod_dl_src:0a:00:00:00:00:03,mod_dl_dst:0a:00:00:00:00:04,output:p1",
        "priority=20,dl_vlan=5 actions=mod_dl_dst:ff:ff:ff:ff:ff:ff,output:p1",
    ]
    P = [
        tcp4("10.0.0.1", "10.0.0.2", 80, load=pay("dl1")),
        udp4("10.0.0.1", "10.0.0.2", 53, load=pay("dl2", 10)),
        E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.0.2"),
        E() / IPv6(src="2001:db8::1", dst="2001:db8::2") / TCP(dport=443, flags="S"),
        tagged(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("dl-vlan", 10)), (0x8100, 5, 2)),
    ]
    fr = frames(ts(0), P[:3]) + frames(ts(1), P[3:])
    return Case("set_dl",
                "mod_dl_src and mod_dl_dst rewrite the Ethernet addresses (alone, both, on "
                "IPv4, ARP, IPv6 and a VLAN-tagged frame); nothing else changes.",
                [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)


def case_set_nw():
    rules = [
        "tcp,nw_dst=10.0.1.1 actions=mod_nw_src:192.0.2.1,output:p1",
        "udp,nw_dst=10.0.1.2 actions=mod_nw_dst:198.51.100.2,output:p1",
        "udp,nw_dst=10.0.1.3 actions=mod_nw_dst:198.51.100.3,output:p1",
        "icmp,nw_dst=10.0.1.4 actions=mod_nw_src:192.0.2.4,mod_nw_dst:198.51.100.4,output:p1",
        "ip,nw_dst=10.0.1.5 actions=mod_nw_dst:198.51.100.5,output:p1",
        "tcp,nw_dst=10.0.1.6 actions=mod_nw_src:192.0.2.6,output:p1",
        "tcp,nw_dst=10.0.1.7 actions=mod_nw_dst:198.51.100.7,output:p1",
        "udp,nw_dst=10.0.1.8 actions=mod_nw_src:192.0.2.8,output:p1",
        "ip,nw_dst=10.0.1.9 actions=mod_nw_src:192.0.2.9,output:p1",
        "ip,nw_dst=10.0.1.10 actions=mod_nw_src:192.0.2.10,mod_nw_dst:198.51.100.10,output:p1",
    ]
    P = [
        tcp4("10.0.0.1", "10.0.1.1", 80, flags="PA", load=pay("nw-tcp", 20)),
        udp4("10.0.0.1", "10.0.1.2", 53, load=pay("nw-udp", 20)),
        udp4("10.0.0.1", "10.0.1.3", 53, load=pay("nw-udp0", 20), chksum=0),
        E() / IP(src="10.0.0.1", dst="10.0.1.4") / ICMP(type=8, id=9, seq=2) / Raw(pay("nw-icmp", 16)),
    ]
    P += ip4_frags(udp4("10.0.0.1", "10.0.1.5", 5001, load=pay("nw-frag-udp", 64), id=501),
                   [32, 56])
    P += [
        E() / IP(src="10.0.0.1", dst="10.0.1.6", options=[IPOption_RR(routers=["0.0.0.0"] * 2)])
        / TCP(sport=40000, dport=80, flags="S", seq=7),
        # a 54-byte TCP ACK padded to 60 bytes: the padding stays
        bytes(tcp4("10.0.0.1", "10.0.1.7", 80, flags="A")) + b"\x00" * 6,
        tagged(udp4("10.0.0.1", "10.0.1.8", 53, load=pay("nw-vlan", 20)), (0x8100, 12, 0)),
    ]
    P += ip4_frags(tcp4("10.0.0.1", "10.0.1.9", 80, flags="PA", load=pay("nw-frag-tcp", 48),
                        id=909), [32])
    # a UDP datagram whose checksum is 0 but fragmented
    P += ip4_frags(udp4("10.0.0.1", "10.0.1.10", 5002, load=pay("nw-frag-udp0", 40), id=1010,
                        chksum=0), [24])
    fr = [Frame(ts(i // 5), bytes(p)) for i, p in enumerate(P)]
    c = Case("set_nw",
             "mod_nw_src/mod_nw_dst: the IPv4 header checksum and the TCP/UDP checksum "
             "(pseudo-header) are updated incrementally; ICMP's checksum is untouched; a UDP "
             "checksum of 0 stays 0; IPv4 options and Ethernet padding are preserved; on a first "
             "fragment the L4 checksum is updated (valid for the reassembled datagram), on later "
             "fragments only the IP header changes.",
             [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)
    c.frag_check = True
    return c


def case_set_tos():
    rules = [
        "ip,nw_dst=10.0.2.1 actions=mod_nw_tos:184,output:p1",
        "ip,nw_dst=10.0.2.2 actions=mod_nw_tos:0,output:p1",
        "ip,nw_dst=10.0.2.3 actions=mod_nw_tos:40,output:p1",
    ]
    P = []
    for i, tos in enumerate((0x00, 0x01, 0x02, 0x03, 0x23)):
        P.append(udp4("10.0.0.1", "10.0.2.1", 5000 + i, tos=tos, load=pay("tos%d" % i, 16)))
    P.append(tcp4("10.0.0.1", "10.0.2.1", 80, tos=0x10, load=pay("tos-tcp")))
    P.append(udp4("10.0.0.1", "10.0.2.2", 5010, tos=0xbb, load=pay("tos-clear", 16)))
    P.append(tcp4("10.0.0.1", "10.0.2.2", 81, tos=0xb8, load=pay("tos-clear2")))
    P.append(E() / IP(src="10.0.0.1", dst="10.0.2.3", tos=0x02) / ICMP(type=8) / Raw(pay("tos-icmp", 8)))
    fr = frames(ts(0), P[:6]) + frames(ts(1), P[6:])
    return Case("set_tos",
                "mod_nw_tos sets the 6 DSCP bits of the IPv4 TOS byte, keeps the 2 ECN bits "
                "(0..3 all tried) and updates the IP header checksum; L4 is untouched.",
                [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)


def case_set_tp():
    rules = [
        "tcp,tp_dst=80 actions=mod_tp_dst:8080,output:p1",
        "tcp,tp_dst=81 actions=mod_tp_src:1234,output:p1",
        "udp,tp_dst=53 actions=mod_tp_dst:5353,output:p1",
        "udp,tp_dst=54 actions=mod_tp_src:999,output:p1",
        "udp,tp_dst=55 actions=mod_nw_dst:10.5.5.5,mod_tp_dst:5555,mod_tp_src:4444,output:p1",
        "tcp6,tp_dst=80 actions=mod_tp_dst:8080,output:p1",
        "udp6,tp_dst=53 actions=mod_tp_src:1111,mod_tp_dst:2222,output:p1",
        "udp,nw_dst=10.0.3.9 actions=mod_tp_dst:7777,output:p1",
    ]
    P = [
        tcp4("10.0.0.1", "10.0.3.1", 80, flags="PA", load=pay("tp-tcp-dst", 20)),
        tcp4("10.0.0.1", "10.0.3.1", 81, flags="S"),
        udp4("10.0.0.1", "10.0.3.1", 53, load=pay("tp-udp-dst", 20)),
        udp4("10.0.0.1", "10.0.3.1", 54, load=pay("tp-udp0", 20), chksum=0),
        udp4("10.0.0.1", "10.0.3.1", 55, load=pay("tp-udp-both", 20)),
        E() / IPv6(src="2001:db8::1", dst="2001:db8::3") / TCP(sport=40000, dport=80, flags="S"),
        E() / IPv6(src="2001:db8::1", dst="2001:db8::3") / UDP(sport=40001, dport=53)
        / Raw(pay("tp-udp6", 20)),
    ]
    # the later fragment has no L4 header: mod_tp_dst leaves it alone
    P += ip4_frags(udp4("10.0.0.1", "10.0.3.9", 9, load=pay("tp-frag", 40), id=99), [24])
    fr = frames(ts(0), P[:4]) + frames(ts(1), P[4:])
    c = Case("set_tp",
             "mod_tp_src/mod_tp_dst on TCP and UDP over IPv4 and IPv6 with incremental L4 "
             "checksum updates (combined with mod_nw_dst too); an IPv4 UDP checksum of 0 stays "
             "0; on a fragmented datagram the first fragment's ports change and the later "
             "fragment is untouched.",
             [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)
    c.frag_check = True
    return c


def case_vlan():
    rules = [
        "dl_vlan=0xffff,ip,nw_dst=10.0.4.1 actions=push_vlan:0x8100,output:p1",
        "dl_vlan=10 actions=push_vlan:0x88a8,output:p1",
        "dl_vlan=20 actions=pop_vlan,output:p1",
        "dl_vlan=0xffff,ip,nw_dst=10.0.4.3 actions=pop_vlan,output:p1",
        "dl_vlan=0xffff,ip,nw_dst=10.0.4.4 actions=mod_vlan_vid:100,output:p1",
        "dl_vlan=30 actions=mod_vlan_vid:300,output:p1",
        "dl_vlan=40 actions=mod_vlan_pcp:7,output:p1",
        "dl_vlan=50 actions=pop_vlan,output:p1",
        "dl_vlan=60 actions=pop_vlan,output:p1",
        "dl_vlan=0xffff,ip,nw_dst=10.0.4.7 actions=push_vlan:0x8100,mod_vlan_vid:200,mod_vlan_pcp:2,output:p1",
        "dl_vlan=70 actions=pop_vlan,pop_vlan,output:p1",
        "dl_vlan=0xffff,arp actions=push_vlan:0x88a8,mod_vlan_vid:4000,push_vlan:0x8100,output:p1",
    ]
    P = [
        tcp4("10.0.0.1", "10.0.4.1", 80, load=pay("push")),                        # push 8100, TCI 0
        tagged(udp4("10.0.0.1", "10.0.4.2", 53, load=pay("qinq", 8)), (0x8100, 10, 3)),  # 88a8 copies TCI
        tagged(udp4("10.0.0.1", "10.0.4.2", 53, load=pay("pop", 8)), (0x8100, 20, 1)),
        udp4("10.0.0.1", "10.0.4.3", 53, load=pay("pop-untagged", 8)),            # no-op
        udp4("10.0.0.1", "10.0.4.4", 53, load=pay("vid-untagged", 8)),            # pushes 8100 vid 100
        tagged(udp4("10.0.0.1", "10.0.4.5", 53, load=pay("vid-tagged", 8)), (0x8100, 30, 5)),
        tagged(udp4("10.0.0.1", "10.0.4.6", 53, load=pay("pcp", 8)), (0x8100, 40, 1)),
        tagged(udp4("10.0.0.1", "10.0.4.6", 53, load=pay("pop-qinq", 8)), (0x88a8, 50, 4), (0x8100, 51, 6)),
        # 60 bytes with the tag (a 42-byte ARP + tag + 14 zero pad): 56 after the pop, no re-padding
        tagged(E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.0.9"), (0x8100, 60, 0))
        + b"\x00" * 14,
        udp4("10.0.0.1", "10.0.4.7", 53, load=pay("push-vid-pcp", 8)),
        tagged(tcp4("10.0.0.1", "10.0.4.8", 80), (0x8100, 70, 0), (0x8100, 71, 0)),
        E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.0.10"),
    ]
    fr = frames(ts(0), P[:6]) + frames(ts(1), P[6:])
    return Case("vlan",
                "push_vlan on an untagged frame (TCI 0) and on a tagged one (0x88a8 outer tag "
                "copying the TCI: QinQ); pop_vlan on single-tagged, QinQ (the inner tag stays), "
                "double 0x8100 (two pops), and untagged (no-op); a pop leaving 56 bytes is not "
                "re-padded; mod_vlan_vid on untagged (pushes 0x8100, PCP 0) and tagged (PCP kept); "
                "mod_vlan_pcp; push + vid + pcp; push_vlan, mod_vlan_vid, push_vlan stacking.",
                [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)


def case_dec_ttl():
    rules = [
        "ip,nw_dst=10.0.5.0/24 actions=dec_ttl,output:p1",
        "ipv6 actions=dec_ttl,output:p1",
        "ip,nw_dst=10.0.6.0/24 actions=dec_ttl,dec_ttl,output:p1",
    ]
    v6 = lambda h, tag: E() / IPv6(src="2001:db8::1", dst="2001:db8::5", hlim=h) / UDP(
        sport=1, dport=2) / Raw(pay(tag, 8))
    P = [
        tcp4("10.0.0.1", "10.0.5.1", 80, ttl=64, load=pay("ttl64")),
        udp4("10.0.0.1", "10.0.5.2", 53, ttl=2, load=pay("ttl2", 8)),
        udp4("10.0.0.1", "10.0.5.3", 53, ttl=1, load=pay("ttl1", 8)),        # ttl_exceeded
        udp4("10.0.0.1", "10.0.5.4", 53, ttl=0, load=pay("ttl0", 8)),        # ttl_exceeded
        E() / IP(src="10.0.0.1", dst="10.0.5.5", ttl=255, options=[IPOption_RR(routers=["0.0.0.0"])])
        / ICMP(type=8) / Raw(pay("ttl255-opts", 8)),
        v6(64, "hlim64"),
        v6(1, "hlim1"),                                                       # ttl_exceeded
        v6(2, "hlim2"),
        udp4("10.0.0.1", "10.0.6.1", 53, ttl=3, load=pay("twice3", 8)),      # 3 -> 1
        udp4("10.0.0.1", "10.0.6.2", 53, ttl=2, load=pay("twice2", 8)),      # second dec_ttl drops
        tagged(tcp4("10.0.0.1", "10.0.5.6", 22, ttl=10), (0x8100, 9, 0)),
    ]
    fr = frames(ts(0), P[:5]) + frames(ts(1), P[5:])
    return Case("dec_ttl",
                "dec_ttl on IPv4 (checksum updated, with options, under a VLAN tag) and IPv6 "
                "hop limit; TTL/hop limit 1 or 0 are dropped as ttl_exceeded; two dec_ttl in a "
                "row (3 -> 1 is forwarded, 2 is dropped at the second).",
                [Port("p0", rx=fr), Port("p1", tx="out-p1.pcap")], rules)


def malformed_frames():
    """(bytes, parse error) for frames the parser must reject."""
    good_tcp = bytes(tcp4("10.0.0.1", "10.0.0.2", 80))
    good_udp = bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("x", 8)))
    good6 = bytes(E() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(dport=53) / Raw(pay("y", 8)))

    def ip_patch(b, off, val):  # patch IPv4 header bytes and fix its checksum
        b = bytearray(b)
        b[14 + off:14 + off + len(val)] = val
        b[24:26] = b"\0\0"
        s = csum_fold(sum(be16(b, 14 + i) for i in range(0, (b[14] & 15) * 4 or 20, 2)))
        b[24:26] = struct.pack(">H", ~s & 0xffff)
        return bytes(b)

    def pad(b, n=60):
        return b + b"\0" * max(0, n - len(b))

    m = [
        (bytes(E())[:10], "eth_trunc"),
        (bytes(E())[:12] + b"\x81\x00\x00", "vlan_trunc"),
        (tagged(bytes(udp4("10.0.0.1", "10.0.0.2", 53)), (0x88a8, 1, 0), (0x8100, 2, 0),
                (0x8100, 3, 0)), "vlan_depth"),
        (bytes(E())[:12] + b"\x08\x06" + bytes(ARP(op=1))[:20], "arp_trunc"),
        (good_tcp[:14 + 12], "ip_trunc"),                               # IPv4 header cut
        (good_tcp[:-6], "ip_trunc"),                                    # total length > frame
        (ip_patch(good_tcp, 0, b"\x65"), "ip_version"),                 # version 6 in 0x0800
        (ip_patch(good_tcp, 0, b"\x44"), "ip_hlen"),                    # IHL 4
        (ip_patch(good_tcp, 2, b"\x00\x10"), "ip_len"),                 # total length 16
        (ip_patch(good_tcp[:14 + 30], 2, b"\x00\x1e"), "l4_trunc"),     # 10 bytes of TCP
        (good_tcp[:14 + 20 + 12] + b"\x40" + good_tcp[14 + 20 + 13:], "tcp_hlen"),  # doff 4
        (good_udp[:14 + 20 + 4] + b"\x00\x04" + good_udp[14 + 20 + 6:], "udp_len"),  # ulen 4
        (good_udp[:14 + 20 + 4] + b"\x00\x40" + good_udp[14 + 20 + 6:], "udp_len"),  # ulen > ip
        (good6[:14 + 30], "ip_trunc"),                                  # IPv6 header cut
        (good6[:-4], "ip_trunc"),                                       # payload length > frame
        # hop-by-hop header claiming 16 bytes in a payload of 8
        (bytes(E() / IPv6(src="2001:db8::1", dst="2001:db8::2", nh=0, plen=8))
         + b"\x3b\x01" + b"\0" * 6, "ipv6_ext"),
    ]
    return [(pad(b) if e in ("l4_trunc", "tcp_hlen", "udp_len") else b, e) for b, e in m]


def case_drops():
    rules = [
        "priority=100,udp,tp_dst=9 actions=drop",
        "priority=100,ip,nw_dst=10.0.8.0/24 actions=drop",
        "priority=10,ip actions=output:p1",
        "priority=10,ipv6 actions=output:p1",
        "priority=10,arp actions=output:p1",
    ]
    P = []
    P.append(Frame(ts(0), bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("ok1", 8)))))
    P.append(Frame(ts(0), bytes(udp4("10.0.0.1", "10.0.0.2", 9, load=pay("discard", 8)))))
    P.append(Frame(ts(0), bytes(tcp4("10.0.0.1", "10.0.8.7", 80))))
    P.append(Frame(ts(0), bytes(E(1, 2))[:12] + b"\x88\xcc" + pay("lldp", 46)))   # no_rule
    P.append(Frame(ts(0), bytes(E(1, 2))[:12] + b"\x90\x00" + pay("loop", 46)))   # no_rule
    for i, (b, e) in enumerate(malformed_frames()):
        P.append(Frame(ts(1 + i // 4), b, bad=e))
    good = bytes(tcp4("10.0.0.1", "10.0.0.2", 80, flags="PA", load=pay("cut", 40)))
    P.append(Frame(ts(10), good[:40], wirelen=len(good)))                         # rx_truncated
    P.append(Frame(ts(10), good[:len(good) - 1], wirelen=len(good)))              # rx_truncated
    P.append(Frame(ts(11), bytes(E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1",
                                                   pdst="10.0.0.2"))))
    P.append(Frame(ts(11), bytes(E() / IPv6(src="2001:db8::1", dst="2001:db8::2")
                                 / UDP(dport=53) / Raw(pay("ok6", 8)))))
    return Case("drops",
                "Every drop path and its counter: explicit drop rules (rule_drop), frames no "
                "rule matches (no_rule), 16 malformed frames, one per parser check (parse_error, "
                "even though an ip/ipv6/arp rule would match them), and two frames captured "
                "shorter than their wire length (rx_truncated). p2's tx file gets only the pcap "
                "header.",
                [Port("p0", rx=P), Port("p1", tx="out-p1.pcap"), Port("p2", tx="out-p2.pcap")],
                rules)


def case_multi_output():
    long_rule = ("priority=50,ip,nw_dst=10.0.9.3 actions=mod_dl_src:0a:00:00:00:00:0a,"
                 "mod_dl_dst:0a:00:00:00:00:0b,output:p1,mod_nw_src:192.0.2.33,"
                 "mod_nw_dst:198.51.100.33,output:p2,push_vlan:0x8100,mod_vlan_vid:333,"
                 "mod_vlan_pcp:3,output:p3")
    rules = [
        "ip,nw_dst=10.0.9.1 actions=output:p1,mod_dl_dst:0a:00:00:00:00:99,output:p2",
        "ip,nw_dst=10.0.9.2 actions=output:p1,output:p2,output:p3",
        long_rule,
        "ipv6 actions=output:p3,dec_ttl,output:p2",
        "arp actions=output:p2",
    ]
    assert len("rule = " + long_rule) > 199
    P = [
        udp4("10.0.0.1", "10.0.9.1", 53, load=pay("two-copies", 10)),
        tcp4("10.0.0.1", "10.0.9.1", 80, load=pay("two-copies-tcp")),
        udp4("10.0.0.1", "10.0.9.2", 53, load=pay("three-same", 10)),
        udp4("10.0.0.1", "10.0.9.3", 53, load=pay("three-mods", 10)),
        tcp4("10.0.0.1", "10.0.9.3", 443, flags="PA", load=pay("three-mods-tcp", 12)),
        E() / IPv6(src="2001:db8::1", dst="2001:db8::9", hlim=64) / UDP(dport=5) / Raw(pay("v6", 8)),
        E(1, BCAST) / ARP(op=1, hwsrc=mac(1), psrc="10.0.0.1", pdst="10.0.9.9"),
    ]
    fr = frames(ts(0), P[:4]) + frames(ts(1), P[4:])
    return Case("multi_output",
                "Several outputs in one action list: each output gets the packet as modified so "
                "far (output:p1,mod_dl_dst,output:p2 gives two different frames), the same frame "
                "to three ports, and a rule longer than 199 characters loaded from flows.txt via "
                "include; totals.copies counts the extra copies.",
                [Port("p0", rx=fr)] + [Port("p%d" % i, tx="out-p%d.pcap" % i) for i in (1, 2, 3)],
                rules, include=True)


def case_qinq_ipv6ext():
    rules = [
        "priority=100,dl_vlan=100,tcp,tp_dst=80 actions=output:p1",
        "priority=100,dl_vlan=100,dl_vlan_pcp=5,udp actions=output:p2",
        "priority=90,vlan_tci=0x1000/0x1000,ip actions=output:p3",
        "priority=100,tcp6,tp_dst=80 actions=output:p1",
        "priority=100,udp6,tp_dst=53 actions=output:p2",
        "priority=100,icmp6,icmpv6_type=135 actions=output:p2",
        "priority=90,ipv6,ip_frag=later actions=output:p3",
        "priority=80,ipv6,nw_proto=59 actions=output:p3",
    ]
    P = []
    # QinQ: outer 0x88a8 vid 100 (pcp 5 or 0), inner 0x8100 vid 7; dl_vlan looks at the outer tag
    P.append((tagged(tcp4("10.0.0.1", "10.0.0.2", 80), (0x88a8, 100, 0), (0x8100, 7, 0)), "p1"))
    P.append((tagged(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("qq5")), (0x88a8, 100, 5), (0x8100, 7, 0)), "p2"))
    P.append((tagged(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("qq0")), (0x88a8, 100, 0), (0x8100, 7, 0)), "p3"))
    P.append((tagged(tcp4("10.0.0.1", "10.0.0.2", 80), (0x8100, 7, 0), (0x8100, 100, 0)), "p3"))
    P.append((tagged(tcp4("10.0.0.1", "10.0.0.2", 80), (0x8100, 100, 0), (0x8100, 7, 0)), "p1"))
    P.append((tagged(tcp4("10.0.0.1", "10.0.0.2", 80), (0x88a8, 101, 0)), "p3"))
    P.append((tcp4("10.0.0.1", "10.0.0.2", 80), None))  # untagged: no rule
    v6 = IPv6(src="2001:db8::1", dst="2001:db8::2")
    P.append((E() / v6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting(segleft=0)
              / IPv6ExtHdrDestOpt() / TCP(sport=40000, dport=80, flags="S"), "p1"))
    P.append((E() / v6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt()
              / UDP(sport=1053, dport=53) / Raw(pay("ext-dns", 12)), "p2"))
    P.append((E() / v6 / IPv6ExtHdrHopByHop() / ICMPv6ND_NS(tgt="2001:db8::2"), "p2"))
    P.append((E() / v6 / IPv6ExtHdrHopByHop() / TCP(sport=40000, dport=81, flags="S"), None))
    fr6 = ip6_frags(E() / v6 / UDP(sport=1053, dport=53) / Raw(pay("frag6-dns", 40)), [24], 0x1234)
    P.append((fr6[0], "p2"))   # first fragment: ports present
    P.append((fr6[1], "p3"))   # later fragment
    P.append((E() / v6 / IPv6ExtHdrDestOpt(nh=59), "p3"))          # no next header
    fr = [Frame(ts(i // 3), bytes(p), want=w) for i, (p, w) in enumerate(P)]
    return Case("qinq_ipv6ext",
                "Matching through two VLAN tags (0x88a8+0x8100 and 0x8100+0x8100: dl_vlan and "
                "dl_vlan_pcp see the outer tag, L3/L4 fields the inner packet) and through IPv6 "
                "extension headers (hop-by-hop, routing, destination options, fragment: first "
                "fragment has ports, later one matches ip_frag=later; nw_proto=59 after a "
                "destination-options header).",
                [Port("p0", rx=fr)] + [Port("p%d" % i, tx="out-p%d.pcap" % i) for i in (1, 2, 3)],
                rules)


def burst_inputs():
    def mk(port, i, dport):
        return udp4("10.0.%d.1" % port, "10.0.10.1", dport, sport=7000 + i, s=port + 1,
                    load=pay("b%d-%02d" % (port, i), 10))
    a = [Frame(ts(0), bytes(mk(0, i, 100 + i % 3))) for i in range(40)]    # > 32 at one ts
    a += [Frame(ts(1), bytes(mk(0, 40 + i, 100 + i % 3))) for i in range(5)]
    a += [Frame(ts(2, 500), bytes(mk(0, 45, 100)))]
    b = [Frame(ts(0), bytes(mk(1, i, 100 + i % 2))) for i in range(6)]
    b += [Frame(ts(1), bytes(mk(1, 6 + i, 101))) for i in range(33)]
    b += [Frame(ts(2), bytes(mk(1, 40, 100)))]
    return a, b


def case_burst(burst):
    a, b = burst_inputs()
    rules = [
        "udp,tp_dst=100 actions=output:p2",
        "udp,tp_dst=101 actions=mod_nw_dst:10.0.11.1,output:p3",
        "udp,tp_dst=102 actions=output:p2,output:p3",
    ]
    doc = ("burst=%s: 40 and 33 frames share timestamps on p0/p1 (more than one rx batch "
           "even at 32). The expected outputs are byte-identical in burst_1, burst_32 and "
           "burst_mixed: the burst size never changes order, content or timestamps."
           % burst)
    b0, b1 = (1, 1) if burst == 1 else (32, 32) if burst == 32 else (7, 32)
    return Case("burst_%s" % burst, doc,
                [Port("p0", rx=a, burst=b0), Port("p1", rx=b, burst=b1),
                 Port("p2", tx="out-p2.pcap", burst=b0), Port("p3", tx="out-p3.pcap", burst=b1)],
                rules)


def case_trunc(kind):
    fr = frames(ts(0), [udp4("10.0.0.1", "10.0.0.2", 53, load=pay("t%d" % i, 8)) for i in range(3)])
    fr += frames(ts(1), [udp4("10.0.0.1", "10.0.0.2", 53, load=pay("t%d" % i, 8)) for i in range(3, 5)])
    last = len(fr[-1].data)
    cut = last - 10 if kind == "data" else last + 16 - 7   # keep 10 data bytes / 7 header bytes
    where = "inside the last record's data" if kind == "data" else "inside the last record header"
    return Case("truncated_pcap_%s" % kind,
                "The rx pcap file is cut %s: the replay reports the truncation, exits 2, and "
                "still writes the 4 frames read before it." % where,
                [Port("p0", rx=fr, cut=cut), Port("p1", tx="out-p1.pcap")],
                ["in_port=p0 actions=output:p1"], exit=2,
                stderr="port p0: .*in-p0.pcap.*truncated")


def case_nsec():
    fr = [Frame(ts(0) * 1000 + 999, bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("ns0", 8)))),
          Frame(ts(0) * 1000 + 999, bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("ns1", 8)))),
          Frame(ts(1) * 1000 + 1, bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("ns2", 8)))),
          Frame(ts(2, 7) * 1000 + 999, bytes(udp4("10.0.0.1", "10.0.0.2", 53, load=pay("ns3", 8))))]
    return Case("nsec_input",
                "An input pcap with nanosecond timestamps (magic a1b23c4d): the output is a "
                "microsecond pcap whose timestamps are the input's truncated to microseconds.",
                [Port("p0", rx=fr, nsec=True), Port("p1", tx="out-p1.pcap")],
                ["in_port=p0 actions=output:p1"])


# ---- the corpus (testdata/pcap) and the demo -----------------------------

def corpus():
    """name -> frames of testdata/pcap/NAME.pcap."""
    c = {}
    tcp_flow = [
        ("S", 0, b"", 1), ("SA", 1, b"", 2), ("A", 1, b"", 1),
        ("PA", 1, pay("GET / HTTP/1.1\r\nHost: example\r\n\r\n"), 1),
        ("PA", 1, pay("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), 2),
        ("FA", 1, b"", 1), ("FA", 1, b"", 2), ("A", 1, b"", 1)]
    ipv4 = []
    for i, (fl, _, load, who) in enumerate(tcp_flow):
        if who == 1:
            p = tcp4("10.0.0.1", "10.1.0.10", 80, sport=40000, s=1, d=2, flags=fl, load=load)
        else:
            p = E(2, 1) / IP(src="10.1.0.10", dst="10.0.0.1") / TCP(
                sport=80, dport=40000, flags=fl, seq=5000, window=65160) / Raw(load)
        b = bytes(p)
        ipv4.append(Frame(ts(i * 10), b + b"\0" * max(0, 60 - len(b))))
    ipv4 += frames(ts(3), [udp4("10.0.0.1", "8.8.8.8", 53, sport=33333, load=pay("dns-query", 28))])
    ipv4 += frames(ts(4), [E(2, 1) / IP(src="8.8.8.8", dst="10.0.0.1") / UDP(sport=53, dport=33333)
                           / Raw(pay("dns-answer", 44))])
    ipv4 += frames(ts(12), [E() / IP(src="10.0.0.1", dst="10.0.0.9") / ICMP(type=8, id=5, seq=i)
                            / Raw(pay("ping", 32)) for i in range(3)])
    ipv4 += frames(ts(13), [E(2, 1) / IP(src="10.0.0.9", dst="10.0.0.1") / ICMP(type=0, id=5, seq=i)
                            / Raw(pay("ping", 32)) for i in range(3)])
    ipv4 += frames(ts(21), [E() / IP(src="10.0.0.1", dst="10.1.0.20", options=[
        IPOption_RR(routers=["0.0.0.0"] * 3)]) / UDP(sport=5000, dport=5001) / Raw(pay("rr", 16))])
    ipv4 += [Frame(ts(25), f) for f in ip4_frags(
        udp4("10.0.0.1", "10.1.0.30", 6000, load=pay("big-datagram", 120), id=4242), [48, 96])]
    ipv4 += frames(ts(27), [udp4("10.0.0.1", "10.1.0.40", 7000, load=pay("no-udp-csum", 20), chksum=0)])
    inner = Ether(src=mac(0x21), dst=mac(0x22)) / IP(src="192.168.10.1", dst="192.168.10.2") / TCP(
        sport=1234, dport=80, flags="S")
    ipv4 += frames(ts(33), [E(1, 3) / IP(src="172.16.0.1", dst="172.16.0.2", flags="DF")
                            / UDP(sport=49152, dport=4789) / VXLAN(vni=5001, flags=0x08) / inner])
    ipv4 += frames(ts(35), [udp4("10.0.0.1", "10.1.0.50", 33434, ttl=1, load=pay("traceroute", 12))])
    ipv4 += frames(ts(36), [tcp4("10.0.0.1", "10.1.0.10", 80, sport=40001, tos=0x02)])
    ipv4 += frames(ts(37), [E() / IP(src="10.0.0.1", dst="10.3.0.1") / SCTP(sport=2905, dport=2905)
                            / Raw(pay("sctp", 20))])
    c["ipv4"] = sorted(ipv4, key=lambda f: f.ts)

    a6, b6 = "2001:db8::1", "2001:db8:1::10"
    ipv6 = frames(ts(1), [E(1, 2) / IPv6(src=a6, dst=b6) / TCP(sport=40100, dport=80, flags="S"),
                          E(1, 2) / IPv6(src=a6, dst=b6) / UDP(sport=40101, dport=53) / Raw(pay("q6", 30))])
    ipv6 += frames(ts(2), [E(2, 1) / IPv6(src=b6, dst=a6) / TCP(sport=80, dport=40100, flags="SA")])
    ipv6 += frames(ts(6), [E(1, 2) / IPv6(src=a6, dst=b6) / ICMPv6EchoRequest(id=1, seq=i)
                           / Raw(pay("ping6", 24)) for i in range(2)])
    ipv6 += frames(ts(7), [Ether(src=mac(1), dst="33:33:ff:00:00:10")
                           / IPv6(src=a6, dst="ff02::1:ff00:10", hlim=255) / ICMPv6ND_NS(tgt=b6)])
    ipv6 += frames(ts(14), [E(1, 2) / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop()
                            / IPv6ExtHdrRouting(segleft=0) / IPv6ExtHdrDestOpt()
                            / TCP(sport=40102, dport=80, flags="S")])
    ipv6 += [Frame(ts(22), f) for f in ip6_frags(
        E(1, 2) / IPv6(src=a6, dst=b6) / UDP(sport=40103, dport=6000) / Raw(pay("frag6", 100)),
        [56], 0xbeef)]
    ipv6 += frames(ts(30), [E(1, 2) / IPv6(src=a6, dst=b6, hlim=1) / UDP(sport=40104, dport=33434)
                            / Raw(pay("hlim1", 8))])
    c["ipv6"] = sorted(ipv6, key=lambda f: f.ts)

    l2 = frames(ts(0, 500), [E(3, BCAST) / ARP(op=1, hwsrc=mac(3), psrc="10.0.0.3", pdst="10.0.0.1")])
    l2 += frames(ts(0, 900), [E(1, 3) / ARP(op=2, hwsrc=mac(1), psrc="10.0.0.1", hwdst=mac(3),
                                            pdst="10.0.0.3")])
    l2 += frames(ts(8), [tagged(tcp4("10.0.0.3", "10.1.0.10", 80, sport=40200, s=3, load=pay("v100")),
                                (0x8100, 100, 0)),
                         tagged(udp4("10.0.0.3", "10.1.0.60", 5060, s=3, load=pay("voip", 40)),
                                (0x8100, 200, 5))])
    l2 += frames(ts(16), [tagged(tcp4("10.0.0.4", "10.1.0.10", 80, sport=40300, s=4),
                                 (0x88a8, 300, 0), (0x8100, 100, 0)),
                          tagged(udp4("10.0.0.4", "10.1.0.70", 9000, s=4, load=pay("qinq", 12)),
                                 (0x8100, 400, 0), (0x8100, 401, 0))])
    l2 += frames(ts(24), [bytes(Ether(src=mac(3), dst="01:80:c2:00:00:0e"))[:12] + b"\x88\xcc"
                          + pay("lldp", 46)])
    l2 += frames(ts(31), [E(3, BCAST) / ARP(op=1, hwsrc=mac(3), psrc="10.0.0.3", pdst="10.0.0.3")])
    c["l2"] = l2

    bad = [Frame(ts(5 + i), b, bad=e) for i, (b, e) in enumerate(malformed_frames())]
    good = bytes(tcp4("10.0.0.1", "10.1.0.10", 80, flags="PA", load=pay("snap", 100)))
    bad.append(Frame(ts(40), good[:64], wirelen=len(good)))
    c["malformed"] = bad
    return c


DEMO_RULES = [
    ("traceroute probes from the uplink are dropped (TTL 1)",
     "priority=300,in_port=uplink,ip,nw_ttl=1 actions=drop"),
    ("web traffic to 10.1.0.10 is routed to the server: new MAC, TTL - 1",
     "priority=200,in_port=uplink,tcp,nw_dst=10.1.0.10,tp_dst=80 "
     "actions=mod_dl_dst:02:00:00:00:00:10,dec_ttl,output:server"),
    ("VLAN 100 on the access trunk is untagged towards the server",
     "priority=150,in_port=access,dl_vlan=100 actions=pop_vlan,output:server"),
    ("VLAN 200 (voice) is re-marked DSCP EF (TOS 184)",
     "priority=150,in_port=access,dl_vlan=200,ip actions=mod_nw_tos:184,output:server"),
    ("DNS, VXLAN and ICMP go to the server",
     "priority=100,udp,tp_dst=53 actions=output:server"),
    (None, "priority=100,udp,tp_dst=4789 actions=output:server"),
    (None, "priority=100,icmp actions=output:server"),
    ("ARP is flooded to the uplink and the server (two copies)",
     "priority=100,arp actions=output:uplink,output:server"),
    ("other uplink IPv4 goes to the access trunk in VLAN 10",
     "priority=50,in_port=uplink,ip actions=push_vlan:0x8100,mod_vlan_vid:10,output:access"),
    ("the server's IPv6 is routed to the uplink (hop limit - 1)",
     "priority=50,in_port=server,ipv6 actions=dec_ttl,output:uplink"),
    ("LLDP is counted on the dummy sink; anything else matches no rule",
     "priority=40,dl_type=0x88cc actions=output:sink"),
]


def demo_case():
    c = corpus()
    ports = [Port("uplink", rx=c["ipv4"], tx="uplink.pcap", rx_path="ipv4.pcap"),
             Port("server", rx=c["ipv6"], tx="server.pcap", rx_path="ipv6.pcap"),
             Port("access", rx=c["l2"], tx="access.pcap", rx_path="l2.pcap"),
             Port("noise", rx=c["malformed"], rx_path="malformed.pcap"),
             Port("sink", type="dummy")]
    return Case("corpus",
                "The shipped testdata/pcap corpus through the demo config (demo/demo.ini): "
                "forwarding, set-field, dec_ttl, VLAN push/pop, an ARP flood to two ports, a dummy "
                "sink, and every kind of drop.", ports, [r for _, r in DEMO_RULES])


def all_cases():
    return [case_fwd_in_port(), case_interleave(), case_l3l4_match(), case_priority(),
            case_set_dl(), case_set_nw(), case_set_tos(), case_set_tp(), case_vlan(),
            case_dec_ttl(), case_drops(), case_multi_output(), case_qinq_ipv6ext(),
            case_burst(1), case_burst(32), case_burst("mixed"), case_trunc("data"),
            case_trunc("header"), case_nsec(), demo_case()]


# --------------------------------------------------------------------------
# writing

GENERATED = "# Generated by testdata/gen.py -- edit the generator, not this file.\n"


def write(root, rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)


def wrap(text, width=76, lead="# "):
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w) if cur else w
    if cur:
        lines.append(cur)
    return "".join(lead + l + "\n" for l in lines)


def config_text(case, rx_prefix=""):
    s = GENERATED + wrap("%s: %s" % (case.name, case.doc))
    if case.knobs:
        s += "\n[datapath]\n" + "".join("%s = %s\n" % kv for kv in case.knobs)
    for p in case.ports:
        s += "\n[port %s]\ntype = %s\n" % (p.name, p.type)
        if p.rx is not None:
            s += "rx = %s%s\n" % (rx_prefix if p.rx_path else "", p.rx_file)
        if p.tx:
            s += "tx = %s\n" % p.tx
        if p.burst:
            s += "burst = %d\n" % p.burst
    s += "\n[rules]\n"
    if case.include:
        s += "include = flows.txt\n"
    else:
        for r in case.rules:
            line = "rule = " + r
            assert len(line) <= 199, "rule too long for a config line: " + r
            s += line + "\n"
    return s


def verify_frames(case, out):
    """Cross-checks every input and output frame's checksums with scapy."""
    for p in case.ports:
        for f in p.rx or []:
            if f.bad is None and f.wirelen == len(f.data):
                verify_csums(f.data, "%s: input" % case.name)
    for name, recs in out.items():
        for _, b in recs:
            verify_csums(b, "%s: output %s" % (case.name, name))
    if getattr(case, "frag_check", False):
        check_first_fragments(case, out)


def check_first_fragments(case, out):
    """For every modified first fragment of a UDP/TCP datagram in the output:
    reassemble its datagram from the output fragments, recompute the L4
    checksum with scapy, compare."""
    for name, recs in out.items():
        groups = {}
        for _, b in recs:
            err, p = parse(b)
            if p.ipv == 4 and p.frag:
                o = p.l3
                key = (b[o + 12:o + 20], be16(b, o + 4))
                groups.setdefault(key, []).append((p, b))
        for key, fr in groups.items():
            fr.sort(key=lambda x: be16(x[1], x[0].l3 + 6) & 0x1fff)
            p0, b0 = fr[0]
            payload = b""
            for p, b in fr:
                o = p.l3
                ihl = (b[o] & 15) * 4
                payload += b[o + ihl:o + be16(b, o + 2)]
            ip = IP(b0[p0.l3:p0.l3 + (b0[p0.l3] & 15) * 4])
            whole = IP(src=ip.src, dst=ip.dst, proto=ip.proto, id=ip.id) / Raw(payload)
            whole = IP(bytes(whole))
            l4 = whole.payload
            if p0.proto == 17 and l4.chksum == 0:
                continue
            got = l4.chksum
            del l4.chksum
            want = IP(bytes(whole)).payload.chksum
            if got != want:
                raise ModelError("%s: %s: reassembled fragment checksum 0x%04x, want 0x%04x"
                                 % (case.name, name, got, want))


def checks_text(case, stats, drops, totals):
    s = GENERATED + wrap(case.doc)
    if case.exit:
        s += "exit = %d\n" % case.exit
    if case.stderr:
        s += "stderr = %s\n" % case.stderr
    for p in case.ports:
        st = stats[p.name]
        if p.rx is not None:
            s += "ports.%s.rx_packets = %d\n" % (p.name, st["rx_packets"])
            if all(f.wirelen == len(f.data) for f in p.rx):
                s += "ports.%s.rx_bytes = %d\n" % (p.name, st["rx_bytes"])
        s += "ports.%s.tx_packets = %d\n" % (p.name, st["tx_packets"])
        s += "ports.%s.tx_bytes = %d\n" % (p.name, st["tx_bytes"])
    for k in sorted(drops):
        s += "drops.%s = %d\n" % (k, drops[k])
    for k in ("rx", "tx", "copies", "dropped", "queued"):
        s += "totals.%s = %d\n" % (k, totals[k])
    s += "conservation = true\n"
    return s


def generate(root):
    c = corpus()
    for name, fr in c.items():
        write(root, "testdata/pcap/%s.pcap" % name, pcap_bytes(fr))
    for case in all_cases():
        d = "tests/replay/%s/" % case.name
        cfg = os.path.join(root, d, "config.ini")
        if os.path.isfile(cfg):  # a generated case dir: start it afresh
            with open(cfg) as f:
                if f.readline() != GENERATED:
                    raise SystemExit("%s: not generated by gen.py, refusing to overwrite" % cfg)
            shutil.rmtree(os.path.join(root, d))
        out, stats, drops, totals = run_model(case)
        verify_frames(case, out)
        prefix = "../../../testdata/pcap/"
        write(root, d + "config.ini", config_text(case, rx_prefix=prefix))
        if case.include:
            write(root, d + "flows.txt", GENERATED + "".join(r + "\n" for r in case.rules))
        for p in case.ports:
            if p.rx is not None and not p.rx_path:
                data = pcap_bytes(p.rx, p.nsec)
                write(root, d + p.rx_file, data[:len(data) - p.cut])
            if p.tx and p.type == "pcap":
                recs = [Frame(t, b) for t, b in out[p.name]]
                write(root, d + "expected/" + p.tx, pcap_bytes(recs))
        write(root, d + "checks", checks_text(case, stats, drops, totals))
        if case.name == "corpus":
            write(root, "demo/demo.ini", demo_ini(case))


def demo_ini(case):
    s = ("# demo.ini: the config `make demo` replays (flowswitch replay --out-dir\n"
         "# build/<cc>/demo demo/demo.ini). Generated by testdata/gen.py, which also\n"
         "# checks its outcome as the replay case tests/replay/corpus.\n"
         "#\n"
         "# uplink  rx testdata/pcap/ipv4.pcap   a router uplink: IPv4 TCP/UDP/ICMP/VXLAN\n"
         "# server  rx testdata/pcap/ipv6.pcap   a server: IPv6\n"
         "# access  rx testdata/pcap/l2.pcap     an access trunk: ARP, VLAN 100/200, QinQ\n"
         "# noise   rx testdata/pcap/malformed.pcap  malformed frames: parse_error\n"
         "# sink    a dummy port: counts what it is sent, writes nothing\n"
         "# Output pcaps (uplink.pcap, server.pcap, access.pcap) go to --out-dir.\n")
    body = config_text(case, rx_prefix="../testdata/pcap/")
    body = body[body.index("\n[port "):body.index("[rules]")]
    s += body + "[rules]\n"
    for comment, rule in DEMO_RULES:
        if comment:
            s += "# %s\n" % comment
        s += "rule = %s\n" % rule
    return s


# --------------------------------------------------------------------------

def owned_files(root):
    """The generated files present under root (for --check): the corpus
    pcaps, demo/demo.ini, and every file of each tests/replay case whose
    config.ini carries the GENERATED marker (hand-written cases are left
    alone)."""
    res = set()
    pdir = os.path.join(root, "testdata/pcap")
    if os.path.isdir(pdir):
        res.update("testdata/pcap/" + f for f in os.listdir(pdir) if f.endswith(".pcap"))
    rdir = os.path.join(root, "tests/replay")
    for case in sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []:
        cfg = os.path.join(rdir, case, "config.ini")
        if not os.path.isfile(cfg):
            continue
        with open(cfg) as f:
            if f.readline() != GENERATED:
                continue
        for dp, _, fns in os.walk(os.path.join(rdir, case)):
            res.update(os.path.relpath(os.path.join(dp, fn), root) for fn in fns)
    if os.path.exists(os.path.join(root, "demo/demo.ini")):
        res.add("demo/demo.ini")
    return res


def check_regenerated(name, generate, owned_files, root):
    """--check for a generator: regenerates into a temporary directory and
    compares every file the generator owns with the committed one. Prints
    each difference and a summary line; returns the exit status (1 on any
    difference). Shared by gen.py, gen_csum.py and gen_vxlan.py."""
    tmp = tempfile.mkdtemp(prefix="fs-gen-")
    try:
        generate(tmp)
        want, have = owned_files(tmp), owned_files(root)
        bad = 0
        for rel in sorted(want | have):
            if rel not in have:
                print("missing: %s" % rel)
            elif rel not in want:
                print("not generated (stale?): %s" % rel)
            else:
                with open(os.path.join(tmp, rel), "rb") as a, \
                        open(os.path.join(root, rel), "rb") as b:
                    if a.read() == b.read():
                        continue
                print("differs: %s" % rel)
            bad += 1
        print("%s --check: %d generated files, %d differences" % (name, len(want), bad))
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with the "
                         "committed files; exit 1 on any difference")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: the parent of testdata/)")
    args = ap.parse_args()
    if not args.check:
        generate(args.root)
        return 0
    return check_regenerated("gen.py", generate, owned_files, args.root)

if __name__ == "__main__":
    sys.exit(main())
