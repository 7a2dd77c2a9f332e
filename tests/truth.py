"""Each launcher's ground truth, checked against what clusterenv detected in its tasks.

The truth of a launch is taken from the launch as a whole, not from the variables
clusterenv parses: how many tasks reported, on which node (``SLURMD_NODENAME``), what
Slurm's own ``scontrol show hostnames`` makes of the node list (``hostnames_of``), which GPUs
Slurm bound, torch.distributed's rank, the MPI rank. Pure functions of the records (no
subprocess, no root): the live tests (tests/launchers/) and the replays of their captures
(tests/test_captures.py) both run them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterenv import ResourceSpec
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._node.container import container_findings

__all__ = [
    "CAPTURES",
    "CHECKS",
    "EXPECTED",
    "NODE_GPU_VENDOR",
    "WARNED",
    "Record",
    "check_findings",
    "check_flux",
    "check_gridengine",
    "check_mpi",
    "check_pbs",
    "check_ranks",
    "check_slurm",
    "check_torchrun",
]

CAPTURES = Path(__file__).parent / "data" / "captures"
#: What detection gives in each task of a capture (same relative path), kept apart from the
#: raw environments so that a change of the spec is regenerated offline: UPDATE_SNAPSHOTS=1
#: pytest tests/test_captures.py (the truth checks still hold every replay).
EXPECTED = Path(__file__).parent / "data" / "expected"
Record = dict[str, Any]  # {"env": {...}, "spec": {...}} or {"env": ..., "error": ...}


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
        if "MASTER_ADDR" not in rank0:  # a MASTER_ADDR given is used as given (findings judge it)
            assert spec["master_addr"] == rank0["SLURMD_NODENAME"], "rank 0 is not there"


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


def check_mpi(
    records: list[Record], rank_name: str, size_name: str, host_name: str | None = None
) -> None:
    """Ranks and world size against the MPI launcher's own variables (and node ranks against
    the host it placed each rank on, ``host_name``, where given)."""
    check_ranks(records, "mpi")
    if host_name:
        check_hosts(records, host_name)
    for record in records:
        env, spec = record["env"], record["spec"]
        assert (spec["global_rank"], spec["world_size"]) == (
            int(env[rank_name]),
            int(env[size_name]),
        )


def check_hosts(records: list[Record], host_name: str) -> None:
    """Node ranks against the host the launcher placed each process on (variable
    ``host_name``): one node rank per host, another on each other host, node 0 where rank 0
    runs, and each host's local ranks 0..n-1 once."""
    nodes: dict[str, set[int]] = defaultdict(set)
    local: dict[str, list[int]] = defaultdict(list)
    for record in records:
        host, spec = record["env"][host_name], record["spec"]
        nodes[host].add(spec["node_rank"])
        local[host].append(spec["local_rank"])
        if spec["global_rank"] == 0:
            assert spec["node_rank"] == 0, f"rank 0 runs on {host}, node {spec['node_rank']}"
    assert all(len(ranks) == 1 for ranks in nodes.values()), f"a host with two nodes: {nodes}"
    assert sorted(min(ranks) for ranks in nodes.values()) == list(range(len(nodes))), nodes
    assert all(sorted(ranks) == list(range(len(ranks))) for ranks in local.values()), local


def check_refused_alike(records: list[Record], words: str) -> None:
    """A launch clusterenv cannot read: every process refused, with the same explanation."""
    assert all("spec" not in record and words in record["message"] for record in records), [
        record.get("message", record.get("spec")) for record in records
    ]


def check_container(records: list[Record]) -> None:
    """Tasks of srun that each start a container: given the job's environment, Slurm's
    ranks, silent; without it, each a machine of its own (rank 0 of 1), which the note
    ``container-without-job`` explains, naming the runtime its marker shows."""
    with_job = all("SLURM_JOB_ID" in record["env"] for record in records)
    if with_job:
        check_ranks(records, "slurm")
    for record in records:
        spec = ResourceSpec.model_validate(record["spec"])
        noted = {f.id for f in container_findings(spec, record["machine"]["container"])}
        assert noted == (set() if with_job else {"container-without-job"}), noted
        if not with_job:
            assert (spec.source.value, spec.world_size) == ("local", 1)


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


def check_flux(records: list[Record]) -> None:
    """Each task against Flux's own answers (``flux job taskmap``, asked in the task): its
    node, and rank 0's host; a job's body against the instance it holds. Where detection
    refuses, it must say why (never a silent wrong answer)."""
    for record in records:
        env, truth = record["env"], record["truth"]
        if "spec" not in record:
            assert record["message"], f"a refusal that says nothing: {record}"
            continue
        spec = record["spec"]
        if "FLUX_TASK_RANK" not in env:  # a flux batch / flux alloc body
            assert (spec["role"], spec["num_nodes"]) == ("batch", int(truth["nodes"])), spec
            continue
        assert spec["source"] == "flux"
        assert (spec["global_rank"], spec["world_size"], spec["local_rank"]) == (
            int(env["FLUX_TASK_RANK"]),
            int(env["FLUX_JOB_SIZE"]),
            int(env["FLUX_TASK_LOCAL_ID"]),
        )
        assert spec["node_rank"] == int(truth["node"]), f"Flux puts it on node {truth['node']}"
        assert spec["num_nodes"] == int(env["FLUX_JOB_NNODES"])
        if "MASTER_ADDR" not in env and spec["num_nodes"] > 1:
            assert spec["master_addr"] == truth["host0"], "rank 0 is elsewhere"


