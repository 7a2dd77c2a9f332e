#!/usr/bin/env bash
# Build LLNL's Flux (flux-core 0.88.0) from source into a Debian trixie chroot, once: no
# package archive reachable here ships it (../shared/notes/flux.md). The chroot is a cache,
# like the Slurm 24.11 one; with flux installed in it this script only checks it.
#
# The source is the archive of the v0.88.0 tag in ../shared/vendor/ (sha256-pinned) when it
# is there; otherwise the same tag's archive from GitHub
# (https://github.com/flux-framework/flux-core/archive/refs/tags/v0.88.0.tar.gz), checked
# against the same sha256. Timings on 2 cores: debootstrap ~1 min, packages ~6 min,
# autogen + configure + make + install ~15 min. Needs root.
# Environment: CLUSTERENV_FLUX_ROOT (the chroot, default /var/lib/clusterenv/flux),
# CLUSTERENV_VENDOR (the folder with the archive; else ../shared/vendor beside the repository or
# beside the repository it was cloned from).
set -euo pipefail

ROOT=${CLUSTERENV_FLUX_ROOT:-/var/lib/clusterenv/flux}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=0.88.0
ARCHIVE=flux-core-$VERSION.tar.gz
SHA256=b264114f82a510335d5aa4ae7561f637edf381f3f86e1549b63bf17067e26704
UPSTREAM=https://github.com/flux-framework/flux-core/archive/refs/tags/v$VERSION.tar.gz
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
LOG_DIR=$ROOT.logs   # where fail() points (slurm-common.sh)
SUITE=trixie
PACKAGES=(build-essential autoconf automake libtool make pkg-config libc6-dev libzmq3-dev uuid-dev
    libjansson-dev liblz4-dev libarchive-dev libhwloc-dev libsqlite3-dev lua5.1 liblua5.1-dev lua-posix
    python3-dev python3-cffi python3-ply python3-setuptools python3-yaml jq procps hostname iproute2
    mpich libmpich-dev ca-certificates)
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap, chroot)"

[ -f "$ROOT/.clusterenv-flux-$VERSION" ] && [ -x "$ROOT/opt/flux/bin/flux" ] && exit 0
make_chroot

VENDOR=$(vendor_dir "$ARCHIVE")
src=$ROOT/opt/src/$ARCHIVE
mkdir -p "$ROOT/opt/src"
if [ -n "$VENDOR" ]; then
    cp "$VENDOR/$ARCHIVE" "$src"
elif [ ! -f "$src" ]; then
    log "no vendored $ARCHIVE: downloading $UPSTREAM"
    curl -fsSL -o "$src" "$UPSTREAM" || python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$UPSTREAM" "$src" ||
        fail "cannot download $UPSTREAM"
fi
echo "$SHA256  $src" | sha256sum -c --quiet - || fail "$src: sha256 is not $SHA256"

log "building flux-core $VERSION in $ROOT (~15 min on 2 cores; log: $ROOT.build.log)"
mount -t proc proc "$ROOT/proc" 2>/dev/null || true
in_root bash -c "set -e; cd /opt/src && rm -rf flux-core-$VERSION && mkdir flux-core-$VERSION &&
    tar -xzf $ARCHIVE -C flux-core-$VERSION --strip-components=1 && cd flux-core-$VERSION &&
    FLUX_VERSION=$VERSION ./autogen.sh && ./configure --prefix=/opt/flux --disable-docs &&
    make -j\$(nproc) && make install && cd /opt/src && rm -rf flux-core-$VERSION" >"$ROOT.build.log" 2>&1 ||
    { umount "$ROOT/proc" 2>/dev/null; tail -n 30 "$ROOT.build.log" >&2; fail "flux-core build failed (log: $ROOT.build.log)"; }
in_root /opt/flux/bin/flux version >/dev/null || { umount "$ROOT/proc"; fail "the built flux does not run"; }
umount "$ROOT/proc" 2>/dev/null || true
touch "$ROOT/.clusterenv-flux-$VERSION"
log "flux-core $VERSION built in $ROOT"
