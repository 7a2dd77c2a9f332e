#!/usr/bin/env bash
# Remove every namespace netns-up.sh made (their links, bridges and nftables rules go with
# them) and the hosts' /etc/hosts views; /etc/netns itself where netns-up.sh made it.
# Idempotent.
for ns in ce-n1 ce-n2 ce-n3 ce-sw; do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
done
if [ -e /etc/netns/.clusterenv-made ]; then
    rm -f /etc/netns/.clusterenv-made
    rmdir /etc/netns 2>/dev/null || true
fi
exit 0
