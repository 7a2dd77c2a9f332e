"""The one result type: :class:`ResourceSpec`, validated once when it is built."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

__all__ = ["Accelerator", "Fields", "GpuInventory", "GpuVendor", "ResourceSpec", "Role", "Source"]


class Source(str, Enum):
    """Where the description came from: the scheduler or launcher that was detected.

    This is the registry of sources: each member names its module in
    :mod:`clusterenv.sources`. The detection priority is derived from each source's kind
    (:class:`clusterenv.sources.Kind`): launchers (torchrun, mpirun) first, since inside an
    allocation it is they that started this process, then the HPC schedulers, the cloud
    platforms (one process per node), the generic ``RANK``/``WORLD_SIZE`` contracts
    (Kubeflow's, the bare ``env://``) and the plain machine, which always matches. Within a
    kind, the declaration order here decides.
    """

    TORCHELASTIC = "torchelastic"
    PALS = "pals"
    MPI = "mpi"
    SLURM = "slurm"
    FLUX = "flux"
    LSF = "lsf"
    PBS = "pbs"
    GRIDENGINE = "gridengine"
    SAGEMAKER = "sagemaker"
    VERTEX = "vertex"
    AWSBATCH = "awsbatch"
    SKYPILOT = "skypilot"
    VOLCANO = "volcano"
    KUBERNETES = "kubernetes"
    KUBEFLOW = "kubeflow"
    ENV = "env"
    LOCAL = "local"


class Role(str, Enum):
    """What this process is within the job.

    Only ``rank`` processes are one of ``world_size`` workers; the others describe an
    allocation from outside it, and the ranks still have to be started (``srun``; on a
    ``node``, torchrun or the framework on every node).
    """

    RANK = "rank"  # one task of a started launch: an srun step, a torchrun worker, an MPI rank
    BATCH = "batch"  # the body of an sbatch script (Slurm's batch step), on the first node
    SHELL = "shell"  # the shell that salloc opened on the submit host
    STANDALONE = "standalone"  # no launcher; a framework may spawn the local ranks itself
    #: The one process a platform starts on each node (a SageMaker host, a Kubeflow pod):
    #: torchrun, or the framework itself (Lightning), starts this node's ranks.
    NODE = "node"


class Accelerator(str, Enum):
    GPU = "gpu"
    CPU = "cpu"


class GpuVendor(str, Enum):
    """Whose GPUs these are: which runtime, variables and probe apply.

    ``nvidia`` and ``amd`` are both ``torch.cuda`` (PyTorch's ROCm build answers it) and
    Lightning's ``gpu``/``cuda`` accelerator; ``intel`` is ``torch.xpu``.
    """

    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"


class GpuInventory(BaseModel):
    """What a GPU probe found on this machine: the vendor and the device ids its runtime
    shows when no visible-devices variable is set (``"0"``, ``"1"``; Intel tiles ``"0.1"``),
    and where cheap to read, the models and the driver's version (for reports)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    vendor: GpuVendor | None = None
    devices: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    driver: str | None = None


class Fields(TypedDict, total=False):
    """What a source reads: the fields of :class:`~clusterenv.ResourceSpec`, typed, and
    ``port_seed``: where the job id's leading number does not tell this launch from others
    on the node (the tasks of an array job share it), the id its port is spread from."""

    source: Source
    role: Role
    num_nodes: int
    devices_per_node: int
    world_size: int
    global_rank: int
    local_rank: int
    node_rank: int
    master_addr: str
    master_port: int
    job_id: str | None
    hostnames: tuple[str, ...]
    accelerator: Accelerator
    gpus_per_node: int
    visible_devices: tuple[str, ...]
    gpu_vendor: GpuVendor | None
    cpus_per_rank: int | None
    port_seed: str


_Count = Annotated[int, Field(ge=1)]
_Index = Annotated[int, Field(ge=0)]


class ResourceSpec(BaseModel):
    """The resources of this process and its place in the job. Immutable.

    ``devices_per_node`` is the number of ranks on this process's node (the value for
    Lightning's ``devices``); ``gpus_per_node`` the GPUs allocated per node, 0 for none,
    and ``gpu_vendor`` whose they are (``None`` without GPUs, or where this process cannot
    see them: the salloc shell). ``cpus_per_rank`` is what each rank may use (the
    scheduler's grant, capped by this process's CPU affinity); ``None`` when unknown.
    ``hostnames`` is empty where the launcher does not name the nodes (torchrun, local).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source
    role: Role
    num_nodes: _Count
    devices_per_node: _Count
    world_size: _Count
    global_rank: _Index
    local_rank: _Index
    node_rank: _Index
    master_addr: Annotated[str, Field(min_length=1)]
    master_port: Annotated[int, Field(ge=1, le=65535)]
    job_id: str | None = None
    hostnames: tuple[str, ...] = ()
    accelerator: Accelerator
    gpus_per_node: _Index = 0
    visible_devices: tuple[str, ...] = ()
    gpu_vendor: GpuVendor | None = None
    cpus_per_rank: _Count | None = None

    @property
    def is_main_process(self) -> bool:
        """True on global rank 0, the process that should log, print and save."""
        return self.global_rank == 0

    @model_validator(mode="after")
    def _check_invariants(self, info: ValidationInfo) -> ResourceSpec:
        origins: dict[str, str] = (info.context or {}).get("origins", {})

        def show(field: str) -> str:
            origin = origins.get(field)
            return f"{field}={getattr(self, field)}" + (f" (from {origin})" if origin else "")

        def require(condition: bool, left: str, relation: str, right: str) -> None:
            if not condition:
                raise ValueError(f"{show(left)} must be {relation} {show(right)}")

        require(self.global_rank < self.world_size, "global_rank", "less than", "world_size")
        require(self.node_rank < self.num_nodes, "node_rank", "less than", "num_nodes")
        require(
            self.local_rank < self.devices_per_node, "local_rank", "less than", "devices_per_node"
        )
        require(self.num_nodes <= self.world_size, "num_nodes", "at most", "world_size")
        if self.hostnames and len(self.hostnames) != self.num_nodes:
            raise ValueError(
                f"{show('hostnames')} names {len(self.hostnames)} hosts, not {show('num_nodes')}"
            )
        if (self.accelerator is Accelerator.GPU) != (self.gpus_per_node > 0):
            raise ValueError(f"{show('accelerator')} contradicts {show('gpus_per_node')}")
        if self.gpu_vendor is not None and not self.gpus_per_node:
            raise ValueError(f"{show('gpu_vendor')} but {show('gpus_per_node')}")
        return self
