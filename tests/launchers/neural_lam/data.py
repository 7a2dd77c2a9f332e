"""A tiny synthetic neural-lam setup, made without network access.

A 72 x 72 grid (the mdp datastore masks a 30-point boundary, so each side must exceed 60
points or the loss is NaN), 40 three-hourly times, two state fields, one forcing, one
static field; an mllam-data-prep datastore config, neural-lam's config.yaml, and a
one-level graph from ``neural_lam.create_graph_with_wmg``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

GRID = 72
TIMES = pd.date_range("2024-01-01T00:00", periods=40, freq="3h")

DATASTORE = """\
schema_version: v0.5.0
dataset_version: v0.1.0
output:
  variables:
    static: [grid_index, static_feature]
    state: [time, grid_index, state_feature]
    forcing: [time, grid_index, forcing_feature]
  coord_ranges:
    time: {{start: 2024-01-01T00:00, end: 2024-01-05T21:00, step: PT3H}}
  chunking:
    time: 1
  splitting:
    dim: time
    splits:
      train:
        start: 2024-01-01T00:00
        end: 2024-01-03T00:00
        compute_statistics:
          ops: [mean, std, diff_mean, diff_std]
          dims: [grid_index, time]
      val: {{start: 2024-01-03T03:00, end: 2024-01-04T00:00}}
      test: {{start: 2024-01-04T03:00, end: 2024-01-05T21:00}}
inputs:
  state:
    path: {root}/state.zarr
    dims: [time, x, y]
    variables: [t2m, u10]
    dim_mapping:
      time: {{method: rename, dim: time}}
      grid_index: {{method: stack, dims: [x, y]}}
      state_feature: {{method: stack_variables_by_var_name, name_format: "{{var_name}}"}}
    target_output_variable: state
  forcing:
    path: {root}/forcing.zarr
    dims: [time, x, y]
    variables: [swavr0m]
    dim_mapping:
      time: {{method: rename, dim: time}}
      grid_index: {{method: stack, dims: [x, y]}}
      forcing_feature: {{method: stack_variables_by_var_name, name_format: "{{var_name}}"}}
    target_output_variable: forcing
  static:
    path: {root}/static.zarr
    dims: [x, y]
    variables: [lsm]
    dim_mapping:
      grid_index: {{method: stack, dims: [x, y]}}
      static_feature: {{method: stack_variables_by_var_name, name_format: "{{var_name}}"}}
    target_output_variable: static
extra:
  projection:
    class_name: LambertConformal
    kwargs:
      central_longitude: 25.0
      central_latitude: 56.7
      standard_parallels: [56.7, 56.7]
"""


def make(root: Path) -> Path:
    """Write data, configs and graph under ``root``; returns neural-lam's config path."""
    rng = np.random.default_rng(0)
    coords = {"x": np.arange(GRID) * 2500.0, "y": np.arange(GRID) * 2500.0}
    timed = {"time": TIMES, **coords}

    def field(*shape: int) -> np.ndarray:
        return rng.normal(size=shape).astype("float32")

    shape = (len(TIMES), GRID, GRID)
    state = {name: (("time", "x", "y"), field(*shape)) for name in ("t2m", "u10")}
    xr.Dataset(state, coords=timed).to_zarr(root / "state.zarr", mode="w")
    forcing = {"swavr0m": (("time", "x", "y"), field(*shape))}
    xr.Dataset(forcing, coords=timed).to_zarr(root / "forcing.zarr", mode="w")
    static = {"lsm": (("x", "y"), field(GRID, GRID))}
    xr.Dataset(static, coords=coords).to_zarr(root / "static.zarr", mode="w")
    (root / "datastore.yaml").write_text(DATASTORE.format(root=root))
    config = root / "config.yaml"
    config.write_text("datastore:\n  kind: mdp\n  config_path: datastore.yaml\n")
    # Builds the datastore's zarr too: done once here, not by concurrent ranks later.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "neural_lam.create_graph_with_wmg",
            "--config_path",
            str(config),
            "--name",
            "1level",
            "--archetype",
            "keisler",
        ],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=root,
    )
    return config


if __name__ == "__main__":
    print(make(Path(sys.argv[1]).resolve()))
