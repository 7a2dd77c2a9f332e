"""The findings that name the cause before the hang (issue 39), each on the environment
that causes it and silent on the correct one beside it."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

import clusterenv
from clusterenv import ResourceSpec, detect_environment, explain_environment
from clusterenv._diagnosis.diagnose import diagnose
from clusterenv._diagnosis.machine import Machine, machine_findings
from clusterenv._diagnosis.preflight import preflight
from clusterenv._diagnosis.spawned import spawned_by, spawned_findings
from clusterenv._node.container import container_findings, container_runtime
from clusterenv._node.nccl import nccl_plugin, slingshot_findings
from clusterenv.exceptions import PreflightError
from clusterenv.sources import command_findings
from clusterenv.testing import local_env, slurm_env, torchrun_env
from tests.envs import torchrun_worker


def found(env: dict[str, str], cpus: int | None = None) -> dict[str, str]:
    """Finding id -> level for ``env``, with ``cpus`` the task's affinity."""
    spec = explain_environment(env, gpu_probe=tuple, cpu_probe=lambda: cpus).spec
    return {finding.id: finding.level for finding in diagnose(spec, env)}


def spec_of(env: dict[str, str]) -> ResourceSpec:
    return explain_environment(env, gpu_probe=tuple, cpu_probe=lambda: None).spec


def test_srun_that_did_not_inherit_cpus_per_task() -> None:
    """Slurm >= 22.05: the task is bound to 1 CPU while SLURM_CPUS_PER_TASK says 8."""
    task = slurm_env(2, 2, 1, within="sbatch", cpus_per_task=8)
    assert found(task, cpus=1)["slurm.cpus-not-inherited"] == "warning"
    assert "slurm.cpus-not-inherited" not in found(task, cpus=8)
    assert "slurm.cpus-not-inherited" not in found(task | {"SRUN_CPUS_PER_TASK": "8"}, cpus=1)


def test_torchrun_left_in_a_multi_node_batch_step() -> None:
    batch = slurm_env(2, 2, step="batch")
    assert found(batch | torchrun_env(1, 2, 0))["slurm.launcher-in-batch-step"] == "warning"
    inside_srun = slurm_env(2, 1, 0) | torchrun_worker(0, nproc_per_node=2, nnodes=2)
    assert "slurm.launcher-in-batch-step" not in found(inside_srun)
    # torchrun --nnodes=2 once in the batch step of a 2-node job (issue 47): the node counts
    # agree, but the second node never starts an agent.
    once = batch | torchrun_worker(0, nproc_per_node=2, nnodes=2)
    assert found(once)["slurm.launcher-in-batch-step"] == "warning"


@pytest.mark.parametrize(
    ("command", "stopped"),
    [
        (["torchrun", "--nnodes=2", "--nproc-per-node=2", "train.py"], True),
        (["torchrun", "--nnodes=2:4", "--rdzv-backend=c10d", "--rdzv-endpoint=h:1", "t.py"], True),
        (["torchrun", "--nnodes=1", "--nproc-per-node=2", "train.py"], False),
        (["torchrun", "--nnodes=1:2", "train.py"], False),  # may train on this node alone
    ],
)
def test_a_multi_node_launcher_started_once_in_the_job_script_is_stopped(
    command: list[str], stopped: bool
) -> None:
    """Issue 47: `clusterenv run torchrun --nnodes=2 ...` in the job script itself (no srun)
    waits for a second agent that nothing starts: stopped where it runs, before it hangs."""
    pytest.importorskip("torch")
    from clusterenv.sources import command_findings  # noqa: PLC0415

    spec = detect_environment(slurm_env(2, 2, step="batch"))
    ids = [(f.id, f.level) for f in command_findings(spec, command)]
    assert (("torchelastic.launcher-once-for-nodes", "error") in ids) is stopped
    inside = detect_environment(slurm_env(2, 1, 1))  # the corrected twin: one per node
    assert command_findings(inside, [*command[:2], "--node-rank=1", "train.py"]) == []


