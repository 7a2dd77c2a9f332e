#!/usr/bin/env bash
# Remove every namespace netns-up.sh made; their links, bridge and nftables rules go with
# them. Idempotent.
for ns in ce-n1 ce-n2 ce-n3 ce-sw; do
    ip netns del "$ns" 2>/dev/null || true
done
exit 0
