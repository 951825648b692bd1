#!/bin/bash
# Two "hosts" on one machine: each a network namespace (joined by a veth
# pair), a UTS namespace (its own hostname) and a time namespace whose
# CLOCK_MONOTONIC is offset (as two machines booted at other times), each
# with its wall clock off by an injected NTP-like error (STRATA_TEST_WALL_CLOCK_ERROR_NS).
# Each records its ranks of one gloo job with `strata record`, as a job on two
# hosts would: OUT/hostA and OUT/hostB.
#
#   two_hosts.sh STRATA PYTHON PROGRAM OUT     (root; exit 77 when namespaces are unavailable)
#
# Offsets: hostA's monotonic clock +1000 s, wall clock +3 ms; hostB's +2500 s
# and -2 ms. So hostB's trace clock reads 1500 s more than hostA's, while
# their wall clocks say 1500 s + 5 ms.
set -u
STRATA=$1 PY=$2 PROG=$3 OUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "needs root (network and time namespaces)"; exit 77; }
command -v ip >/dev/null && command -v unshare >/dev/null || { echo "needs ip and unshare"; exit 77; }
A=strata-hA-$$ B=strata-hB-$$ VA=stA$$ VB=stB$$
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$A" && ip netns add "$B" || { echo "ip netns add failed"; exit 77; }
ip link add "$VA" type veth peer name "$VB" || { echo "no veth"; exit 77; }
ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B" || exit 1
ip -n "$A" addr add 10.213.0.1/24 dev "$VA" && ip -n "$B" addr add 10.213.0.2/24 dev "$VB" || exit 1
for n in "$A:$VA" "$B:$VB"; do ip -n "${n%%:*}" link set "${n#*:}" up; ip -n "${n%%:*}" link set lo up; done
unshare --time --monotonic 1 true 2>/dev/null || { echo "no time namespaces"; exit 77; }
mkdir -p "$OUT"
PORT=$((29000 + $$ % 1000))
host() {  # ns iface hostname node monotonic-offset wall-error
  ip netns exec "$1" unshare --uts --time --monotonic "$5" sh -c "hostname $3 && exec env GLOO_SOCKET_IFNAME=$2 \
    STRATA_TEST_WALL_CLOCK_ERROR_NS=$6 '$STRATA' record -o '$OUT/$3' -- '$PY' '$HERE/launch_ranks.py' --nnodes 2 \
    --node-rank $4 --master-addr 10.213.0.1 --master-port $PORT 2 '$PROG'"
}
host "$A" "$VA" hostA 0 1000 3000000 > "$OUT/hostA.log" 2>&1 &
pa=$!
host "$B" "$VB" hostB 1 2500 -2000000 > "$OUT/hostB.log" 2>&1
rb=$?
wait $pa
ra=$?
cat "$OUT/hostA.log" "$OUT/hostB.log"
[ $ra = 0 ] && [ $rb = 0 ]
