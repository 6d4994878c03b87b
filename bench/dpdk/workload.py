"""Traffic and rule sets of the DPDK benchmark (bench/dpdk/run).

Rule sets, one text per set, given verbatim to flowswitch (an `include`d
rule file) and to OVS (`ovs-ofctl add-flows`): the ovs-ofctl flow syntax
both read.
  inport    in_port=p0 actions=output:p1 (flowswitch's keyless path, OVS's
            simple match)
  l3        in_port=p0,ip,nw_dst=10.0.0.0/8 actions=output:p1
  pipeline  228 rules over 12 distinct masks (the default's empty one
            included): an L2 ACL (source MACs, the multicast bit of dl_dst),
            L4 port ACLs (TCP and UDP, alone and with a /16 destination),
            IPv4 routes of /32, /24, /16 and /8 in
            longest-prefix-first priority tiers, IPv6 /64 and /32 routes, a
            default drop. Traffic matches none of the ACLs and only few
            specific routes: most packets reach a /16 or the /8 route below
            every higher-priority tier ("deep" rules).

Traffic: flow i has source address 172.16.0.0 + i (IPv4; a 2^20 range)
and a source port derived from i, neither of which any rule reads, so the
flows of one destination share megaflows while exact-match caches see
every flow; its destination is one of 256 addresses in 10.0.0.0/8 spread
over the pipeline's tiers (5% /32, 5% /24, 20% /16, 70% only the /8; flow
0 is a /8 one). Kinds:
  udp4      Ethernet/IPv4/UDP, 64-byte frames (60 bytes + FCS)
  mix       40% IPv4/UDP, 20% IPv4/TCP, 20% IPv6 (UDP and TCP), 20%
            802.1Q-tagged IPv4/UDP (VLAN 100); frames 60-78 bytes
Files: "uniform" holds every flow once, in a seeded random order; "zipf"
holds max(N, ZIPF_MIN_PACKETS) packets drawn from a Zipf distribution
(exponent ZIPF_S) over the N flows, so fewer distinct flows appear (the
number is reported). net_pcap replays a file in a loop.

Packets are built from scapy templates (one per kind) with the varying
fields and checksums patched in (scapy's checksum()); a sample of every
file (all packets up to 1000) is parsed back with scapy and must give the
intended fields and the checksums scapy computes itself. Files are written
with scapy's RawPcapWriter.

model_match() evaluates a rule set on a flow's fields independently of
both datapaths (priority order, first match) and gives the tier every
packet should hit; the bench uses it for the deep share and to know that
every packet of every row is forwarded (no ACL or default drop hit).
"""
import ipaddress
import random
import struct

ZIPF_S = 1.0
ZIPF_MIN_PACKETS = 65536
SEED = 18
SRC_MAC = "02:00:00:00:00:01"
DST_MAC = "02:00:00:00:00:02"
UDP_DPORT = 5001
TCP_DPORT = 80
VLAN = 100

# Ports the L4 ACLs drop (the traffic uses UDP_DPORT and TCP_DPORT only).
ACL_PORTS = [7, 9, 19, 23, 25, 69, 111, 135, 137, 138, 139, 161, 162, 445, 514, 520, 1900,
             2049, 3389, 5060]

# ---- destinations and rule tiers ---------------------------------------------

# (tier, weight in % of flows, number of destinations)
V4_TIERS = (("ipv4/32", 5, 40), ("ipv4/24", 5, 40), ("ipv4/16", 20, 40), ("ipv4/8", 70, 136))
DEEP_TIERS = ("ipv4/16", "ipv4/8", "ipv6/32")


def v4_dest(tier, j):
    """Destination j of a tier: inside exactly the routes of that tier and
    the ones below it (and always inside 10.0.0.0/8)."""
    if tier == "ipv4/32":
        return f"10.1.1.{j + 1}"
    if tier == "ipv4/24":
        return f"10.2.{j + 1}.7"
    if tier == "ipv4/16":
        return f"10.{3 + j}.{(j * 37) % 250 + 1}.9"
    return f"10.{200 + j % 50}.{j // 50 + 1}.{(j * 11) % 250 + 1}"


def v6_dest(deep, j):
    """IPv6 destination: under a /64 route (not deep) or only the /32 one."""
    a = f"2001:db8:0:{j % 20 + 1}::1" if not deep else f"2001:db8:ff00:{j % 64}::1"
    return str(ipaddress.IPv6Address(a))