def test_a_step_smaller_than_its_job_is_a_note() -> None:
    step = slurm_env(3, 2, 0, within="salloc") | {
        "SLURM_STEP_NUM_TASKS": "2",
        "SLURM_STEP_NUM_NODES": "1",
        "SLURM_STEP_TASKS_PER_NODE": "2",
        "SLURM_STEP_NODELIST": "cn001",
    }
    assert found(step)["slurm.step-smaller-than-job"] == "info"
    assert found(step)["slurm.step-fewer-nodes"] == "warning"  # two nodes idle (issue 47)


def test_a_step_over_every_node_of_its_job_is_silent() -> None:
    """The corrected twin of ``srun -N1`` in a 3-node job: a step over all three."""
    step = slurm_env(3, 2, 0, within="salloc") | {"SLURM_STEP_NUM_NODES": "3"}
    assert "slurm.step-fewer-nodes" not in found(step)


def test_gpu_masks() -> None:
    amd = local_env() | {"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "1"}
    assert found(amd)["gpus-double-mask"] == "warning"
    assert "gpus-double-mask" not in found(local_env() | {"ROCR_VISIBLE_DEVICES": "0,1"})
    mig = local_env() | {"CUDA_VISIBLE_DEVICES": "MIG-a,MIG-b"}
    assert "gpus-several-mig" in found(mig)
    assert "gpus-several-mig" not in found(local_env() | {"CUDA_VISIBLE_DEVICES": "MIG-a"})


@pytest.mark.parametrize(("ranks", "level"), [(4, "error"), (1, "warning")])
def test_an_empty_main_address(ranks: int, level: str) -> None:
    env = slurm_env(1, ranks, 0) | {"MASTER_ADDR": " "}
    assert found(env)["main-address-empty"] == level


def test_threads_beyond_the_cpus() -> None:
    env = slurm_env(1, 2, 0) | {"OMP_NUM_THREADS": "8"}
    assert found(env, cpus=4)["omp-oversubscribed"] == "warning"  # 2 CPUs per rank
    assert "omp-oversubscribed" not in found(env | {"OMP_NUM_THREADS": "2"}, cpus=4)


@pytest.mark.parametrize(
    ("name", "value", "missing"),
    [
        ("NCCL_SOCKET_IFNAME", "ib", True),
        ("NCCL_SOCKET_IFNAME", "eth", False),  # a prefix of eth0
        ("NCCL_SOCKET_IFNAME", "=eth", True),  # exact
        ("NCCL_SOCKET_IFNAME", "^docker", False),  # exclusions leave eth0
        ("GLOO_SOCKET_IFNAME", "eth", True),  # exact names only
        ("GLOO_SOCKET_IFNAME", "eth0", False),
    ],
)
def test_an_interface_this_node_does_not_have(name: str, value: str, missing: bool) -> None:
    env = slurm_env(2, 1, 0) | {name: value}
    machine = Machine(interfaces=["eth0", "lo"])
    ids = {f.id for f in machine_findings(spec_of(env), env, machine)}
    assert ("interface-missing" in ids) is missing


def test_a_container_that_dropped_the_job() -> None:
    assert container_runtime({"APPTAINER_CONTAINER": "/img.sif"}) == "Apptainer"
    assert container_runtime({}, exists=lambda path: path == "/.dockerenv") == "docker"
    assert container_runtime({}, exists=lambda path: False) is None
    (note,) = container_findings(spec_of(local_env()), "Apptainer")
    assert (note.id, note.level) == ("container-without-job", "info")
    assert container_findings(spec_of(slurm_env(2, 1, 0)), "Apptainer") == []


@pytest.mark.parametrize(
    ("granted", "visible", "outside"),
    [
        ("0,1", "0,1", False),
        ("2,3", "2", False),  # one of the granted
        ("2,3", "0,1", False),  # renumbered from 0: cgroups hide the others
        ("0,1", "0,1,2,3", True),  # more than granted
        ("2,3", "1,2", True),
        ("0,1", "GPU-5f3e,GPU-9a1b", False),  # UUIDs: not comparable
    ],
)
def test_visible_gpus_outside_the_grant(granted: str, visible: str, outside: bool) -> None:
    env = slurm_env(1, 2, 0, gpus_per_node=2) | {
        "SLURM_STEP_GPUS": granted,
        "CUDA_VISIBLE_DEVICES": visible,
    }
    assert ("slurm.gpus-outside-grant" in found(env)) is outside


def test_a_main_address_that_is_the_submit_host() -> None:
    """MASTER_ADDR=$(hostname) typed on the login node: not a node of the job."""
    env = slurm_env(2, 2, 1) | {"SLURM_SUBMIT_HOST": "login1.example.org"}
    assert found(env | {"MASTER_ADDR": "login1"}).get("slurm.main-address-submit-host") == "error"
    assert "slurm.main-address-submit-host" not in found(env | {"MASTER_ADDR": "cn001"})
    assert "slurm.main-address-submit-host" not in found(env)
    inside = slurm_env(2, 2, 1) | {"SLURM_SUBMIT_HOST": "cn001", "MASTER_ADDR": "cn001"}
    assert "slurm.main-address-submit-host" not in found(inside)  # submitted from a node


def test_a_main_address_that_is_the_host_srun_ran_on() -> None:
    """Issue 47: MASTER_ADDR=$SLURM_LAUNCH_NODE_IPADDR in a step that srun started from an
    salloc shell or a login node (no ENVIRONMENT=BATCH): that host is no node of the job, a
    warning (a site may run salloc's shell on the first node). Silent in a step the job
    script started, where srun ran on the first node, and where srun's address is loopback
    (the one-host cluster of the suite: srun from its shell, a correct launch)."""
    outside = slurm_env(2, 2, 1) | {
        "SLURM_SUBMIT_HOST": "login1",
        "SLURM_LAUNCH_NODE_IPADDR": "198.18.0.254",
    }
    named = outside | {"MASTER_ADDR": "198.18.0.254"}
    assert found(named).get("slurm.main-address-launch-host") == "warning"
    assert "slurm.main-address-launch-host" not in found(named | {"ENVIRONMENT": "BATCH"})
    assert "slurm.main-address-launch-host" not in found(outside)
    assert "slurm.main-address-launch-host" not in found(named | {"SLURM_SUBMIT_HOST": "cn001"})
    # srun answered over loopback ran on this task's own node (a one-host cluster): a node
    here = {"SLURM_LAUNCH_NODE_IPADDR": "127.0.0.1", "MASTER_ADDR": "127.0.0.1"}
    assert "slurm.main-address-launch-host" not in found(outside | here)


def test_a_rendezvous_endpoint_the_ranks_cannot_meet_at() -> None:
    """Issue 47: `srun clusterenv run torchrun --rdzv-endpoint=$SLURM_LAUNCH_NODE_IPADDR`
    from a login node: no agent hosts the rendezvous there, and the agents wait before any
    worker starts, so only the launcher's command line can tell."""
    pytest.importorskip("torch")
    env = slurm_env(2, 1, 0) | {"SLURM_SUBMIT_HOST": "login1"}
    env |= {"SLURM_LAUNCH_NODE_IPADDR": "198.18.0.254"}
    spec = spec_of(env)
    torchrun = ["torchrun", "--nnodes=2", "--rdzv-backend=c10d", "--nproc-per-node=2"]

    def ids(endpoint: str, where: dict[str, str]) -> list[str]:
        command = [*torchrun, f"--rdzv-endpoint={endpoint}", "train.py"]
        return [f.id for f in command_findings(spec, command, where)]

    assert ids("198.18.0.254:29400", env) == ["slurm.main-address-launch-host"]
    assert ids("login1:29400", env) == ["slurm.main-address-submit-host"]
    assert ids("cn001:29400", env) == []  # the corrected twin: the job's first node
    assert ids("198.18.0.254:29400", env | {"ENVIRONMENT": "BATCH"}) == []


def test_nccl_over_slingshot_without_its_plugin() -> None:
    """A rank of a multi-node NVIDIA job on a node with Slingshot NICs, without NCCL's
    network plugin; silent with the plugin, without Slingshot, or on one node."""
    spec = spec_of(slurm_env(2, 4, 0, gpus_per_node=4))
    slingshot = ["hsn0", "hsn1", "lo"]
    (one,) = slingshot_findings(spec, slingshot, "")
    assert one.id == "nccl-ofi-missing"
    assert "hsn0, hsn1" in one.message
    assert slingshot_findings(spec, slingshot, "/opt/aws-ofi-nccl/lib/libnccl-net.so") == []
    assert slingshot_findings(spec, ["eth0", "ib0"], "") == []
    assert slingshot_findings(spec_of(slurm_env(1, 4, 0, gpus_per_node=4)), slingshot, "") == []
    assert slingshot_findings(spec, slingshot, None) == []  # not looked up


def test_where_nccl_finds_its_plugin() -> None:
    def nowhere(path: str) -> bytes:
        raise OSError(path)

    there = {"/opt/ofi/lib/libnccl-net.so", "/opt/ofi/lib/libnccl-net-ofi.so"}
    env = {"LD_LIBRARY_PATH": "/opt/cuda/lib64:/opt/ofi/lib"}
    assert nccl_plugin(env, there.__contains__, nowhere) == "/opt/ofi/lib/libnccl-net.so"
    named = env | {"NCCL_NET_PLUGIN": "ofi"}
    assert nccl_plugin(named, there.__contains__, nowhere) == "/opt/ofi/lib/libnccl-net-ofi.so"
    assert nccl_plugin({}, there.__contains__, nowhere) == ""
    cached = nccl_plugin({}, there.__contains__, lambda path: b"\0libnccl-net.so\0")
    assert cached == "/etc/ld.so.cache"


def test_a_multiprocessing_copy_of_a_rank() -> None:
    """Children of one srun task's process: each claims its rank; a child given its own
    RANK (a launcher written in Python) and a process no multiprocessing started are not."""
    env = dict(slurm_env(1, 1, 0))
    parent = "\0".join(f"{name}={value}" for name, value in env.items()).encode()

    def child_of(environ: bytes, by_multiprocessing: bool = True) -> int | None:
        return spawned_by(env, lambda: object() if by_multiprocessing else None, lambda _: environ)

    assert child_of(parent) == os.getppid()
    assert child_of(parent, by_multiprocessing=False) is None
    assert child_of(parent.replace(b"SLURM_PROCID=0", b"SLURM_PROCID=1")) is None
    (one,) = spawned_findings(spec_of(env), 1234)
    assert (one.id, one.level) == ("spawned-child", "warning")  # each trains alone
    (many,) = spawned_findings(spec_of(slurm_env(2, 1, 0)), 1234)
    assert many.level == "error"  # the process group waits for ranks that never come
    assert "process 1234 all claim rank 0 of 2" in many.message
    assert spawned_findings(spec_of(slurm_env(2, 1, 0)), None) == []
    assert spawned_findings(spec_of(slurm_env(step="batch", nodes=2)), 1234) == []


def _emitted() -> set[str]:
    """Every finding id the package writes: ``id="..."`` and Slurm's ``warn(..., "what")``."""
    ids = set()
    for path in Path(clusterenv.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "id" and isinstance(keyword.value, ast.Constant):
                    ids.add(str(keyword.value.value))
            named = getattr(node.func, "id", None) == "warn" and len(node.args) > 1
            if named and isinstance(node.args[1], ast.Constant):
                ids.add("slurm." + str(node.args[1].value))
    return ids


def test_every_finding_is_in_the_table_of_docs_inspect() -> None:
    docs = Path(__file__).parents[1] / "docs"
    page = (docs / "inspect.md").read_text() + (docs / "commands" / "check.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`([a-z0-9.-]+)`", row.split("|")[1])}
    missing = _emitted() - listed
    assert missing == set(), "the tables of docs/inspect.md and docs/commands/check.md lack these"


def test_gpu_ids_that_do_not_start_at_zero_are_a_note() -> None:
    """A part of a node without cgroups: CUDA_VISIBLE_DEVICES=2,3 is right, but code that
    passes the ids as device indices (JAX issue 23452) asks for GPUs 2 and 3 of 0..1."""
    task = slurm_env(1, 2, 1, gpus_per_node=2) | {"CUDA_VISIBLE_DEVICES": "2,3"}
    spec = spec_of(task)
    (note,) = [f for f in diagnose(spec, task) if f.id == "gpus-not-from-zero"]
    assert note.level == "info"
    assert "local_device_ids=[2]" in note.message
    assert "gpus-not-from-zero" not in found(slurm_env(1, 2, 1, gpus_per_node=2))  # 0,1
    uuids = {"CUDA_VISIBLE_DEVICES": "GPU-5f1c6e2a-1111-2222-3333-444455556666"}
    assert "gpus-not-from-zero" not in found(slurm_env(1, 1, 0, gpus_per_node=1) | uuids)


def test_more_tasks_than_the_nodes_gpus_share_them() -> None:
    """srun --ntasks-per-node=2 --gpus-per-node=1: both ranks on GPU 0, where JAX's
    preallocation leaves the second none; fewer tasks than GPUs stays tasks-not-gpus."""
    shared = found(slurm_env(1, 2, 1, gpus_per_node=1))
    assert shared["slurm.gpus-shared"] == "warning"
    assert "slurm.tasks-not-gpus" not in shared
    idle = found(slurm_env(1, 1, 0, gpus_per_node=2))
    assert idle["slurm.tasks-not-gpus"] == "warning"
    assert "slurm.gpus-shared" not in idle
    assert not {"slurm.gpus-shared", "slurm.tasks-not-gpus"} & set(
        found(slurm_env(1, 2, 1, gpus_per_node=2))
    )


def test_torchrun_given_another_nodes_rank_stops_before_the_rendezvous(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`srun torchrun --node_rank=$SLURM_NODEID` in double quotes: the job script expands it
    once, to 0, so node 1's agent claims node 0 too and both wait for node 1 forever."""
    pytest.importorskip("torch")  # torchrun's own parser reads the options
    task = slurm_env(2, 1, 1)  # node 1 of 2
    torchrun = ["torch.distributed.run", "--nnodes=2", "--nproc-per-node=2", "train.py"]
    (error,) = command_findings(spec_of(task), [*torchrun[:2], "--node_rank=0", *torchrun[2:]])
    assert (error.id, error.level) == ("torchelastic.node-rank-mismatch", "error")
    assert "--node_rank=0 on node 1 of 2" in error.message
    with pytest.raises(PreflightError, match="node-rank-mismatch"):
        preflight(spec_of(task), task, command=[*torchrun[:2], "--node_rank=0", *torchrun[2:]])
    right = [*torchrun[:2], "--node_rank=1", *torchrun[2:]]
    c10d = [*torchrun[:2], "--rdzv-backend=c10d", "--rdzv-endpoint=cn001:29400", *torchrun[2:]]
    node_0 = spec_of(slurm_env(2, 1, 0))
    assert not command_findings(spec_of(task), right)
    assert not command_findings(spec_of(task), [*c10d[:2], "--node_rank=0", *c10d[2:]])
    assert not command_findings(node_0, [*torchrun[:2], "--node_rank=0", *torchrun[2:]])
    # The script's own --node_rank is not torchrun's; other commands are not looked at.
    assert not command_findings(spec_of(task), [*right, "--node_rank=0"])
    assert not command_findings(spec_of(task), ["train.py", "--node_rank=0"])
    assert not command_findings(spec_of(task), ["torchrun", "--no-such-option"])
    assert not command_findings(spec_of(task), ["torchrun", "--help"])
    assert capsys.readouterr() == ("", "")  # torchrun prints its own help and errors


def test_a_main_address_on_another_node_of_the_job_stops_rank_0() -> None:
    """MASTER_ADDR=$(scontrol show hostnames | head -n1) where task 0 runs elsewhere (the
    first line of SLURM_HOSTFILE): only rank 0 knows, from its own node's name."""
    rank_0 = slurm_env(2, 1, 0) | {"SLURMD_NODENAME": "cn002", "MASTER_ADDR": "cn001"}
    assert found(rank_0)["slurm.main-address-not-rank-0"] == "error"
    assert "slurm.main-address-not-rank-0" not in found(rank_0 | {"MASTER_ADDR": "cn002.local"})
    assert "slurm.main-address-not-rank-0" not in found(rank_0 | {"MASTER_ADDR": "10.0.0.2"})
    rank_1 = slurm_env(2, 1, 1) | {"MASTER_ADDR": "cn002"}
    assert "slurm.main-address-not-rank-0" not in found(rank_1)


def test_clusterenv_ignore_knows_every_finding_the_package_writes() -> None:
    """``CLUSTERENV_IGNORE`` accepts exactly the ids that exist: the engine's
    (``ENGINE_IDS``) and each source's ``finding_ids``."""
    from clusterenv._diagnosis.ignore import known_ids  # noqa: PLC0415

    assert known_ids() == _emitted()
