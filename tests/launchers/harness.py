"""Start real launches, collect what every task saw, and check it against ground truth.

The ground truth of a launch is taken from the launch as a whole, not from the variables
clusterenv parses: how many tasks reported, on which node (``SLURMD_NODENAME``), what
``scontrol show hostnames`` makes of the node list, which GPUs Slurm bound. The same
checks run on live launches and on the captures replayed from tests/data/captures/.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterenv import detect_environment
from tests.launchers.capture import scrub, scrub_text

REPORT = Path(__file__).with_name("report.py")
ON_HOST = Path(__file__).with_name("on-host.sh")
FIT = Path(__file__).with_name("fit.py")
CAPTURES = Path(__file__).parents[1] / "data" / "captures"
Record = dict[str, Any]  # {"env": {...}, "spec": {...}} or {"env": ..., "error": ...}


@dataclass(frozen=True)
class Slurm:
    """One of the suite's real clusters: the host's Slurm (Debian 12: 22.05), or one in a
    chroot whose commands then run inside it (Slurm 24.11 of slurm24-up.sh, the Grid Engine
    of gridengine-up.sh)."""

    version: str
    root: str | None = None
    #: What the clients need besides a clean environment (Grid Engine's cell and ports).
    env: tuple[str, ...] = ()
    #: The emulated host (on-host.sh) the commands run on: the cluster of slurm-net-up.sh.
    host: str | None = None

    def argv(self, line: str, workdir: Path) -> list[str]:
        """How to run the shell ``line`` in ``workdir`` against this cluster."""
        if self.root is None:
            return [*self._on(), *(("env", *self.env) if self.env else ()), "bash", "-c", line]
        clean = ["/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
        clean += self.env
        script = f"cd {shlex.quote(str(workdir))} && {line}"
        return [*self._on(), *clean, "HOME=/root", "bash", "-c", script]

    def command(self, *args: str) -> list[str]:
        """A Slurm client command (``scontrol``, ``srun --version``) against this cluster."""
        return [*self._on(), *(("/usr/bin/env", *self.env) if self.env else ()), *args]

    def _on(self) -> list[str]:
        """Where its commands run: on an emulated host, in the chroot, or both."""
        chroot = ["--root", self.root] if self.root else []
        if self.host is not None:
            return [str(ON_HOST), *chroot, self.host]
        return ["chroot", self.root] if self.root else []


HOST_SLURM = Slurm("22.05")
#: Where each release's cluster across the emulated hosts keeps its slurm.conf, as its
#: commands see it (slurm-net-up.sh).
NET_SLURM_CONF = {
    "22.05": "/tmp/clusterenv-slurm-net/slurm.conf",
    "24.11": "/var/lib/clusterenv-slurm-net/slurm.conf",
}


def across_hosts(version: str, root: str | None) -> Slurm:
    """The cluster of ``version`` across the emulated hosts n1..n3, used from its head."""
    return Slurm(version, root, env=(f"SLURM_CONF={NET_SLURM_CONF[version]}",), host="head")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def launch(
    command: str, workdir: Path, timeout: float = 120, slurm: Slurm = HOST_SLURM
) -> list[Record]:
    """Run ``command`` (``{task}`` = the report script) in a clean environment."""
    files = launch_files(command, workdir, timeout, slurm)
    return [json.loads(path.read_text()) for path in files]


def run(
    command: str, workdir: Path, timeout: float = 120, slurm: Slurm = HOST_SLURM
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with bash in a clean environment, like a fresh login, against
    ``slurm``'s cluster where it uses Slurm.

    Placeholders: ``{task}`` (report.py into ``{out}``), ``{python}``, ``{report}``,
    ``{fit}`` (fit.py), ``{out}`` (``workdir/records``) and ``{port}`` (a free TCP port).
    """
    out = workdir / "records"
    out.mkdir(parents=True, exist_ok=True)
    task = f"{sys.executable} {REPORT} {out}"
    line = command.format(
        task=task, python=sys.executable, report=REPORT, fit=FIT, out=out, port=free_port()
    )
    # Nothing of the test process's own environment leaks into the job.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    return subprocess.run(
        slurm.argv(line, workdir),
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def launch_files(
    command: str, workdir: Path, timeout: float = 120, slurm: Slurm = HOST_SLURM
) -> list[Path]:
    """Run ``command`` (see :func:`run`); the files its tasks wrote into ``{out}``."""
    result = run(command, workdir, timeout, slurm)
    if result.returncode:
        raise AssertionError(
            f"{result.args[-1]!r} exited {result.returncode}:\n{result.stderr[-3000:]}"
        )
    files = sorted((workdir / "records").glob("*.json"))
    if not files:
        raise AssertionError(f"{result.args[-1]!r} started no task:\n{result.stderr[-3000:]}")
    return files