def pipeline_rules():
    """(priority, match, actions, tier) of the realistic pipeline."""
    r = []
    for k in range(20):
        r.append((1000, f"dl_src=02:00:de:ad:00:{k:02x}", "drop", "acl-l2"))
    r.append((1000, "dl_dst=01:00:00:00:00:00/01:00:00:00:00:00", "drop", "acl-l2"))
    for proto in ("udp", "tcp"):
        for p in ACL_PORTS:
            r.append((900, f"{proto},tp_dst={p}", "drop", "acl-l4"))
    for k in range(5):
        r.append((910, f"tcp,nw_dst=10.{3 + k}.0.0/16,tp_dst=22", "drop", "acl-l4"))
    for j in range(40):
        r.append((500, f"ip,nw_dst=10.1.1.{j + 1}", "output:p1", "ipv4/32"))
    for j in range(40):
        r.append((400, f"ip,nw_dst=10.2.{j + 1}.0/24", "output:p1", "ipv4/24"))
    for j in range(40):
        r.append((300, f"ip,nw_dst=10.{3 + j}.0.0/16", "output:p1", "ipv4/16"))
    r.append((200, "ip,nw_dst=10.0.0.0/8", "output:p1", "ipv4/8"))
    for k in range(19):
        r.append((200, f"ip,nw_dst={11 + k}.0.0.0/8", "output:p1", "ipv4/8"))
    for k in range(20):
        r.append((450, f"ipv6,ipv6_dst=2001:db8:0:{k + 1}::/64", "output:p1", "ipv6/64"))
    r.append((150, "ipv6,ipv6_dst=2001:db8::/32", "output:p1", "ipv6/32"))
    r.append((0, "", "drop", "default"))
    return r


RULESETS = {
    "inport": lambda: [(32768, "in_port=p0", "output:p1", "inport")],
    "l3": lambda: [(32768, "in_port=p0,ip,nw_dst=10.0.0.0/8", "output:p1", "l3")],
    "pipeline": pipeline_rules,
}


def rule_lines(ruleset):
    """The rule set as ovs-ofctl flow lines (read by both systems)."""
    out = []
    for prio, match, actions, _tier in RULESETS[ruleset]():
        m = f"priority={prio}" + (f",{match}" if match else "")
        out.append(f"{m} actions={actions}")
    return out


def rule_masks(ruleset):
    """Distinct masks of a rule set: the set of (field, prefix length or
    mask) a rule matches on, values left out."""
    masks = set()
    for _p, match, _a, _t in RULESETS[ruleset]():
        shape = []
        for term in filter(None, match.split(",")):
            k, _, v = term.partition("=")
            if not v:
                shape.append(k)
            elif "/" in v:
                shape.append(f"{k}/{v.split('/')[1]}")
            else:
                shape.append(k)
        masks.add(tuple(sorted(shape)))
    return masks


# ---- flows ---------------------------------------------------------------------

def _mix32(x):
    """A 32-bit integer hash (lowbias32): spreads flow indices over tiers."""
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def flow_fields(i, kind):
    """Header fields of flow i (dict: kind, src, dst, sport, dport, proto,
    vlan)."""
    h = _mix32(i)
    src4 = str(ipaddress.IPv4Address(0xAC100000 + (i & 0xFFFFF)))
    sport = 1024 + (i * 40503) % 64000 if i < 0x100000 else 1024 + (i >> 20)
    if kind == "udp4":
        sub = "udp4"
    elif kind == "mix":
        r = h % 10
        sub = ("udp4", "udp4", "udp4", "udp4", "tcp4", "tcp4", "udp6", "tcp6",
               "vlan_udp4", "vlan_udp4")[r]
    else:
        raise ValueError(f"unknown traffic kind {kind}")
    if sub in ("udp6", "tcp6"):
        src = str(ipaddress.IPv6Address((0x20010DB8AAAA << 80) + i))
        dst = v6_dest((h >> 8) % 100 < 70 or i == 0, h >> 16)
    else:
        src = src4
        if i == 0:
            tier, j = "ipv4/8", 0
        else:
            w = (h >> 8) % 100
            acc = 0
            for tier, weight, count in V4_TIERS:
                acc += weight
                if w < acc:
                    break
            j = (h >> 16) % count
        dst = v4_dest(tier, j)
    proto = "tcp" if sub.startswith("tcp") else "udp"
    return {"sub": sub, "src": src, "dst": dst, "sport": sport,
            "dport": TCP_DPORT if proto == "tcp" else UDP_DPORT, "proto": proto,
            "vlan": VLAN if sub.startswith("vlan") else None}


# ---- packets ---------------------------------------------------------------------

