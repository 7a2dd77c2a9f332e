#!/usr/bin/env bash
# podman-run.sh [PODMAN-RUN-OPTION...] -- COMMAND...: COMMAND in a container of the image of
# podman-build.sh, removed when it ends, on the host's network, with this Python
# (CLUSTERENV_BIND), the repository and /tmp (the tests' folders) mounted. Like a real
# `podman run`, it passes none of the caller's environment unless told (--env-host, -e).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/launchers/podman-common.sh
source "$(dirname "$0")/podman-common.sh"
options=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do options+=("$1"); shift; done
shift
mounts=(-v "$REPO:$REPO:ro" -v /tmp:/tmp)
IFS=: read -r -a extra <<<"${CLUSTERENV_BIND:-}"
for path in "${extra[@]}"; do [ -n "$path" ] && mounts+=(-v "$path:$path:ro"); done
# Limits at or below the host's: raising them needs CAP_SYS_RESOURCE, which this machine lacks.
podman_cmd run --rm --network=host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    "${mounts[@]}" "${options[@]}" "$IMAGE" "$@"
