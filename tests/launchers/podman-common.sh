# Sourced by podman-build.sh and podman-run.sh: the suite's podman, with storage of its own
# and the settings this machine needs (runc and cgroupfs: crun refuses a hybrid cgroup
# hierarchy; no systemd for events).
IMAGE=localhost/clusterenv-test:1
STORAGE=${CLUSTERENV_PODMAN_ROOT:-/var/lib/clusterenv/podman}
podman_cmd() {
    podman --root "$STORAGE/root" --runroot "$STORAGE/run" --runtime runc \
        --cgroup-manager cgroupfs --events-backend file "$@"
}