class PacketFactory:
    """Builds the bytes of flows from one scapy template per sub-kind."""

    def __init__(self):
        from scapy.all import Ether, IP, IPv6, UDP, TCP, Dot1Q, raw
        from scapy.utils import checksum
        self.raw, self.checksum = raw, checksum
        self.scapy = {"Ether": Ether, "IP": IP, "IPv6": IPv6, "UDP": UDP, "TCP": TCP}
        eth = Ether(src=SRC_MAC, dst=DST_MAC)
        t = {
            "udp4": eth / IP(src="0.0.0.0", dst="0.0.0.0") / UDP(sport=0, dport=UDP_DPORT)
            / bytes(18),
            "tcp4": eth / IP(src="0.0.0.0", dst="0.0.0.0") / TCP(sport=0, dport=TCP_DPORT,
                                                                  flags="A") / bytes(6),
            "udp6": eth / IPv6(src="::", dst="::") / UDP(sport=0, dport=UDP_DPORT),
            "tcp6": eth / IPv6(src="::", dst="::") / TCP(sport=0, dport=TCP_DPORT, flags="A"),
            "vlan_udp4": eth / Dot1Q(vlan=VLAN) / IP(src="0.0.0.0", dst="0.0.0.0")
            / UDP(sport=0, dport=UDP_DPORT) / bytes(18),
        }
        self.tmpl = {}
        for sub, pkt in t.items():
            b = bytearray(raw(pkt))
            l3 = 18 if sub.startswith("vlan") else 14
            v6 = sub.endswith("6")
            l4 = l3 + (40 if v6 else 20)
            self.tmpl[sub] = (b, l3, l4, v6)

    def build(self, f):
        b, l3, l4, v6 = self.tmpl[f["sub"]]
        b = bytearray(b)
        proto = 6 if f["proto"] == "tcp" else 17
        if v6:
            b[l3 + 8:l3 + 24] = ipaddress.IPv6Address(f["src"]).packed
            b[l3 + 24:l3 + 40] = ipaddress.IPv6Address(f["dst"]).packed
            pseudo = bytes(b[l3 + 8:l3 + 40])
        else:
            b[l3 + 12:l3 + 16] = ipaddress.IPv4Address(f["src"]).packed
            b[l3 + 16:l3 + 20] = ipaddress.IPv4Address(f["dst"]).packed
            b[l3 + 10:l3 + 12] = b"\0\0"
            b[l3 + 10:l3 + 12] = struct.pack("!H", self.checksum(bytes(b[l3:l3 + 20])))
            pseudo = bytes(b[l3 + 12:l3 + 20])
        ip_len = struct.unpack("!H", b[l3 + 4:l3 + 6])[0] if v6 else \
            struct.unpack("!H", b[l3 + 2:l3 + 4])[0] - 20
        b[l4:l4 + 2] = struct.pack("!H", f["sport"])
        ck = l4 + (16 if proto == 6 else 6)
        b[ck:ck + 2] = b"\0\0"
        l4_bytes = bytes(b[l4:l4 + ip_len])
        pseudo += (struct.pack("!IxxxB", ip_len, proto) if v6
                   else struct.pack("!xBH", proto, ip_len))
        c = self.checksum(pseudo + l4_bytes)
        if proto == 17 and c == 0:
            c = 0xFFFF
        b[ck:ck + 2] = struct.pack("!H", c)
        return bytes(b)

    def verify(self, data, f):
        """Parses data back with scapy: the fields must be f's and the
        checksums what scapy computes. Returns an error string or None."""
        sc = self.scapy
        p = sc["Ether"](data)
        ipl = p[sc["IPv6"]] if f["sub"].endswith("6") else p[sc["IP"]]
        l4 = p[sc["TCP"]] if f["proto"] == "tcp" else p[sc["UDP"]]
        got = (ipl.src, ipl.dst, l4.sport, l4.dport, p.haslayer("Dot1Q") and p["Dot1Q"].vlan)
        want = (f["src"], f["dst"], f["sport"], f["dport"], f["vlan"] or False)
        if got[:4] != want[:4] or bool(got[4]) != bool(want[4]) or \
                (want[4] and got[4] != want[4]):
            return f"fields {got} != {want}"
        if len(data) < 60:
            return f"frame of {len(data)} bytes (under 60)"
        q = sc["Ether"](data)
        if not f["sub"].endswith("6"):
            del q[sc["IP"]].chksum
        del (q[sc["TCP"]] if f["proto"] == "tcp" else q[sc["UDP"]]).chksum
        if self.raw(q) != data:
            return "checksums differ from scapy's"
        return None


def zipf_cum_weights(n, s=ZIPF_S):
    cum, acc = [], 0.0
    for k in range(1, n + 1):
        acc += 1.0 / k ** s
        cum.append(acc)
    return cum


