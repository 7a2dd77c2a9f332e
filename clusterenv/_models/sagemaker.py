"""Amazon SageMaker training jobs: the toolkit's variables on each host."""

from __future__ import annotations

import json

from clusterenv._models.launch import Launch, check, positive, rank_of

__all__ = ["examples", "sagemaker_env"]


def sagemaker_env(
    hosts: int = 1,
    host: int = 0,
    *,
    gpus: int = 0,
    instance_type: str = "ml.p4d.24xlarge",
    job: str = "train-2026-12-03-21-00-00-000",
) -> Launch:
    """Host ``algo-<host+1>`` of a training job on ``hosts`` instances with ``gpus`` GPUs
    each, as the SageMaker training toolkit exports them (``Environment.to_env_vars`` of
    ``sagemaker-training`` 5.1.4): ``SM_HOSTS`` and ``SM_RESOURCE_CONFIG`` as JSON. SageMaker
    sets no ``CUDA_VISIBLE_DEVICES``: pass the GPUs to the GPU probe."""
    positive("sagemaker_env", hosts=hosts)
    rank_of("sagemaker_env", host, hosts)
    check("sagemaker_env", gpus >= 0, f"gpus={gpus} is negative", "pass gpus >= 0")
    names = [f"algo-{i}" for i in range(1, hosts + 1)]
    group = "homogeneousCluster"
    config = {
        "current_host": names[host],
        "current_instance_type": instance_type,
        "current_group_name": group,
        "hosts": names,
        "instance_groups": [
            {"instance_group_name": group, "instance_type": instance_type, "hosts": names}
        ],
        "network_interface_name": "eth0",
    }
    return Launch(
        {
            "SM_HOSTS": json.dumps(names),
            "SM_CURRENT_HOST": names[host],
            "SM_CURRENT_INSTANCE_TYPE": instance_type,
            "SM_CURRENT_INSTANCE_GROUP": group,
            "SM_DISTRIBUTION_INSTANCE_GROUPS": json.dumps([group]),
            "SM_IS_HETERO": "false",
            "SM_NETWORK_INTERFACE_NAME": "eth0",
            "SM_NUM_GPUS": str(gpus),
            "SM_NUM_CPUS": "96",
            "SM_RESOURCE_CONFIG": json.dumps(config),
            "TRAINING_JOB_NAME": job,
        }
    )


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [sagemaker_env(2, 1, gpus=2), sagemaker_env(1)]
