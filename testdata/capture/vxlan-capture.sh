#!/bin/sh
# vxlan-capture.sh: capture VXLAN traffic made by the Linux kernel's own vxlan
# devices, for flowswitch's decap tests and its encap-vs-kernel comparison.
#
#     sudo sh testdata/capture/vxlan-capture.sh [OUTDIR]
#
# Run by hand as root (never by `make check`); needs ip (iproute2), ethtool,
# dumpcap (package wireshark-common), ping and /usr/bin/python3. Writes into
# OUTDIR (default: the directory of this script) four microsecond pcaps
# (dumpcap -P: libpcap format, link type Ethernet):
#
#   vxlan-v4-csum.pcap      IPv4 underlay, VNI 42,   udpcsum
#   vxlan-v4-nocsum.pcap    IPv4 underlay, VNI 11259375 (0xabcdef), noudpcsum (outer UDP checksum 0)
#   vxlan-v6-csum.pcap      IPv6 underlay, VNI 4660, udpcsum (the IPv6 default)
#   vxlan-v6-zerocsum.pcap  IPv6 underlay, VNI 61,   noudpcsum udp6zerocsumtx udp6zerocsumrx
#
# How: two private network namespaces (fsvx-a, fsvx-b, deleted at the end)
# joined by a veth pair (fsvxa in fsvx-a, fsvxb in fsvx-b) with fixed MACs
# 02:00:00:0a:00:01 / 02:00:00:0b:00:01, underlay addresses 192.0.2.1/24 and
# 192.0.2.2/24, 2001:db8::1/64 and 2001:db8::2/64 (documentation prefixes;
# nothing leaves the namespaces). Transmit checksum offload is turned off on
# both veth ends (ethtool -K tx off), so the kernel completes every inner and
# outer checksum before the packet tap sees it (with it on, captured
# checksums would be partial). For each of the four configurations, one
# vxlan device per namespace (dstport 4789, static remote, learning off,
# fixed MACs 02:00:00:1a:00:01 / 02:00:00:1b:00:01, IPv6 disabled on it so
# no MLD/ND chatter) gets overlay address 10.99.0.1/24 or 10.99.0.2/24 and
# the overlay MTU 1450 (IPv4 underlay: 1500 - 50) or 1430 (IPv6: 1500 - 70),
# so no outer packet is fragmented. The traffic, from fsvx-a to fsvx-b:
#   * ping: 2 echo requests of 56 bytes and 1 of 1300 bytes (with replies;
#     the overlay ARP exchange before them is captured as well);
#   * TCP: a connection to port 5001 (handshake), the client sends 100 and
#     then 900 bytes, the server echoes each, both close (FIN/ACK).
# dumpcap captures on fsvxa with the filter "udp port 4789" (only VXLAN:
# underlay ARP/ND are not kept).
#
# The captures are committed; testdata/gen_vxlan.py reads them, checks them
# (every outer and inner checksum valid or, per configuration, the outer UDP
# checksum zero) and builds the kernel replay cases from them.
set -eu

OUT=${1:-$(cd "$(dirname "$0")" && pwd)}
A=fsvx-a
B=fsvx-b
MAC_A=02:00:00:0a:00:01
MAC_B=02:00:00:0b:00:01
VMAC_A=02:00:00:1a:00:01
VMAC_B=02:00:00:1b:00:01

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "vxlan-capture.sh: $1 not found (apt-get install $2)" >&2
        exit 1
    }
}
need ip iproute2
need ethtool ethtool
need dumpcap wireshark-common
need ping iputils-ping
[ -x /usr/bin/python3 ] || { echo "vxlan-capture.sh: /usr/bin/python3 missing" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "vxlan-capture.sh: run as root" >&2; exit 1; }

cleanup() {
    ip netns del $A 2>/dev/null || true
    ip netns del $B 2>/dev/null || true
}
trap cleanup EXIT INT TERM
cleanup

ip netns add $A
ip netns add $B
ip link add fsvxa netns $A type veth peer name fsvxb netns $B
for ns in $A $B; do
    ip -n $ns link set lo up
