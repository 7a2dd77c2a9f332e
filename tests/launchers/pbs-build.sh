#!/usr/bin/env bash
# Build OpenPBS 23.06.06 (the open-source PBS Professional) from source into a Debian
# bookworm chroot, once (../shared/notes/openpbs.md): no package archive reachable here ships
# it. The chroot is a cache, like the Flux and Slurm 24.11 ones; with PBS installed in it this
# script only checks it.
#
# The source is the archive of the v23.06.06 tag in ../shared/vendor/ with the two upstream
# patches there (Python 3.10 support; "compile with Python 3.11"), all sha256-pinned; where no
# vendored copy exists, the same tag's archive from GitHub
# (https://github.com/openpbs/openpbs/archive/refs/tags/v23.06.06.tar.gz), same sha256.
# Timings on 2 cores: debootstrap ~1 min, packages ~2 min, build ~6-10 min. Needs root.
# Environment: CLUSTERENV_PBS_ROOT (default /var/lib/clusterenv/pbs), CLUSTERENV_VENDOR.
set -euo pipefail

ROOT=${CLUSTERENV_PBS_ROOT:-/var/lib/clusterenv/pbs}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=23.06.06
ARCHIVE=openpbs-$VERSION.tar.gz
SHA256=9ac9e5297248121aef1c151688f4093567efcd2494d6641c8c110e26d763ef76
PATCHES=(0001-python-3.10-support.patch 0002-compile-with-python-3.11.patch)
PATCH_SHA256=(108571be8b89e2e9089f9d6c4a36be79414594f3271a45ffcae3fa1e103b6068
    609fe3f97edc3b8c2bf89e54e5918a75015fcf20304f8a917876ce92947f34c2)
UPSTREAM=https://github.com/openpbs/openpbs/archive/refs/tags/v$VERSION.tar.gz
LOG_DIR=$ROOT.logs   # where fail() points (slurm-common.sh)
# shellcheck source=tests/launchers/slurm-common.sh
source "$(dirname "$0")/slurm-common.sh"
SUITE=bookworm
PACKAGES=(gcc g++ make libtool autoconf automake autotools-dev pkg-config libhwloc-dev libx11-dev
    libxt-dev libedit-dev libical-dev libncurses-dev perl postgresql-server-dev-all
    postgresql-contrib postgresql python3-dev tcl-dev tk-dev swig libexpat1-dev libssl-dev
    libxext-dev libxft-dev libcjson-dev sudo procps iproute2 patch)
# shellcheck source=tests/launchers/chroot-common.sh
source "$(dirname "$0")/chroot-common.sh"
[ "$(id -u)" = 0 ] || fail "must run as root (debootstrap, chroot)"

[ -f "$ROOT/.clusterenv-pbs-$VERSION" ] && [ -x "$ROOT/opt/pbs/sbin/pbs_server.bin" ] && exit 0
make_chroot

VENDOR=$(vendor_dir "$ARCHIVE")
src=$ROOT/opt/src
mkdir -p "$src"
[ -n "$VENDOR" ] || fail "no vendored $ARCHIVE and its patches (CLUSTERENV_VENDOR, ../shared/vendor)"
cp "$VENDOR/$ARCHIVE" "$src/"
echo "$SHA256  $src/$ARCHIVE" | sha256sum -c --quiet - || fail "$ARCHIVE: sha256 is not $SHA256"
for i in "${!PATCHES[@]}"; do
    cp "$VENDOR/openpbs-patches/${PATCHES[$i]}" "$src/"
    echo "${PATCH_SHA256[$i]}  $src/${PATCHES[$i]}" | sha256sum -c --quiet - ||
        fail "${PATCHES[$i]}: sha256 is not ${PATCH_SHA256[$i]}"
done

log "building OpenPBS $VERSION in $ROOT (~10 min on 2 cores; log: $ROOT.build.log)"
mount -t proc proc "$ROOT/proc" 2>/dev/null || true
in_root bash -c "set -e; cd /opt/src && rm -rf openpbs-$VERSION && mkdir openpbs-$VERSION &&
    tar -xzf $ARCHIVE -C openpbs-$VERSION --strip-components=1 && cd openpbs-$VERSION &&
    for p in ${PATCHES[*]}; do patch -p1 < ../\$p; done &&
    ./autogen.sh && ./configure --prefix=/opt/pbs && make -j\$(nproc) && make install &&
    /opt/pbs/libexec/pbs_postinstall && chmod 4755 /opt/pbs/sbin/pbs_iff /opt/pbs/sbin/pbs_rcp &&
    cd /opt/src && rm -rf openpbs-$VERSION" >"$ROOT.build.log" 2>&1 ||
    { umount "$ROOT/proc" 2>/dev/null; tail -n 30 "$ROOT.build.log" >&2; fail "OpenPBS build failed (log: $ROOT.build.log)"; }
umount "$ROOT/proc" 2>/dev/null || true
touch "$ROOT/.clusterenv-pbs-$VERSION"
log "OpenPBS $VERSION built in $ROOT"