def check_pbs(records: list[Record]) -> None:
    """Each process against PBS's own numbers: a job script against its node file (the
    recorded host file), a ``pbsdsh`` task against ``PBS_NODENUM`` (or refused, saying why,
    the same way on every node), and concurrent array subjobs on distinct ports."""
    for record in records:
        env = record["env"]
        if env.get("PBS_TASKNUM", "1") != "1":  # a TM task that pbsdsh started
            if "spec" in record:
                assert record["spec"]["node_rank"] == int(env["PBS_NODENUM"]), record["spec"]
            else:
                assert "pbsdsh" in record["message"], record["message"]
            continue
        assert "spec" in record, f"detection failed in a real job: {record}"
        spec = record["spec"]
        slots = [
            host
            for line in record["files"][env["PBS_NODEFILE"]].splitlines()
            for host in [line.split()[0]] * (int(line.split()[1]) if len(line.split()) > 1 else 1)
        ]
        hosts = list(dict.fromkeys(slots))
        assert (spec["source"], spec["role"], spec["job_id"]) == ("pbs", "batch", env["PBS_JOBID"])
        assert (spec["world_size"], spec["num_nodes"]) == (len(slots), len(hosts))
        assert spec["master_addr"] == hosts[0]
    jobs = [r["spec"] for r in records if "spec" in r and r["spec"]["role"] == "batch"]
    ports = {spec["master_port"] for spec in jobs}
    assert len(ports) == len({spec["job_id"] for spec in jobs}), "array subjobs share a port"


#: The recorded launches that are wrong on purpose, by capture name (both Slurm releases),
#: with the findings each must get above a note; every other launch is a correct one and
#: gets none (issue 39: a warning never fires on a correct launch).
WARNED: dict[str, set[str]] = {
    "gpus-per-task": {"gpus-per-task"},  # local rank 1 indexes a GPU its task cannot see
    "amd-gpus-per-task": {"gpus-per-task"},
    "gpu-bind-map": {"gpus-per-task"},  # --gpu-bind=map_gpu: one GPU per task, as above
    "gpus-outside-grant": {"slurm.gpus-outside-grant"},  # CUDA_VISIBLE_DEVICES by hand
    # MASTER_ADDR=$(hostname) on the submit host, not a node of the job
    "main-address-submit-host": {"slurm.main-address-submit-host"},
    # srun in a job of -c 2: 22.05 binds the task to one CPU; 24.11 passes cpu=2 on
    # (SLURM_TRES_PER_TASK), so its task has both
    "cpus-not-inherited": {"slurm.cpus-not-inherited"},
    "slurm-24.11/cpus-not-inherited": set(),
    "het-job": {"slurm.ntasks-without-per-node"},  # 1 and 2 tasks: uneven
    "srun-N2-n3-uneven": {"slurm.ntasks-without-per-node"},
    "srun-N2-n4-cyclic": {"slurm.ntasks-without-per-node"},
    "srun-arbitrary-hostfile": {"slurm.ntasks-without-per-node"},
    "srun-four-nodes-uneven": {"slurm.ntasks-without-per-node"},
    # torchrun in the job script of a 2-node job: its ranks run on the first node only
    "torchrun-in-batch-step": {"slurm.launcher-in-batch-step"},
    # Two tasks on one GPU; the second also indexes GPU 1, which it cannot see.
    "gpus-shared": {"slurm.gpus-shared", "gpus-per-task"},
    # srun -N1 in a -N3 job: the other two nodes train nothing (issue 47)
    "step-smaller-than-job": {"slurm.step-fewer-nodes"},
    "cray-shasta-step-smaller-than-job": {"slurm.step-fewer-nodes"},
    # MASTER_ADDR is the node list's first host; task 0 is on the hostfile's first line
    "main-address-not-rank-0": {"slurm.main-address-not-rank-0"},
}
#: The notes a recorded launch must get (on at least one task), by capture name.
NOTED: dict[str, set[str]] = {
    "gpus-not-from-zero": {"gpus-not-from-zero"},  # CUDA_VISIBLE_DEVICES=1: a correct launch
}


def check_findings(name: str, records: list[Record]) -> None:
    """What ``diagnose`` says of a launch's tasks above a note: exactly what :data:`WARNED`
    expects of ``name`` (a capture name, with or without its release folder; a release's
    own entry first), and at least the notes :data:`NOTED` expects."""
    found: set[str] = set()
    notes: set[str] = set()
    for record in records:
        if "spec" not in record:  # refused: the refusal is the report
            continue
        spec = ResourceSpec.model_validate(record["spec"])
        for finding in diagnose(spec, record["env"]):
            (notes if finding.level == "info" else found).add(finding.id)
    expected = WARNED.get(name, WARNED.get(name.rpartition("/")[2], set()))
    assert found == expected, f"{name}: {found}"
    noted = NOTED.get(name.rpartition("/")[2], set())
    assert noted <= notes, f"{name}: {notes}"


#: How each launcher's records are checked against its ground truth (live and replayed).
CHECKS: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "torchrun": check_torchrun,
    "torchrun+slurm": check_torchrun,
    "accelerate": check_torchrun,
    "deepspeed": lambda records: check_ranks(records, "env"),
    "ray": lambda records: check_ranks(records, "env"),
    "openmpi": lambda records: check_mpi(records, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    "mpich": lambda records: check_mpi(records, "PMI_RANK", "PMI_SIZE"),
    "intel-mpi": lambda records: check_mpi(records, "PMI_RANK", "PMI_SIZE"),
    "gridengine": check_gridengine,
    "flux": check_flux,
    "pbs": check_pbs,
    "torchrun+pbs": check_torchrun,
    "slurm+podman": check_container,
    "mpich+pbs": lambda records: check_mpi(records, "PMI_RANK", "PMI_SIZE", "PMI_HOSTNAME"),
    "openmpi+pbs": lambda records: check_refused_alike(records, "Open MPI 5 numbers local ranks"),
}
