"""A tiny synthetic anemoi setup, made without network access (../shared/notes/anemoi.md).

A CF-style netCDF made with numpy — a global 5-degree grid (36 x 72 = 2 592 points), 80
six-hourly dates, seven fields — becomes an anemoi dataset with ``anemoi-datasets create``
(joined with computed forcings), and its graph comes from ``anemoi-graphs create`` (data
nodes, 162 hidden TriNodes, the multi-scale encoder/processor/decoder edges of anemoi's
packaged ``graph: multi_scale``, resolved).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

FORCINGS = "cos_latitude, sin_latitude, cos_longitude, sin_longitude, cos_julian_day, "
FORCINGS += "sin_julian_day, cos_local_time, sin_local_time, insolation"
RECIPE = f"""\
dates: {{start: 2020-01-01T00:00:00, end: 2020-01-20T18:00:00, frequency: 6h}}
input:
  join:
    - netcdf: {{path: data.nc}}
    - forcings:
        template: ${{input.join.0.netcdf}}
        param: [{FORCINGS}]
statistics: {{end: 2020-01-15T18:00:00}}
"""
GRAPH = """\
nodes:
  data:
    node_builder: {_target_: anemoi.graphs.nodes.AnemoiDatasetNodes, dataset: data.zarr}
    attributes:
      area_weight:
        _target_: anemoi.graphs.nodes.attributes.SphericalAreaWeights
        norm: unit-max
        fill_value: 0
  hidden:
    node_builder: {_target_: anemoi.graphs.nodes.TriNodes, resolution: 2}
edges:
- source_name: data
  target_name: hidden
  edge_builders: [{_target_: anemoi.graphs.edges.CutOffEdges, cutoff_factor: 0.6}]
  attributes: &edges
    edge_length: {_target_: anemoi.graphs.edges.attributes.EdgeLength, norm: unit-std}
    edge_dirs: {_target_: anemoi.graphs.edges.attributes.EdgeDirection, norm: unit-std}
- source_name: hidden
  target_name: hidden
  edge_builders:
  - {_target_: anemoi.graphs.edges.MultiScaleEdges, x_hops: 1, scale_resolutions: 2}
  attributes: *edges
- source_name: hidden
  target_name: data
  edge_builders: [{_target_: anemoi.graphs.edges.KNNEdges, num_nearest_neighbours: 3}]
  attributes: *edges
"""


def _netcdf(path: Path) -> None:
    lat, lon = np.arange(87.5, -90, -5.0), np.arange(0, 360, 5.0)
    times = pd.date_range("2020-01-01", periods=80, freq="6h")
    rng = np.random.default_rng(0)
    shape = (len(times), len(lat), len(lon))

    def field(mean: float, spread: float) -> np.ndarray:
        values: np.ndarray = (mean + spread * rng.standard_normal(shape)).astype("float32")
        return values

    def static(values: np.ndarray) -> np.ndarray:
        constant: np.ndarray = np.broadcast_to(values.astype("float32"), shape).copy()
        return constant

    dims = ("time", "latitude", "longitude")
    fields = {
        "2t": (field(280, 5), "K"),
        "msl": (field(101000, 500), "Pa"),
        "10u": (field(0, 5), "m s**-1"),
        "10v": (field(0, 5), "m s**-1"),
        "tp": (np.abs(field(0, 0.001)), "m"),
        "lsm": (static(rng.random(shape[1:]) > 0.7), "1"),
        "z": (static(rng.random(shape[1:]) * 5000), "m**2 s**-2"),
    }
    coords = {
        "time": times,
        "latitude": ("latitude", lat, {"units": "degrees_north", "standard_name": "latitude"}),
        "longitude": ("longitude", lon, {"units": "degrees_east", "standard_name": "longitude"}),
    }
    variables = {name: (dims, data, {"units": units}) for name, (data, units) in fields.items()}
    xr.Dataset(variables, coords=coords).to_netcdf(path)


def make(root: Path) -> tuple[Path, Path]:
    """The dataset and the graph, under ``root``."""
    _netcdf(root / "data.nc")
    (root / "recipe.yaml").write_text(RECIPE)
    (root / "graph.yaml").write_text(GRAPH)
    tools = Path(sys.executable).parent
    for command in (
        [str(tools / "anemoi-datasets"), "create", "recipe.yaml", "data.zarr"],
        [str(tools / "anemoi-graphs"), "create", "graph.yaml", "graph.pt"],
    ):
        subprocess.run(command, cwd=root, check=True, capture_output=True, timeout=300)
    return root / "data.zarr", root / "graph.pt"
