"""Lightning adapter: ``Trainer``/``Fabric`` keyword arguments that agree with the allocation.

A training script (neural-lam's ``train_model.py`` is the model) does::

    import clusterenv.lightning as cl

    parser = argparse.ArgumentParser()
    cl.add_trainer_args(parser)  # --num_nodes, --devices (default: auto)
    args = parser.parse_args()
    trainer = pl.Trainer(**cl.trainer_kwargs(args), max_epochs=10)
    cl.rank_zero_print("starting")  # once per job

``trainer_kwargs`` returns ``num_nodes``, ``devices``, ``accelerator``, ``strategy``,
``use_distributed_sampler`` and ``plugins=[environment]``; ``num_workers()`` suggests a
DataLoader's workers from the CPUs each rank may use. The environment is a Lightning
``ClusterEnvironment`` answering ranks, world size and main address from clusterenv's
spec, so Lightning's own detection (regex main host, job names ``bash``/``interactive``,
``--ntasks`` refused) never runs. For Slurm it is a subclass of Lightning's
``SLURMEnvironment``: Lightning installs its auto-requeue handler (``SIGUSR1`` → save an
HPC checkpoint, ``scontrol requeue``) only for such instances.

``lightning`` and ``pytorch_lightning`` have separate class trees: a plugin must subclass
the ``ClusterEnvironment`` of the package whose Trainer receives it (see
:func:`resolve_package`). Importing this module imports neither; the functions that build
an environment import the one chosen.
"""

from clusterenv._adapters.rank_zero import is_rank_zero, rank_zero_only, rank_zero_print
from clusterenv.config import accelerator, num_workers
from clusterenv.lightning._environment import Package, cluster_environment, resolve_package
from clusterenv.lightning._kwargs import add_trainer_args, fabric_kwargs, trainer_kwargs
from clusterenv.lightning._run import follow_allocation, run_script

__all__ = [
    "Package",
    "accelerator",
    "add_trainer_args",
    "cluster_environment",
    "fabric_kwargs",
    "follow_allocation",
    "is_rank_zero",
    "num_workers",
    "rank_zero_only",
    "rank_zero_print",
    "resolve_package",
    "run_script",
    "trainer_kwargs",
]