done
ip -n $A link set fsvxa address $MAC_A
ip -n $B link set fsvxb address $MAC_B
ip -n $A addr add 192.0.2.1/24 dev fsvxa
ip -n $B addr add 192.0.2.2/24 dev fsvxb
ip -n $A addr add 2001:db8::1/64 dev fsvxa nodad
ip -n $B addr add 2001:db8::2/64 dev fsvxb nodad
ip netns exec $A ethtool -K fsvxa tx off >/dev/null
ip netns exec $B ethtool -K fsvxb tx off >/dev/null
ip -n $A link set fsvxa up
ip -n $B link set fsvxb up
# Static underlay neighbours: no ARP/ND needed on the underlay.
ip -n $A neigh replace 192.0.2.2 lladdr $MAC_B dev fsvxa nud permanent
ip -n $B neigh replace 192.0.2.1 lladdr $MAC_A dev fsvxb nud permanent
ip -n $A neigh replace 2001:db8::2 lladdr $MAC_B dev fsvxa nud permanent
ip -n $B neigh replace 2001:db8::1 lladdr $MAC_A dev fsvxb nud permanent

# TCP echo server (one connection) and client, run inside the namespaces.
SERVER='
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.99.0.2", 5001)); s.listen(1)
c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for n in (100, 900):
    got = b""
    while len(got) < n:
        d = c.recv(n - len(got))
        if not d:
            break
        got += d
    c.sendall(got)
c.recv(1)
c.close(); s.close()
'
CLIENT='
import socket, time
c = socket.create_connection(("10.99.0.2", 5001), timeout=5)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for n, ch in ((100, b"a"), (900, b"b")):
    c.sendall(ch * n)
    got = b""
    while len(got) < n:
        got += c.recv(n - len(got))
    time.sleep(0.05)
c.shutdown(socket.SHUT_WR)
c.recv(1)
c.close()
'

# capture NAME VNI FAMILY VXLAN-OPTIONS...
capture() {
    name=$1 vni=$2 fam=$3
    shift 3
    if [ "$fam" = 4 ]; then
        la=192.0.2.1 lb=192.0.2.2 mtu=1450
    else
        la=2001:db8::1 lb=2001:db8::2 mtu=1430
    fi
    ip -n $A link add fsvx0 type vxlan id "$vni" dstport 4789 local $la remote $lb \
        dev fsvxa nolearning "$@"
    ip -n $B link add fsvx0 type vxlan id "$vni" dstport 4789 local $lb remote $la \
        dev fsvxb nolearning "$@"
    ip -n $A link set fsvx0 address $VMAC_A mtu $mtu
    ip -n $B link set fsvx0 address $VMAC_B mtu $mtu
    for ns in $A $B; do
        ip netns exec $ns sysctl -qw net.ipv6.conf.fsvx0.disable_ipv6=1
    done
    ip -n $A addr add 10.99.0.1/24 dev fsvx0
    ip -n $B addr add 10.99.0.2/24 dev fsvx0
    ip -n $A link set fsvx0 up
    ip -n $B link set fsvx0 up

    file="$OUT/vxlan-$name.pcap"
    rm -f "$file"
    ip netns exec $A dumpcap -q -P -i fsvxa -f "udp port 4789" -w "$file" 2>/dev/null &
    cap=$!
    sleep 1.5   # let dumpcap start before the first packet
    ip netns exec $A ping -q -c 2 -i 0.2 -s 56 10.99.0.2 >/dev/null
    ip netns exec $A ping -q -c 1 -s 1300 10.99.0.2 >/dev/null
    ip netns exec $B /usr/bin/python3 -c "$SERVER" &
    srv=$!
    sleep 0.5
    ip netns exec $A /usr/bin/python3 -c "$CLIENT"
    wait $srv
    sleep 0.5
    kill -INT $cap
    wait $cap || true
    chmod 644 "$file"
    ip -n $A link del fsvx0
    ip -n $B link del fsvx0
    echo "vxlan-capture.sh: wrote $file"
}

capture v4-csum 42 4 udpcsum
capture v4-nocsum 11259375 4 noudpcsum
capture v6-csum 4660 6 udpcsum
capture v6-zerocsum 61 6 noudpcsum udp6zerocsumtx udp6zerocsumrx
