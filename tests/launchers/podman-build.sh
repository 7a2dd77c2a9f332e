#!/usr/bin/env bash
# Build, once, the image the container tests run (no registry is reachable here): a Debian
# bookworm rootfs from debootstrap (minbase, ~25 s), imported as localhost/clusterenv-test:1
# into podman storage of the suite's own (/var/lib/clusterenv/podman, not the machine's).
# The tasks' Python, venv and repository are mounted by podman-run.sh, so the image holds
# none of them. Idempotent; needs root.
set -euo pipefail
ROOT=${CLUSTERENV_IMAGE_ROOT:-/var/lib/clusterenv/image}
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
# shellcheck source=tests/launchers/podman-common.sh
source "$(dirname "$0")/podman-common.sh"
[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap, podman)"
command -v podman >/dev/null || bash "$(dirname "$0")/install.sh"
if [ ! -f "$ROOT/.clusterenv-image" ]; then
    rm -rf "$ROOT"
    mkdir -p "$(dirname "$ROOT")"  # a fresh machine: no other chroot made it yet
    debootstrap --variant=minbase bookworm "$ROOT" http://deb.debian.org/debian \
        >"$ROOT.debootstrap.log" 2>&1 || fail "debootstrap failed (log: $ROOT.debootstrap.log)"
    touch "$ROOT/.clusterenv-image"
fi
if ! podman_cmd image exists "$IMAGE"; then
    tar -C "$ROOT" --exclude=./.clusterenv-image -c . | podman_cmd import - "$IMAGE" >/dev/null ||
        fail "podman import failed"
fi
log "image $IMAGE ready"
