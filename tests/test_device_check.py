"""benchmarks/device_check.py (run by hand on an NVIDIA machine) does not rot: here, against
a fake ``nvidia-smi`` listing two GPUs and a MIG slice, on a machine whose torch sees none,
it runs every case and reports each disagreement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.available import require_modules

ROOT = Path(__file__).parents[1]
LISTING = """\
GPU 0: NVIDIA H200 (UUID: GPU-1d2c3b4a-0000-1111-2222-333344445555)
  MIG 1g.18gb     Device  0: (UUID: MIG-9f8e7d6c-0000-1111-2222-333344445555)
GPU 1: NVIDIA H200 (UUID: GPU-5e6f7a8b-0000-1111-2222-333344445555)
"""


def test_the_device_check_runs_every_case(tmp_path: Path) -> None:
    require_modules("torch")  # the check compares clusterenv with torch.cuda
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ncat <<'END'\n{LISTING}END\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{smi.parent}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    script = ROOT / "benchmarks" / "device_check.py"
    result = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads((tmp_path / "device-check.json").read_text())
    assert set(report["cases"]) >= {"unset", "index-0", "reversed", "gpu-uuid", "mig-uuid"}
    assert report["cases"]["mig-uuid"]["CUDA_VISIBLE_DEVICES"].startswith("MIG-")
    # The probe falls back to (the fake) nvidia-smi: 2 GPUs, as listed; torch sees none.
    assert report["probe"]["devices"] == ["0", "1"]
    assert "unset: clusterenv 2 != torch 0" in report["problems"]
    assert result.returncode == 1
