"""The probe at scale: N ranks against a real rank-0 `clusterenv probe` process started
under `ulimit -n 1024` (soft and hard: rank 0 cannot raise it).

    python benchmarks/probe_scale.py [--ranks 1000 4000 10000] [--output PATH]

The other ranks run the real client code (``clusterenv.probe``) in threads, spread over a
few processes. Reports the wall time until every rank has its verdict, rank 0's peak
memory (VmHWM) and its most open files (sampled), and that every rank was OK.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from clusterenv import ProbeError, detect_environment, probe
from clusterenv.testing import torchrun_env

PROCESSES = 8
TIMEOUT = 60.0


def _env(world: int, rank: int, port: int) -> dict[str, str]:
    # One node of `world` ranks (torchrun's shape); the probe listens on port + 1.
    return dict(torchrun_env(1, world, rank, master_addr="127.0.0.1", master_port=port - 1))


def _clients(world: int, ranks: list[int], port: int) -> int:
    """Probe ``ranks`` in threads of this process; the number that were OK."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    threading.stack_size(256 * 1024)
    ok = []

    def one(rank: int) -> None:
        env = _env(world, rank, port)
        try:
            probe(detect_environment(env, gpu_probe=tuple), timeout=TIMEOUT, env=env)
            ok.append(rank)
        except ProbeError as error:
            print(f"rank {rank}: {error}"[:300], file=sys.stderr)

    threads = [threading.Thread(target=one, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(ok)


def _free_port() -> int:
    """A free port below Linux's ephemeral range (32768-60999), as clusterenv's job ports
    are: a port in it can be taken by the ranks' own outgoing connections."""
    for port in random.sample(range(20000, 32000), 200):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port in 20000-32000")


def run(world: int) -> dict[str, object]:
    port = _free_port()
    env = {"PATH": os.environ["PATH"], **_env(world, 0, port)}
    command = (
        f"ulimit -n 1024; exec {sys.executable} -m clusterenv probe --json --timeout {TIMEOUT:g}"
    )
    started = time.perf_counter()
    rank0 = subprocess.Popen(["bash", "-c", command], env=env, stdout=subprocess.PIPE, text=True)
    peak = {"files": 0, "kib": 0}

    def sample() -> None:
        while rank0.poll() is None:
            try:
                files = len(os.listdir(f"/proc/{rank0.pid}/fd"))
                status = Path(f"/proc/{rank0.pid}/status").read_text()
                peak["files"] = max(peak["files"], files)
                peak["kib"] = int(status.split("VmHWM:")[1].split()[0])
            except (OSError, IndexError):
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    others = list(range(1, world))
    with ProcessPoolExecutor(PROCESSES) as pool:
        parts = [others[i::PROCESSES] for i in range(PROCESSES)]
        ok = sum(pool.map(_clients, [world] * PROCESSES, parts, [port] * PROCESSES))
    out, _ = rank0.communicate(timeout=TIMEOUT)
    wall = time.perf_counter() - started
    sampler.join()
    verdict = json.loads(out) if out.strip() else {"ok": False}
    return {
        "ranks": world,
        "wall_s": round(wall, 2),
        "rank0_peak_mib": round(peak["kib"] / 1024, 1),
        "rank0_peak_files": peak["files"],
        "all_ok": bool(verdict["ok"]) and ok == world - 1 and rank0.returncode == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000, 4000, 10000])
    parser.add_argument("--output", type=Path)
    options = parser.parse_args()
    lines = [
        "| ranks | wall s | rank 0 peak MiB | rank 0 most open files | every rank OK |",
        "|---:|---:|---:|---:|---|",
    ]
    for world in options.ranks:
        row = run(world)
        lines.append(
            f"| {row['ranks']} | {row['wall_s']} | {row['rank0_peak_mib']} | "
            f"{row['rank0_peak_files']} | {'yes' if row['all_ok'] else 'NO'} |"
        )
        print(lines[-1], flush=True)
    if options.output:
        header = (
            "# Probe at scale\n\nWritten by `nox -s bench` (`benchmarks/probe_scale.py`): N "
            "ranks against a real rank-0 `clusterenv probe` process under `ulimit -n 1024`; "
            "the other ranks run the real client code in threads of 8 processes, on the "
            "2-core development machine.\n\n"
        )
        options.output.write_text(header + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
