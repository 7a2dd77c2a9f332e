#!/usr/bin/env bash
# An emulated three-host network for the probe (issue 31): network namespaces ce-n1..ce-n3,
# each with its own stack, eth0 = 198.18.0.N/24 (RFC 2544's benchmarking range: never a
# real network), cabled to a bridge inside namespace ce-sw. Nothing is added to the host's
# own namespace. Idempotent: it tears down what a previous run left first.
set -euo pipefail
here=$(dirname "$0")
bash "$here/netns-down.sh"
ip netns add ce-sw
ip -n ce-sw link add br0 type bridge
ip -n ce-sw link set br0 up
for n in 1 2 3; do
    ip netns add "ce-n$n"
    ip link add "ce-v$n" netns ce-sw type veth peer name eth0 netns "ce-n$n"
    ip -n ce-sw link set "ce-v$n" master br0 up
    ip -n "ce-n$n" addr add "198.18.0.$n/24" dev eth0
    ip -n "ce-n$n" link set eth0 up
    ip -n "ce-n$n" link set lo up
done
