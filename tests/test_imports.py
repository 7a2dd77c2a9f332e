"""`import clusterenv` and detection load only what detection needs (issue 32): the probe's
sockets, hmac and json, subprocess, asyncio and platform load on first use, if pydantic
itself does not bring them."""

from __future__ import annotations

import json
import subprocess
import sys

import clusterenv

# In a fresh interpreter: the modules a frozen pydantic model costs anyway (the floor), then
# what `import clusterenv` and one detection add to them.
SCRIPT = """
import json, sys
import pydantic
class Floor(pydantic.BaseModel, frozen=True):
    a: int
Floor(a=1)
floor = set(sys.modules)
import clusterenv
clusterenv.detect_environment({"CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_ID": "1",
    "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1"})
print(json.dumps(sorted(set(sys.modules) - floor)))
"""
HEAVY = {"socket", "hmac", "json", "subprocess", "asyncio", "platform", "secrets", "ssl"}


def _added() -> set[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_detection_loads_no_probe_no_subprocess_no_json() -> None:
    added = _added()
    assert not {name.split(".")[0] for name in added} & HEAVY
    assert not [name for name in added if name.startswith(("clusterenv._probe", "clusterenv._cli"))]
    assert "clusterenv.sources.slurm" in added


def test_the_lazy_names_are_the_public_ones() -> None:
    assert clusterenv.probe.__module__ == "clusterenv._probe"
    assert clusterenv.ProbeReport.__name__ == "ProbeReport"
    assert {"probe", "ProbeReport"} <= set(dir(clusterenv)) & set(clusterenv.__all__)


def test_inspect_runs_without_the_probe() -> None:
    """Only `clusterenv probe` loads the probe (its protocol's models cost `inspect` 8 ms),
    only `clusterenv check` the job-script reader."""
    script = (
        "import contextlib, io, sys\n"
        "from clusterenv._cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['inspect', '--json'])\n"
        "print(sorted(name for name in sys.modules if name.startswith(('clusterenv._probe', "
        "'clusterenv._check'))))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"


def test_probe_error_is_importable_from_exceptions() -> None:
    """Issue 47: every error is importable from clusterenv.exceptions, ProbeError lazily."""
    from clusterenv.exceptions import ProbeError  # noqa: PLC0415

    assert ProbeError is clusterenv.ProbeError