def write_traffic(path, n, kind, dist, factory=None, log=None):
    """Writes the pcap of n flows of a kind ("udp4", "mix") in a dist
    ("uniform", "zipf"). Returns its description (packets, distinct flows,
    tier shares from model_match for every rule set, bytes per frame)."""
    from scapy.utils import RawPcapWriter
    fac = factory or PacketFactory()
    rng = random.Random(f"{SEED}-{kind}-{dist}-{n}")
    if dist == "uniform":
        order = list(range(n))
        rng.shuffle(order)
    elif dist == "zipf":
        m = max(n, ZIPF_MIN_PACKETS)
        order = rng.choices(range(n), cum_weights=zipf_cum_weights(n), k=m)
        # Rank 0 is the most frequent flow: give ranks to flows at random.
        perm = list(range(n))
        rng.shuffle(perm)
        order = [perm[r] for r in order]
    else:
        raise ValueError(f"unknown distribution {dist}")
    pkts, fields = {}, {}
    counts = {}
    for i in order:
        counts[i] = counts.get(i, 0) + 1
    sample = set(counts) if len(counts) <= 1000 else set(rng.sample(sorted(counts), 1000))
    for i in counts:
        f = flow_fields(i, kind)
        fields[i] = f
        pkts[i] = fac.build(f)
        if i in sample:
            err = fac.verify(pkts[i], f)
            if err:
                raise RuntimeError(f"{path}: flow {i}: {err}")
    w = RawPcapWriter(path, linktype=1, sync=False)
    sizes = {}
    for i in order:
        w.write(pkts[i])
        sizes[len(pkts[i])] = sizes.get(len(pkts[i]), 0) + 1
    w.close()
    tiers = {}
    for rs in RULESETS:
        rules = model_rules(rs)
        t, memo = {}, {}
        for i, c in counts.items():
            f = fields[i]
            key = (f["sub"], f["dst"], f["dport"], f["proto"])
            if key not in memo:
                memo[key] = model_match(rules, f)
            t[memo[key]] = t.get(memo[key], 0) + c
        tiers[rs] = {k: round(v / len(order), 4) for k, v in sorted(t.items())}
    if log:
        log(f"traffic {kind} {dist} {n}: {len(order)} packets, {len(counts)} flows -> {path}")
    return {"kind": kind, "dist": dist, "flows": n, "packets": len(order),
            "distinct_flows": len(counts), "frame_bytes": {str(k + 4): v for k, v in
                                                           sorted(sizes.items())},
            "zipf_s": ZIPF_S if dist == "zipf" else None, "tier_shares": tiers,
            "verified_packets": len(sample)}


# ---- the reference model -------------------------------------------------------------

def model_rules(ruleset):
    """Rules in lookup order (priority descending, then file order) as
    (predicate list, tier, forwards); a predicate is (field, parsed value)."""
    rules = []
    for idx, (prio, match, actions, tier) in enumerate(RULESETS[ruleset]()):
        preds = []
        for term in filter(None, match.split(",")):
            k, _, v = term.partition("=")
            if k == "nw_dst":
                v = ipaddress.IPv4Network(v)
            elif k == "ipv6_dst":
                v = ipaddress.IPv6Network(v)
            elif k == "dl_dst":
                val, _, mask = v.partition("/")
                m = int(mask.replace(":", ""), 16) if mask else (1 << 48) - 1
                v = (int(val.replace(":", ""), 16) & m, m)
            elif k == "tp_dst":
                v = int(v)
            preds.append((k, v))
        rules.append((-prio, idx, preds, tier, actions != "drop"))
    rules.sort(key=lambda r: (r[0], r[1]))
    return [(p, t, fwd) for _, _, p, t, fwd in rules]


def _pred(k, v, f, addr):
    v6 = f["sub"].endswith("6")
    if k == "in_port":
        return v == "p0"
    if k == "ip":
        return not v6
    if k == "ipv6":
        return v6
    if k in ("tcp", "udp"):
        return not v6 and f["proto"] == k
    if k == "dl_src":
        return v == SRC_MAC
    if k == "dl_dst":
        return int(DST_MAC.replace(":", ""), 16) & v[1] == v[0]
    if k == "nw_dst":
        return not v6 and addr in v
    if k == "ipv6_dst":
        return v6 and addr in v
    if k == "tp_dst":
        return f["dport"] == v
    raise ValueError(f"model: unknown match field {k}")


def model_match(rules, f):
    """The tier of the first rule (in lookup order) matching flow f, with
    "!" prepended when that rule drops. The rules read no source field."""
    addr = ipaddress.ip_address(f["dst"])
    for preds, tier, fwd in rules:
        if all(_pred(k, v, f, addr) for k, v in preds):
            return tier if fwd else "!" + tier
    return "!none"
