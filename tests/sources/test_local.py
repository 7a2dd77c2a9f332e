"""A plain machine: no scheduler and no launcher."""

from __future__ import annotations

from clusterenv import detect_environment


def test_local_probe_only_without_cuda_visible_devices() -> None:
    def probe() -> tuple[str, ...]:
        raise AssertionError("probed although CUDA_VISIBLE_DEVICES is set")

    assert detect_environment({"CUDA_VISIBLE_DEVICES": "0"}, gpu_probe=probe).gpus_per_node == 1
    spec = detect_environment({}, gpu_probe=lambda: ("0", "1", "2", "3"))
    assert (spec.source.value, spec.role.value, spec.world_size, spec.master_addr) == (
        "local",
        "standalone",
        4,
        "127.0.0.1",
    )


def test_local_main_address_overrides() -> None:
    spec = detect_environment({"MASTER_ADDR": "node7", "MASTER_PORT": "1234"}, gpu_probe=lambda: ())
    assert (spec.master_addr, spec.master_port) == ("node7", 1234)
