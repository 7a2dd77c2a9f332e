"""The NVIDIA device check of issue 19: clusterenv's GPU answers against the driver's.

Run by hand on a machine with NVIDIA GPUs (the project's lent device machine cannot reach
PyPI, so carry clusterenv's dependencies, e.g. ``pip install --target .deps pydantic
nvidia-ml-py``, and run ``PYTHONPATH=.:.deps python3 benchmarks/device_check.py --out $OUT``).
For each ``CUDA_VISIBLE_DEVICES`` case — unset, each index, the first two reversed, a GPU
UUID, a MIG UUID where MIG is on, empty, ``-1``, a repeat — a fresh process reports
clusterenv's spec, and where installed, ``torch.cuda.device_count()`` and NVML's count; the
probe's inventory is compared with ``nvidia-smi -L``. Writes ``device-check.json``; exits 1
on any disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, clusterenv
spec = clusterenv.detect_environment()
row = {"clusterenv": len(spec.visible_devices), "vendor": spec.gpu_vendor}
row["ids"] = spec.visible_devices
try:
    import torch
    row["torch"] = torch.cuda.device_count()
except ImportError:
    pass
print(json.dumps(row, default=str))
"""


def _smi() -> tuple[list[str], list[str]]:
    """GPU and MIG UUIDs that ``nvidia-smi -L`` lists."""
    text = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    return re.findall(r"UUID: (GPU-[^)\s]+)", text), re.findall(r"UUID: (MIG-[^)\s]+)", text)


def _cases(gpus: list[str], migs: list[str]) -> dict[str, str | None]:
    cases: dict[str, str | None] = {"unset": None, "empty": "", "minus-one": "-1", "repeat": "0,0"}
    cases |= {f"index-{i}": str(i) for i in range(len(gpus) + 1)}  # one past the last
    if len(gpus) > 1:
        cases["reversed"] = "1,0"
    if gpus:
        cases["gpu-uuid"] = gpus[0]
    if migs:
        cases["mig-uuid"] = migs[0]
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    out = parser.parse_args().out
    from clusterenv._node.gpu_probe import probe_gpus  # noqa: PLC0415 - after PYTHONPATH is set

    if shutil.which("nvidia-smi") is None:
        print("device_check: no nvidia-smi here: run it on a machine with NVIDIA GPUs")
        return 2
    gpus, migs = _smi()
    found = probe_gpus()
    report: dict[str, object] = {"nvidia-smi": gpus, "mig": migs, "probe": found.model_dump()}
    problems = [] if len(found.devices) == len(gpus) else ["probe count != nvidia-smi -L"]
    rows = {}
    for name, value in _cases(gpus, migs).items():
        env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
        if value is not None:
            env["CUDA_VISIBLE_DEVICES"] = value
        child = [sys.executable, "-c", CHILD]
        result = subprocess.run(child, env=env, capture_output=True, text=True, timeout=120)
        row = json.loads(result.stdout) if result.returncode == 0 else {"error": result.stderr}
        rows[name] = {"CUDA_VISIBLE_DEVICES": value, **row}
        if "torch" in row and row["torch"] != row.get("clusterenv"):
            problems.append(f"{name}: clusterenv {row.get('clusterenv')} != torch {row['torch']}")
    report |= {"cases": rows, "problems": problems}
    out.mkdir(parents=True, exist_ok=True)
    (out / "device-check.json").write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({"problems": problems}, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
