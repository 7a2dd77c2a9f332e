#!/usr/bin/env bash
# An emulated three-host cluster for the probe and the launchers (issue 31). Hosts n1..n3
# are network namespaces ce-n1..ce-n3, each with two networks, as real nodes have:
#   eth0 198.18.0.N/24 on bridge br0  (the ordinary network; ce-head = 198.18.0.254 on it)
#   ib0  198.19.0.N/24 on bridge br1  (a second, "high-speed" one: names nN-ib)
# Both bridges live in namespace ce-sw, the switch, which is also the head node (slurmctld).
# 198.18.0.0/15 is RFC 2544's benchmarking range: never a real network. Each host has its
# own view of /etc/hosts (/etc/netns/ce-nN/hosts, which `ip netns exec` mounts over
# /etc/hosts) and an nsswitch.conf that asks only it; on-host.sh also gives a process the host's own name (a UTS namespace).
# Nothing is added to the machine's own namespace. Idempotent: it first tears down what a
# previous run left (netns-down.sh), and so does every failure on the way.
set -euo pipefail
here=$(dirname "$0")
bash "$here/netns-down.sh"
trap 'bash "$here/netns-down.sh"' ERR

hosts_view() {  # the /etc/hosts every host sees
    echo "127.0.0.1 localhost"
    # The machine's own name, as Debian's installer maps it: a process on an emulated host
    # that keeps it (no UTS namespace) resolves its own name to loopback.
    echo "127.0.1.1 $(hostname)"
    echo "198.18.0.254 ce-head"
    for n in 1 2 3; do echo "198.18.0.$n n$n"; echo "198.19.0.$n n$n-ib"; done
}

[ -d /etc/netns ] || { mkdir /etc/netns && touch /etc/netns/.clusterenv-made; }
ip netns add ce-sw
ip -n ce-sw link set lo up
for bridge in br0 br1; do
    ip -n ce-sw link add "$bridge" type bridge
    ip -n ce-sw link set "$bridge" up
done
ip -n ce-sw addr add 198.18.0.254/24 dev br0
for ns in ce-sw ce-n1 ce-n2 ce-n3; do
    mkdir -p "/etc/netns/$ns"
    hosts_view >"/etc/netns/$ns/hosts"
    # No name server is reachable from the hosts: their name service is /etc/hosts alone, so
    # a name it lacks is a definitive "no such name", not a resolver's "try again".
    if [ -e /etc/nsswitch.conf ]; then
        sed 's/^hosts:.*/hosts: files/' /etc/nsswitch.conf >"/etc/netns/$ns/nsswitch.conf"
    else
        echo "hosts: files" >"/etc/netns/$ns/nsswitch.conf"
    fi
done
for n in 1 2 3; do
    ip netns add "ce-n$n"
    ip -n "ce-n$n" link set lo up
    for net in "0 eth0 br0 e" "1 ib0 br1 i"; do
        read -r octet name bridge tag <<<"$net"
        ip link add "ce-$tag$n" netns ce-sw type veth peer name "$name" netns "ce-n$n"
        ip -n ce-sw link set "ce-$tag$n" master "$bridge" up
        ip -n "ce-n$n" addr add "198.1$((8 + octet)).0.$n/24" dev "$name"
        ip -n "ce-n$n" link set "$name" up
    done
done
