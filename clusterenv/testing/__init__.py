"""Environment mappings with the exact shape real launchers produce, for tests: the launch
models of :mod:`clusterenv._models`, exported unchanged.

Each builder returns the *whole* variable set one process of a real launch sees — the
same names, the same formats (``SLURM_TASKS_PER_NODE='4(x2)'``), the step variables next
to the job ones — and nothing a real launcher would not set. They are checked against
environments recorded from real Slurm 22.05 and torchrun (``tests/data/captures/`` of the
clusterenv repository): same names, same values except those that depend on the machine
(ports, pids, paths, uids, the submit host), and the same ``detect_environment()``.

    >>> from clusterenv import detect_environment
    >>> from clusterenv.testing import slurm_env
    >>> env = slurm_env(nodes=2, tasks_per_node=4, gpus_per_node=4, procid=5)
    >>> env["SLURM_STEP_TASKS_PER_NODE"], env["CUDA_VISIBLE_DEVICES"]
    ('4(x2)', '0,1,2,3')
    >>> spec = detect_environment(env)
    >>> spec.world_size, spec.node_rank, spec.local_rank
    (8, 1, 1)

``deepspeed_env`` and ``slurm_env(mpi="cray_shasta")`` are checked against real DeepSpeed
and ``srun --mpi=cray_shasta`` launches too. The builders of the sources proven from their
documentation (the proof table of the docs' *How detection works*) follow it: no real
launch of theirs runs here.

Every builder returns a :class:`Launch`: a ``dict`` of variables whose ``files`` hold
the host files PBS and LSF write (pass ``read_file=launch.read_file``).
Impossible parameters (no nodes, a rank outside the launch, a port above 65535) raise
:class:`~clusterenv.ClusterEnvError`.

Not modelled (pass the variables yourself): heterogeneous jobs, job arrays, steps on
fewer nodes than their job, ``srun --mpi=pmi2/pmix``, ``--distribution=arbitrary``, and MPI
launches over several hosts with Open MPI (MPICH's are).
"""

from clusterenv._models.awsbatch import awsbatch_env
from clusterenv._models.env import deepspeed_env, env_launch
from clusterenv._models.flux import flux_env
from clusterenv._models.gridengine import gridengine_env
from clusterenv._models.kubeflow import kubeflow_env
from clusterenv._models.kubernetes import kubernetes_env
from clusterenv._models.launch import Launch
from clusterenv._models.local import local_env
from clusterenv._models.lsf import lsf_env
from clusterenv._models.mpi import mpich_env, openmpi_env
from clusterenv._models.pals import pals_env
from clusterenv._models.pbs import pbs_env
from clusterenv._models.sagemaker import sagemaker_env
from clusterenv._models.skypilot import skypilot_env
from clusterenv._models.slurm import slurm_env, task_counts
from clusterenv._models.torchelastic import torchrun_env
from clusterenv._models.vertex import vertex_env
from clusterenv._models.volcano import volcano_env

__all__ = [
    "Launch",
    "awsbatch_env",
    "deepspeed_env",
    "env_launch",
    "flux_env",
    "gridengine_env",
    "kubeflow_env",
    "kubernetes_env",
    "local_env",
    "lsf_env",
    "mpich_env",
    "openmpi_env",
    "pals_env",
    "pbs_env",
    "sagemaker_env",
    "skypilot_env",
    "slurm_env",
    "task_counts",
    "torchrun_env",
    "vertex_env",
    "volcano_env",
]
