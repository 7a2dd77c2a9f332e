"""detect_environment() inside every task of real Slurm, torchrun and mpirun launches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.launchers.harness import (
    Cluster,
    capture_name,
    launch,
    launch_files,
    node_lists,
    record_capture,
    run,
    scontrol_hostnames,
    slurm_version,
)
from tests.truth import CHECKS, check_findings, check_mpi, check_slurm, check_torchrun

# {task} runs the report script in each task. sbatch jobs use --wait; -o /dev/null
# keeps the batch output out of the working directory.
SBATCH = "sbatch --wait -o /dev/null"
SLURM_LAUNCHES = {
    "srun-N2-ntasks-per-node2": "srun -N2 --ntasks-per-node=2 {task}",
    "srun-N2-n3-uneven": "srun -N2 -n3 {task}",
    "srun-N2-n4-cyclic": "srun -N2 -n4 -m cyclic {task}",
    "srun-noncontiguous-nodes": "srun -N3 -w cn001,cn003,gpu-a1 {task}",
    "srun-four-nodes-uneven": "srun -N4 -n7 {task}",
    # Tasks follow the hostfile's lines: task 0 on cn002, the second node of the sorted list.
    "srun-arbitrary-hostfile": "printf 'cn002\\ncn001\\ncn001\\n' > {out}/hosts.txt && "
    "SLURM_HOSTFILE={out}/hosts.txt srun -n3 --distribution=arbitrary {task}",
    # The job script took the node list's first host; the hostfile put task 0 on cn002.
    "main-address-not-rank-0": "printf 'cn002\\ncn001\\n' > {out}/hosts.txt && MASTER_ADDR=cn001 "
    "SLURM_HOSTFILE={out}/hosts.txt srun -n2 --distribution=arbitrary {task}",
    "sbatch-batch-step": f"{SBATCH} -N2 --ntasks-per-node=2 --wrap '{{task}}'",
    "sbatch-srun": f"{SBATCH} -N2 --ntasks-per-node=2 --wrap 'srun {{task}}'",
    "sbatch-batch-step-typed-gpus": f"{SBATCH} -N2 --gpus-per-node=a100:2 --wrap '{{task}}'",
    "salloc-shell": "salloc -N2 {task}",
    "salloc-shell-gpus": "salloc -N2 --gpus-per-node=2 {task}",
    "salloc-srun-interactive-name": "salloc -N2 --ntasks-per-node=2 srun {task}",
    "step-smaller-than-job": "salloc -N3 --ntasks-per-node=2 srun -N1 -n2 -r1 {task}",
    "gpus-per-node": "srun -N2 --ntasks-per-node=2 --gpus-per-node=2 {task}",
    "gres-gpu": "srun -N2 --ntasks-per-node=2 --gres=gpu:2 {task}",
    "gpus-per-task": "srun -N2 --ntasks-per-node=2 --gpus-per-task=1 {task}",
    "gpus-per-node-typed": "srun -N2 --ntasks-per-node=2 --gpus-per-node=a100:2 {task}",
    # Each task bound to one GPU by a map (task 0 to GPU 1, task 1 to GPU 0).
    "gpu-bind-map": "srun -N1 --ntasks-per-node=2 --gpus-per-node=2 --gpu-bind=map_gpu:1,0 {task}",
    # MASTER_ADDR=$(hostname) typed where srun is: the submit host, not a node of the job.
    "main-address-submit-host": "MASTER_ADDR=$(hostname) srun -N2 --ntasks-per-node=1 {task}",
    # A job script that sets CUDA_VISIBLE_DEVICES itself, beyond the one GPU it was granted.
    "gpus-outside-grant": f"{SBATCH} -N1 --gpus-per-node=1 "
    "--wrap 'CUDA_VISIBLE_DEVICES=0,1 {task}'",
    # Two tasks on one granted GPU: both see GPU 0.
    "gpus-shared": "srun -N1 --ntasks-per-node=2 --gpus-per-node=1 {task}",
    # GPU 0 of cn001 held by another allocation: this job's is GPU 1, unrenumbered.
    "gpus-not-from-zero": "J=$(salloc --no-shell -w cn001 --gpus-per-node=1 2>&1 | "
    "sed -n 's/.*Granted job allocation //p') && srun -w cn001 --gpus-per-node=1 {task}; "
    "scancel $J",
    "job-name-bash": "srun -N2 --ntasks-per-node=2 --job-name=bash {task}",
    "het-job": "srun -N1 -n1 : -N1 -n2 {task}",
    "mpi-pmi2": "srun -N2 --ntasks-per-node=2 --mpi=pmi2 {task}",
    "mpi-pmix": "srun -N2 --ntasks-per-node=2 --mpi=pmix {task}",
    "export-none": "srun -N2 --ntasks-per-node=1 --export=NONE {task}",
    "array-job": f"{SBATCH} -N1 --ntasks-per-node=2 -a 0-1 --wrap 'srun {{task}}'",
    # The vendors' nodes of slurm-common.sh's gres.conf: only ROCR_VISIBLE_DEVICES on gpu-a1,
    # only ZE_AFFINITY_MASK on cn003.
    "amd-gpus-per-task": "srun -w gpu-a1 --ntasks-per-node=2 --gpus-per-task=1 {task}",
    "intel-gpus": "srun -w cn003 --ntasks-per-node=2 --gpus-per-node=2 {task}",
    "cpus-per-task": "srun -N2 --ntasks-per-node=2 --cpus-per-task=2 {task}",
    # Only *_HET_GROUP_N geometry, and SLURM_NTASKS counting every component.
    "het-salloc-shell": "salloc -N1 -n1 : -N1 -n2 {task}",
    # The default MPI plugin of HPE Cray EX machines: PALS_* in every srun task.
    "cray-shasta-1x4": "srun -N1 -n4 --mpi=cray_shasta {task}",
    "cray-shasta-2x2": "srun -N2 --ntasks-per-node=2 --mpi=cray_shasta {task}",
    "cray-shasta-step-smaller-than-job": "salloc -N3 --ntasks-per-node=2 "
    "srun -N1 -n2 -r1 --mpi=cray_shasta {task}",
}
GPUS_PER_NODE = {
    "salloc-shell-gpus": 2,  # granted, though the submit host's GPUs are not the job's
    "sbatch-batch-step-typed-gpus": 2,
    "gpus-per-node": 2,
    "gres-gpu": 2,
    "gpus-per-task": 2,
    "gpus-per-node-typed": 2,
    "gpu-bind-map": 2,
    "gpus-outside-grant": 1,
    "gpus-shared": 1,
    "gpus-not-from-zero": 1,
    "amd-gpus-per-task": 2,
    "intel-gpus": 2,
}
TORCHRUN = "{python} -m torch.distributed.run --nproc_per_node=2"
TORCHRUN_LAUNCHES = {
    "torchrun-standalone": f"{TORCHRUN} --standalone {{report}} {{out}}",
    "torchrun-static-2-nodes": " & ".join(
        f"{TORCHRUN} --nnodes=2 --node_rank={rank} --master_addr=127.0.0.1 --master_port={{port}}"
        " {report} {out}"
        for rank in (0, 1)
    )
    + "; wait",
    "torchrun-c10d-2-nodes": " & ".join(
        [
            f"{TORCHRUN} --nnodes=2 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:{{port}}"
            " --rdzv_id=exp7 {report} {out}"
        ]
        * 2
    )
    + "; wait",
}


@pytest.mark.slurm
@pytest.mark.parametrize("name", sorted(SLURM_LAUNCHES))
def test_slurm_launch(name: str, tmp_path: Path, slurm_cluster: Cluster) -> None:
    records = launch(SLURM_LAUNCHES[name], tmp_path, slurm=slurm_cluster)
    hostnames = node_lists(records, slurm_cluster)
    check_slurm(records, hostnames.__getitem__)
    check_findings(name, records)
    job_names = {"salloc-srun-interactive-name": "interactive", "job-name-bash": "bash"}
    for record in records:
        spec = record["spec"]
        if name in job_names:  # the names that disable Lightning's SLURM detection
            assert record["env"]["SLURM_JOB_NAME"] == job_names[name]
        assert spec["gpus_per_node"] == GPUS_PER_NODE.get(name, 0)
        assert spec["accelerator"] == ("gpu" if name in GPUS_PER_NODE else "cpu")
    record_capture(
        capture_name(name, slurm_cluster),
        SLURM_LAUNCHES[name],
        records,
        {"launcher": "slurm", "version": slurm_version(slurm_cluster), "hostnames": hostnames},
    )


# Three CPUs per node and no task count: like a core's two hyperthreads or --exclusive.
NO_TASK_COUNT = f"{SBATCH} -N2 --mincpus=3 --wrap '{{task}}; srun {{task}}'"


@pytest.mark.slurm
def test_a_batch_step_without_a_task_count_describes_what_srun_starts(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """Without -n, SLURM_TASKS_PER_NODE counts CPUs (3 per node here; 4 with --exclusive, 2
    for a core's hyperthreads), and a bare srun starts one task per node: the batch step's
    world is what that srun really started (was: 6)."""
    records = launch(NO_TASK_COUNT, tmp_path, slurm=slurm_cluster)
    hostnames = node_lists(records, slurm_cluster)
    check_slurm(records, hostnames.__getitem__)
    check_findings("sbatch-no-task-count", records)
    (batch,) = [record for record in records if record["spec"]["role"] == "batch"]
    assert batch["env"]["SLURM_TASKS_PER_NODE"] == "3(x2)"
    assert "SLURM_NTASKS" not in batch["env"]
    assert batch["spec"]["world_size"] == len(records) - 1 == 2
    name = capture_name("sbatch-no-task-count", slurm_cluster)
    version = slurm_version(slurm_cluster)
    record_capture(
        name,
        NO_TASK_COUNT,
        records,
        {"launcher": "slurm", "version": version, "hostnames": hostnames},
    )


@pytest.mark.slurm
def test_gpus_per_task_binds_one_device_per_task(tmp_path: Path, slurm_cluster: Cluster) -> None:
    records = launch(SLURM_LAUNCHES["gpus-per-task"], tmp_path, slurm=slurm_cluster)
    by_node: dict[str, list[list[str]]] = {}
    for record in records:
        by_node.setdefault(record["env"]["SLURMD_NODENAME"], []).append(
            record["spec"]["visible_devices"]
        )
    for devices in by_node.values():
        assert all(len(d) == 1 for d in devices)
        assert len({d[0] for d in devices}) == len(devices), "two tasks were given one GPU"


#: A container in every task (podman, from an image built here), without and with the job's
#: environment: without it, each task reads as a machine of its own (the note says why).
CONTAINERS = {
    "srun-podman": "srun -N2 --ntasks-per-node=1 {podman} -- {{task}}",
    "srun-podman-env-host": "srun -N2 --ntasks-per-node=1 {podman} --env-host -- {{task}}",
}


@pytest.mark.slurm
@pytest.mark.parametrize("name", sorted(CONTAINERS))
@pytest.mark.parametrize("slurm_cluster", ["22.05"], indirect=True)  # 24.11's tasks: a chroot
def test_a_container_under_srun(
    name: str, tmp_path: Path, slurm_cluster: Cluster, podman: str
) -> None:
    """Without the job's environment each task reads as a machine of its own, which the
    note names; with it (--env-host), Slurm's ranks, silent (check_container)."""
    records = launch(CONTAINERS[name].format(podman=podman), tmp_path, slurm=slurm_cluster)
    assert len(records) == 2
    CHECKS["slurm+podman"](records)
    record_capture(name, CONTAINERS[name], records, {"launcher": "slurm+podman"})


@pytest.mark.slurm
def test_multiprocessing_children_of_a_task_are_stopped(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """Each task of a two-node step starts two children with multiprocessing (as mp.spawn
    does): all four inherit their task's SLURM_PROCID, and the pre-flight check of each
    stops it (spawned-child), naming the process that started it."""
    spawn = Path(__file__).with_name("spawn_children.py")
    command = f"MASTER_ADDR=127.0.0.1 srun -N2 --ntasks-per-node=1 {{python}} {spawn} {{out}}"
    records = launch(command, tmp_path, slurm=slurm_cluster)
    assert len(records) == 4
    assert sorted(record["spec"]["global_rank"] for record in records) == [0, 0, 1, 1]
    for record in records:
        assert "spawned-child" in record["error"], record


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
@pytest.mark.parametrize("name", sorted(TORCHRUN_LAUNCHES))
def test_torchrun_launch(name: str, tmp_path: Path) -> None:
    records = launch(TORCHRUN_LAUNCHES[name], tmp_path)
    assert len(records) == 2 if name == "torchrun-standalone" else 4
    check_torchrun(records)
    record_capture(name, TORCHRUN_LAUNCHES[name], records, {"launcher": "torchrun"})


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_torchrun_inside_srun(tmp_path: Path, slurm_cluster: Cluster) -> None:
    command = (
        "srun -N2 --ntasks-per-node=1 "
        f"{TORCHRUN} --nnodes=2 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:{{port}}"
        " --rdzv_id=exp7 {report} {out}"
    )
    records = launch(command, tmp_path, slurm=slurm_cluster)
    assert len(records) == 4
    check_torchrun(records)
    name = capture_name("torchrun-inside-srun", slurm_cluster)
    record_capture(name, command, records, {"launcher": "torchrun+slurm"})


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_torchrun_in_the_batch_step_of_a_two_node_job(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """The mistake of issue 39: torchrun typed in the job script runs on the first node only;
    its ranks are right about themselves, and the finding says the other node idles."""
    command = f"{SBATCH} -N2 --wrap '{TORCHRUN} --standalone {{report}} {{out}}'"
    records = launch(command, tmp_path, slurm=slurm_cluster)
    assert len(records) == 2
    check_torchrun(records)
    check_findings("torchrun-in-batch-step", records)
    name = capture_name("torchrun-in-batch-step", slurm_cluster)
    record_capture(name, command, records, {"launcher": "torchrun+slurm"})


# One torchrun agent per node, static rendezvous, wrapped by `clusterenv run`; the node rank
# is expanded by whichever shell reads the line. (The loopback cluster's node names do not
# resolve, so the main address is the nodes' one address.)
MAIN_ADDRESS = "export MASTER_ADDR=127.0.0.1; "
NODE_RANK_TORCHRUN = (
    "{python} -m clusterenv run -m torch.distributed.run --nnodes=2 --nproc-per-node=1 "
    "--node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR --master_port={port} {report} {out}"
)


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_a_node_rank_expanded_in_the_job_script_stops_before_the_rendezvous(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """Issue 39: `srun torchrun --node_rank=$SLURM_NODEID` in a job script gives every node
    the batch step's 0, and the two agents wait for node 1 forever. clusterenv run stops
    node 1's at once with the finding (srun -K then ends node 0's); expanded by each task,
    the same launch trains with nothing said."""
    once = (
        f"sbatch --wait -o {{out}}/job.out -N2 --ntasks-per-node=1 --wrap '{MAIN_ADDRESS}srun -K "
    )
    result = run(once + NODE_RANK_TORCHRUN + "'", tmp_path, slurm=slurm_cluster)
    log = (tmp_path / "records" / "job.out").read_text()
    assert result.returncode != 0, log
    assert "torchelastic.node-rank-mismatch: torchrun --node_rank=0 on node 1 of 2" in log, log
    assert not list((tmp_path / "records").glob("*.json"))  # no worker started

    each = f"{MAIN_ADDRESS}srun -N2 --ntasks-per-node=1 -K bash -c '{NODE_RANK_TORCHRUN}'"
    result = run(each, tmp_path / "each", slurm=slurm_cluster)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "clusterenv:" not in result.stderr, result.stderr  # silent: a correct launch
    records = [json.loads(p.read_text()) for p in (tmp_path / "each/records").glob("*.json")]
    assert len(records) == 2
    check_torchrun(records)


@pytest.mark.mpi
@pytest.mark.usefixtures("mpirun")
@pytest.mark.parametrize("ranks", [2, 3])
def test_mpirun_launch(ranks: int, tmp_path: Path) -> None:
    """Open MPI's mpirun: ranks and world size are MPI's own."""
    command = f"mpirun --allow-run-as-root --oversubscribe -np {ranks} {{task}}"
    records = launch(command, tmp_path)
    check_mpi(records, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
    record_capture(f"mpirun-np{ranks}", command, records, {"launcher": "openmpi"})


MPICH_LAUNCHES = {
    "mpich-np3": "mpirun.mpich -np 3 -launcher fork {task}",
    # Two emulated nodes: hydra gives local ranks 0,1,0,1. No MPI variable names rank 0's
    # host, so a multi-node launch needs MASTER_ADDR (hydra passes the environment on).
    "mpich-2-nodes": "MASTER_ADDR=127.0.0.1 "
    "mpirun.mpich -np 4 -ppn 2 -hosts localhost,127.0.0.1 -launcher fork {task}",
}


@pytest.mark.mpi
@pytest.mark.usefixtures("mpich")
@pytest.mark.parametrize("name", sorted(MPICH_LAUNCHES))
def test_mpich_launch(name: str, tmp_path: Path) -> None:
    records = launch(MPICH_LAUNCHES[name], tmp_path)
    check_mpi(records, "PMI_RANK", "PMI_SIZE")
    nodes = {record["spec"]["num_nodes"] for record in records}
    assert nodes == {2 if name == "mpich-2-nodes" else 1}
    record_capture(name, MPICH_LAUNCHES[name], records, {"launcher": "mpich"})


@pytest.mark.mpi
@pytest.mark.usefixtures("mpich")
def test_multi_node_mpi_without_master_addr_says_what_to_export(tmp_path: Path) -> None:
    command = MPICH_LAUNCHES["mpich-2-nodes"].removeprefix("MASTER_ADDR=127.0.0.1 ")
    records = launch(command, tmp_path)
    assert len(records) == 4
    for record in records:
        assert record["error"] == "MissingVariableError"
        assert "export MASTER_ADDR" in record["message"]


@pytest.mark.slurm
def test_inspect_json_in_every_task(tmp_path: Path, slurm_cluster: Cluster) -> None:
    """`srun -N2 -n4 clusterenv inspect --json`: four consistent documents, one per task,
    whose main address is task 0's node, wherever Slurm placed the step (its own
    SLURM_STEP_NODELIST is the truth, never a node name typed here)."""
    command = "srun -N2 -n4 -o {out}/%t.json {python} -m clusterenv inspect --json"
    paths = sorted(launch_files(command, tmp_path, slurm=slurm_cluster))
    reports = [json.loads(path.read_text()) for path in paths]
    specs = [report["spec"] for report in reports]
    assert sorted(spec["global_rank"] for spec in specs) == [0, 1, 2, 3]
    nodelist = {o["variable"]: o["value"] for o in reports[0]["origins"]["hostnames"]}
    nodes = scontrol_hostnames(nodelist["SLURM_STEP_NODELIST"], slurm_cluster)
    assert nodes, "Slurm expands the step's own node list"
    first = nodes[0]
    assert {(spec["world_size"], spec["master_addr"], spec["master_port"]) for spec in specs} == {
        (4, first, specs[0]["master_port"])
    }
    versions = {report["machine"]["launchers"].get("slurm") for report in reports}
    assert versions == {slurm_version(slurm_cluster)}, "inspect names the running Slurm"
