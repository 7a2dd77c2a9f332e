"""Session fixtures for the real launchers. Outside CI a missing launcher skips the test
with the reason; with CI=true it fails the run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.available import unavailable

UP = Path(__file__).with_name("slurm-up.sh")
INSTALL = Path(__file__).with_name("install.sh")

# The end-to-end neural-lam runs need neural-lam, which only `nox -s neural-lam` installs.
collect_ignore = [] if importlib.util.find_spec("neural_lam") else ["neural_lam"]


def _install_debian_packages() -> None:
    if os.geteuid() == 0:
        subprocess.run(["bash", str(INSTALL)], capture_output=True, timeout=900, check=False)


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """The loopback cluster of slurm-up.sh (reused when it is already up)."""
    if os.geteuid() != 0:
        unavailable("the loopback Slurm cluster needs root (tests/launchers/slurm-up.sh)")
    result = subprocess.run(["bash", str(UP)], capture_output=True, text=True, timeout=900)
    if result.returncode:
        unavailable(f"tests/launchers/slurm-up.sh failed:\n{result.stderr[-4000:]}")


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
