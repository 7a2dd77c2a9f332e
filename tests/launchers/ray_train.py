"""Ray Train's ``TorchTrainer`` with two CPU workers on a local Ray cluster, each writing
report.py's record (with torch.distributed's truth: Ray made the process group) into the
folder given as the first argument. The cluster is this process's own: it ends with it."""

from __future__ import annotations

import os
import sys

import ray
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(out: str) -> None:
    def worker() -> None:
        sys.path.insert(0, REPOSITORY)
        from tests.launchers.report import record  # noqa: PLC0415 - inside the Ray worker

        record(out, truth=True)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        TorchTrainer(worker, scaling_config=ScalingConfig(num_workers=2)).fit()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
