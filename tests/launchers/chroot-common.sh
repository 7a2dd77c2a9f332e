# Sourced by the scripts of the clusters that run in a Debian chroot (Slurm 24.11, Grid
# Engine): making the chroot once (a cache), binding what the tasks need into it, and
# undoing those mounts. Uses log/fail of slurm-common.sh and these variables:
#   ROOT (the chroot), SUITE (bookworm, trixie), PACKAGES (installed inside), REPO.
MIRROR=${CLUSTERENV_DEBIAN_MIRROR:-http://deb.debian.org/debian}

in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

mounted() { mountpoint -q "$ROOT$1"; }

# Debian SUITE with PACKAGES in ROOT, made once and kept. A build that stopped half-way
# is finished, not restarted. $PRESEED (debconf lines) is applied before installing.
make_chroot() {
    [ "$(cat "$ROOT/.clusterenv-ready" 2>/dev/null)" = "${PACKAGES[*]}" ] && return 0
    command -v debootstrap >/dev/null || {
        log "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 debootstrap >/dev/null ||
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    }
    if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
        log "debootstrap $SUITE into $ROOT (~25 s)"
        mkdir -p "$ROOT"
        debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
            { tail -n 30 "$ROOT.debootstrap.log" >&2; fail "debootstrap failed (log: $ROOT.debootstrap.log)"; }
    fi
    # Package scripts must start no service in the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
    chmod 755 "$ROOT/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    log "installing ${PACKAGES[*]} in the chroot (~25 s)"
    mount -t proc proc "$ROOT/proc" 2>/dev/null || true
    in_root bash -c "export DEBIAN_FRONTEND=noninteractive; printf '%s\n' \"${PRESEED:-}\" | debconf-set-selections;
        apt-get update -qq && apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} && apt-get clean" >"$ROOT.apt.log" 2>&1 ||
        { tail -n 30 "$ROOT.apt.log" >&2; fail "apt-get install in the chroot failed (log: $ROOT.apt.log)"; }
    umount "$ROOT/proc"
    echo "${PACKAGES[*]}" >"$ROOT/.clusterenv-ready"
}

# /proc, /sys, /dev, /tmp (the tests' work directories), the repository and
# CLUSTERENV_BIND (colon-separated: the venv's Python) read-only, into ROOT.
mount_chroot() {
    local path
    mounted /proc || mount -t proc proc "$ROOT/proc"
    mounted /sys || { mount --rbind /sys "$ROOT/sys" && mount --make-rslave "$ROOT/sys"; }
    bind /dev /dev
    bind /dev/pts /dev/pts
    bind /dev/shm /dev/shm
    bind /tmp /tmp
    bind "$REPO" "$REPO" ro
    IFS=: read -r -a extra <<<"${CLUSTERENV_BIND:-}"
    for path in "${extra[@]}"; do
        # Never hide a directory of the chroot's own system (a Python in /usr).
        if [ -n "$path" ] && [ -d "$path" ] && ! mounted "$path" && [ -z "$(ls -A "$ROOT$path" 2>/dev/null)" ]; then
            bind "$path" "$path" ro
        fi
    done
}

bind() {  # source, target inside the chroot, options
    mounted "$2" && return 0
    mkdir -p "$ROOT$2"
    mount --bind "$1" "$ROOT$2"
    mount --make-rslave "$ROOT$2"
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$ROOT$2"
    return 0
}

# Every mount under ROOT, the most recent (deepest) first; prints how many it undid.
unmount_chroot() {
    local count=0 target targets
    mapfile -t targets < <(awk -v root="$ROOT" '$2 == root || index($2, root "/") == 1 { print $2 }' /proc/self/mounts | tac)
    for target in "${targets[@]}"; do
        umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || echo "$(basename "$0"): cannot unmount $target" >&2
        count=$((count + 1))
    done
    echo "$count"
}

# The folder of the vendored source archive $1 (sha256-pinned, ../shared/vendor/): from
# CLUSTERENV_VENDOR, beside this repository, or beside the one this clone was made from (a
# CI clone elsewhere of a checkout that has it); prints nothing where there is none.
vendor_dir() {
    local origin dir
    origin=$(git -C "$REPO" config --get remote.origin.url 2>/dev/null || true)
    [ "${origin#/}" != "$origin" ] || origin=""
    for dir in "${CLUSTERENV_VENDOR:-}" "$REPO/../shared/vendor" ${origin:+"$origin/../shared/vendor"}; do
        [ -n "$dir" ] && [ -f "$dir/$1" ] && { echo "$dir"; return 0; }
    done
    return 0
}
