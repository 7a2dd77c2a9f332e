"""A JAX program (CPU, gloo collectives) initialised by ``clusterenv.jax``: a cross-process
sum of ``process_index + 1``, recorded per process beside what clusterenv detected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils

import clusterenv
import clusterenv.jax


def main(out: Path) -> None:
    spec = clusterenv.jax.initialize()  # before any computation, as JAX requires
    index = jax.process_index()
    total = int(multihost_utils.process_allgather(jnp.array([index + 1])).sum())
    record = {
        "jax": {"process_index": index, "process_count": jax.process_count(), "sum": total},
        "spec": json.loads(spec.model_dump_json()),
        "preflight": [f.id for f in clusterenv.preflight(spec)],  # a correct launch: nothing
    }
    (out / f"{index}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