def scontrol_hostnames(nodelist: str, slurm: Slurm = HOST_SLURM) -> list[str] | None:
    """``scontrol show hostnames``; ``None`` where it rejects the list (22.05 exits 0 after
    "Invalid hostlist", so a rejected list is one that prints no host)."""
    result = subprocess.run(
        slurm.command("scontrol", "show", "hostnames", nodelist),
        capture_output=True,
        text=True,
        timeout=30,
    )
    hosts = result.stdout.split()
    return hosts if result.returncode == 0 and hosts else None


def slurm_version(slurm: Slurm = HOST_SLURM) -> str:
    command = slurm.command("srun", "--version")
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()


def _agree(specs: list[Record], *fields: str) -> None:
    for field in fields:
        values = {json.dumps(spec[field]) for spec in specs}
        assert len(values) == 1, f"tasks disagree on {field}: {values}"


def check_slurm(records: list[Record], hostnames_of: Callable[[str], list[str]]) -> None:
    """Every group of tasks (one job step) against the ground truth of that step."""
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        assert "spec" in record, f"detection failed in a real task: {record}"
        env = record["env"]
        groups[(env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID", "batch-or-shell"))].append(record)
    for group in groups.values():
        specs = [record["spec"] for record in group]
        envs = [record["env"] for record in group]
        assert {spec["source"] for spec in specs} == {"slurm"}
        assert {spec["job_id"] for spec in specs} == {envs[0]["SLURM_JOB_ID"]}
        if specs[0]["role"] != "rank":
            _check_allocation(specs, envs, hostnames_of)
            continue
        _agree(specs, "world_size", "num_nodes", "hostnames", "master_addr", "master_port")
        spec = specs[0]
        assert spec["world_size"] == len(group), "world size is not the number of tasks started"
        assert sorted(s["global_rank"] for s in specs) == list(range(len(group)))
        nodes = Counter(env["SLURMD_NODENAME"] for env in envs)
        assert spec["num_nodes"] == len(nodes)
        assert spec["hostnames"] == hostnames_of(envs[0]["SLURM_STEP_NODELIST"])
        for record in group:
            s, env, here = record["spec"], record["env"], record["env"]["SLURMD_NODENAME"]
            assert s["hostnames"][s["node_rank"]] == here, "node rank does not point at this node"
            assert s["devices_per_node"] == nodes[here]
            _check_resources(s, env, record.get("cpus"))
        for here in nodes:
            on_node = [
                s for s, env in zip(specs, envs, strict=True) if env["SLURMD_NODENAME"] == here
            ]
            assert sorted(s["local_rank"] for s in on_node) == list(range(nodes[here]))
        rank0 = next(env for s, env in zip(specs, envs, strict=True) if s["global_rank"] == 0)
        assert spec["master_addr"] == rank0["SLURMD_NODENAME"], "rank 0 is not on the main address"


# gres.conf of slurm-common.sh: cn003 declares Intel GPUs, gpu-a1 AMD ones (Flags=*_gpu_env);
# elsewhere Slurm sets every vendor's variable and this GPU-less machine's probe finds none.
NODE_GPU_VENDOR = {"cn003": "intel", "gpu-a1": "amd"}
_VENDOR_VARIABLE = {
    "nvidia": "CUDA_VISIBLE_DEVICES",
    "amd": "ROCR_VISIBLE_DEVICES",
    "intel": "ZE_AFFINITY_MASK",
}


def _check_resources(spec: Record, env: Record, cpus: int | None) -> None:
    """One task's GPUs (vendor by node, devices from its vendor's variable) and CPUs
    (``--cpus-per-task`` capped by the affinity the task had, else shared by its node)."""
    vendor = (
        NODE_GPU_VENDOR.get(env["SLURMD_NODENAME"], "nvidia") if spec["gpus_per_node"] else None
    )
    assert spec["gpu_vendor"] == vendor
    visible = env.get(_VENDOR_VARIABLE[vendor or "nvidia"])
    assert spec["visible_devices"] == (visible.split(",") if visible else [])
    if cpus is None:  # a capture recorded before CPUs were
        return
    granted = env.get("SLURM_CPUS_PER_TASK")
    expected = min(int(granted), cpus) if granted else max(1, cpus // spec["devices_per_node"])
    assert spec["cpus_per_rank"] == expected


def _check_allocation(
    specs: list[Record], envs: list[Record], hostnames_of: Callable[[str], list[str]]
) -> None:
    assert len(specs) == 1, "a batch step or salloc shell is one process"
    spec, env = specs[0], envs[0]
    assert spec["role"] == ("batch" if "SLURMD_NODENAME" in env else "shell")
    # A heterogeneous salloc shell describes component 0, all it has a node list of.
    nodelist = env.get("SLURM_JOB_NODELIST") or env["SLURM_JOB_NODELIST_HET_GROUP_0"]
    assert spec["hostnames"] == hostnames_of(nodelist)
    assert spec["num_nodes"] == len(spec["hostnames"])
    assert (spec["global_rank"], spec["local_rank"], spec["node_rank"]) == (0, 0, 0)
    assert spec["master_addr"] == spec["hostnames"][0]


def check_ranks(records: list[Record], source: str) -> None:
    """One launch of ``source`` whose tasks name their ranks: one consistent world, the
    local ranks of each node 0..n-1, and where the task recorded it, torch.distributed's
    own rank and world size (``report.py --torch``)."""
    assert all("spec" in record for record in records), f"detection failed: {records}"
    specs = [record["spec"] for record in records]
    assert {spec["source"] for spec in specs} == {source}
    _agree(specs, "world_size", "num_nodes", "master_addr", "master_port", "job_id")
    assert specs[0]["world_size"] == len(specs)
    assert sorted(spec["global_rank"] for spec in specs) == list(range(len(specs)))
    for record in records:
        if "torch" in record:
            truth = record["torch"]
            spec = record["spec"]
            assert (spec["global_rank"], spec["world_size"]) == (
                truth["rank"],
                truth["world_size"],
            ), f"torch.distributed disagrees: {truth}"
    per_node = Counter(spec["node_rank"] for spec in specs)
    assert sorted(per_node) == list(range(specs[0]["num_nodes"]))
    for node, count in per_node.items():
        local = sorted(spec["local_rank"] for spec in specs if spec["node_rank"] == node)
        assert local == list(range(count)), f"node {node}: local ranks {local}"
        assert {spec["devices_per_node"] for spec in specs if spec["node_rank"] == node} == {count}


def check_torchrun(records: list[Record]) -> None:
    check_ranks(records, "torchelastic")


def check_mpi(records: list[Record], rank_name: str, size_name: str) -> None:
    """Ranks and world size against the MPI launcher's own variables."""
    check_ranks(records, "mpi")
    for record in records:
        env, spec = record["env"], record["spec"]
        assert (spec["global_rank"], spec["world_size"]) == (
            int(env[rank_name]),
            int(env[size_name]),
        )


def check_gridengine(records: list[Record]) -> None:
    """Each job against Grid Engine's own numbers for it."""
    for record in records:
        assert "spec" in record, f"detection failed in a real job: {record}"
        env, spec = record["env"], record["spec"]
        if "OMPI_COMM_WORLD_RANK" in env:
            continue  # mpirun's ranks: check_mpi
        assert spec["source"] == "gridengine"
        task = env["SGE_TASK_ID"]
        assert spec["job_id"] == env["JOB_ID"] + ("" if task == "undefined" else f".{task}")
        if "PE_HOSTFILE" in env:
            assert spec["role"] == "batch"
            assert (spec["world_size"], spec["num_nodes"]) == (int(env["NSLOTS"]), 1)
            assert spec["hostnames"] == [spec["master_addr"]]
        else:
            assert (spec["role"], spec["world_size"]) == ("standalone", 1)
    jobs = [r["spec"] for r in records if "OMPI_COMM_WORLD_RANK" not in r["env"]]
    ports = {spec["master_port"] for spec in jobs}
    assert len(ports) == len({spec["job_id"] for spec in jobs}), "array tasks share a port"


def _scrubbed_files(files: Mapping[str, str]) -> dict[str, str]:
    """The host file (a task reads one) under the path its scrubbed variable names."""
    (text,) = files.values()
    return {"/scrubbed": scrub_text(text)}


def _scrubbed_spec(record: Record) -> Record:
    """The task's spec with this machine's host name scrubbed. Where the host name was part
    of a job id (Open MPI 5's ``PMIX_NAMESPACE=prterun-<host>-<pid>@1``), the port derived
    from it changes too: that one field is re-derived from the scrubbed environment."""
    spec: Record = json.loads(scrub_text(json.dumps(record["spec"])))
    if spec.get("job_id") != record["spec"].get("job_id"):
        replay = detect_environment(
            scrub(record["env"]), gpu_probe=lambda: (), cpu_probe=lambda: record["cpus"]
        )
        spec["master_port"] = replay.master_port
    return spec


def capture_name(name: str, slurm: Slurm) -> str:
    """22.05's captures are the top level of tests/data/captures; 24.11's its subfolder."""
    return name if slurm.root is None else f"slurm-{slurm.version}/{name}"


def record_capture(
    name: str, command: str, records: list[Record], extra: Mapping[str, Any]
) -> None:
    """Write a capture when RECORD_CAPTURES=1 (``nox -s captures``)."""
    if os.environ.get("RECORD_CAPTURES") != "1":
        return
    tasks = [
        {
            "env": scrub(record["env"]),
            "cpus": record["cpus"],
            "spec": _scrubbed_spec(record),
            **({"torch": record["torch"]} if "torch" in record else {}),
            # Host files under their scrubbed paths, as the scrubbed variables name them.
            **({"files": _scrubbed_files(record["files"])} if "files" in record else {}),
        }
        for record in records
    ]
    tasks.sort(key=lambda task: json.dumps(task, sort_keys=True))
    capture = {"name": name, "command": command, **extra, "tasks": tasks}
    path = CAPTURES / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(capture, indent=1, sort_keys=True) + "\n")
