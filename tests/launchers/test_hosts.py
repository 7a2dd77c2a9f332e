"""Real launchers across the emulated hosts of netns-up.sh (issue 31): Slurm 22.05 and
24.11 with one slurmd per host at its own address (slurm-net-up.sh), torchrun with one agent per
host, Open MPI's mpirun reaching the other hosts through a remote shell. Each rank has its
own network stack and host name (n1..n3), and each host resolves the others' names through
its own /etc/hosts, so no test here needs ``MASTER_ADDR=127.0.0.1``; every task is checked
against the launcher's own truth (Slurm's node names, torch.distributed, MPI's ranks)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from clusterenv import ResourceSpec
from clusterenv._diagnosis.diagnose import diagnose
from tests.launchers.harness import (
    ON_HOST,
    Cluster,
    capture_name,
    launch,
    node_lists,
    record_capture,
    run,
    scontrol_hostnames,
    slurm_version,
)
from tests.launchers.test_frameworks import DDP, check_ddp, records
from tests.truth import check_mpi, check_slurm

RSH = Path(__file__).with_name("netns-rsh.sh")
HOSTS_VIEW = Path("/etc/netns/ce-n1/hosts")  # n1's own /etc/hosts (netns-up.sh)


#: A job of two CPUs per task whose srun starts one task: since 22.05 srun does not read
#: SLURM_CPUS_PER_TASK, so the task is bound to one CPU (the hosts' Slurm binds each task to
#: its cores); SRUN_CPUS_PER_TASK passes the job's value on.
CPU_STEPS = {
    "cpus-not-inherited": "sbatch --wait -o /dev/null -N1 -c 2 --wrap 'srun -n1 {task}'",
    "srun-cpus-per-task": "sbatch --wait -o /dev/null -N1 -c 2 "
    "--wrap 'SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK srun -n1 {task}'",
}


@pytest.mark.slurm
@pytest.mark.parametrize("name", sorted(CPU_STEPS))
def test_a_step_gets_the_cpus_its_task_is_bound_to(
    name: str, tmp_path: Path, net_slurm: Cluster
) -> None:
    """The task's affinity is the truth: cpus_per_rank follows it, and the finding
    slurm.cpus-not-inherited is there exactly where it is below SLURM_CPUS_PER_TASK
    (measured: 22.05's srun binds the task to one CPU, 24.11's to the job's two)."""
    (record,) = launch(CPU_STEPS[name], tmp_path, slurm=net_slurm)
    check_slurm([record], lambda nodes: scontrol_hostnames(nodes, net_slurm) or [])
    spec = ResourceSpec.model_validate(record["spec"])
    bound = record["cpus"] < int(record["env"]["SLURM_CPUS_PER_TASK"])
    assert spec.cpus_per_rank == record["cpus"]
    assert ("slurm.cpus-not-inherited" in {f.id for f in diagnose(spec, record["env"])}) is bound
    if name == "srun-cpus-per-task":  # the fix: the job's CPUs per task reach the step
        assert not bound
    elif net_slurm.version == "22.05":  # 24.11's srun passes them on by itself
        assert bound
    extra = {"version": slurm_version(net_slurm), "hostnames": node_lists([record], net_slurm)}
    record_capture(
        capture_name(name, net_slurm), CPU_STEPS[name], [record], {"launcher": "slurm", **extra}
    )


@pytest.mark.slurm
def test_srun_across_hosts_places_every_task_on_its_own_host(
    tmp_path: Path, net_slurm: Cluster
) -> None:
    records = launch("srun -N3 --ntasks-per-node=2 {task}", tmp_path, slurm=net_slurm)
    assert len(records) == 6
    check_slurm(records, lambda nodes: scontrol_hostnames(nodes, net_slurm) or [])
    assert {record["spec"]["master_addr"] for record in records} == {"n1"}


@pytest.mark.slurm
def test_the_probe_and_ddp_across_hosts_need_no_setting(tmp_path: Path, net_slurm: Cluster) -> None:
    """Host names resolve to each host's own address: gloo finds the network by itself."""
    result = run(
        "srun -N3 {python} -m clusterenv probe --backend gloo --timeout 20", tmp_path, 90, net_slurm
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: 3 ranks on 3 node(s) reached n1:" in result.stdout
    assert " through eth0" in result.stdout
    for n in (1, 2, 3):
        assert f"eth0 198.18.0.{n}" in result.stdout  # each rank's interface and address
    assert "rank 0's addresses: eth0 198.18.0.1, ib0 198.19.0.1" in result.stdout
    found = records(f"srun -N3 --ntasks-per-node=2 {{python}} {DDP} {{out}}", tmp_path, net_slurm)
    check_ddp(found, 6, "slurm")


@pytest.mark.slurm
def test_a_site_template_moves_the_ranks_to_the_high_speed_network(
    tmp_path: Path, net_slurm: Cluster
) -> None:
    line = "CLUSTERENV_MAIN_ADDR_TEMPLATE='{{host}}-ib' srun -N3 {python} -m clusterenv probe"
    result = run(line, tmp_path, 90, net_slurm)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: 3 ranks on 3 node(s) reached n1-ib:" in result.stdout
    assert " through ib0" in result.stdout


@pytest.mark.slurm
def test_an_arbitrary_distribution_meets_at_rank_0s_real_host(
    tmp_path: Path, net_slurm: Cluster
) -> None:
    """Task 0 on n2, the second node of the sorted list: on separate hosts the first node
    (n1) would be refused, which on one machine goes unnoticed."""
    line = (
        "printf 'n2\\nn1\\nn3\\n' > {out}/hosts.txt && SLURM_HOSTFILE={out}/hosts.txt "
        "srun -n3 --distribution=arbitrary {python} -m clusterenv probe --timeout 10"
    )
    result = run(line, tmp_path, 90, net_slurm)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: 3 ranks on 3 node(s) reached n2:" in result.stdout
    quick = line.replace("--timeout 10", "--timeout 3")
    wrong = run(f"export MASTER_ADDR=n1 && {quick}", tmp_path, 90, net_slurm)
    assert wrong.returncode != 0
    assert "rank 0 runs on n2, but the main address is 198.18.0.1, another host's" in wrong.stderr


@contextmanager
def debian_hosts_line() -> Iterator[None]:
    """n1's /etc/hosts maps n1 to 127.0.1.1, as Debian's installer writes it; the other
    hosts still map it to 198.18.0.1. Rewritten in place: ``ip netns exec`` bind-mounts
    this very file, in processes already running too."""
    saved = HOSTS_VIEW.read_text()
    HOSTS_VIEW.write_text(saved.replace("198.18.0.1 n1\n", "127.0.1.1 n1\n"))
    try:
        yield
    finally:
        HOSTS_VIEW.write_text(saved)


@pytest.mark.slurm
def test_rank_0s_own_name_on_loopback_is_named_and_the_advice_connects_gloo(
    tmp_path: Path, net_slurm: Cluster
) -> None:
    probe = "srun -N3 {python} -m clusterenv probe --timeout 10"
    with debian_hosts_line():
        failed = run(probe, tmp_path, 90, net_slurm)
        advised = "MASTER_ADDR=198.18.0.1 GLOO_SOCKET_IFNAME=eth0 NCCL_SOCKET_IFNAME=eth0"
        fixed = run(f"{advised} {probe} --backend gloo", tmp_path, 90, net_slurm)
    said = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert (
        "the main address 'n1' is 127.0.1.1 (loopback) on rank 0's node n1, but rank(s) 1, 2 "
        "reached it at 198.18.0.1" in said
    ), said
    assert said.count(f"export {advised} in every rank") == 3  # every rank is told
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "gloo: init_process_group and all_reduce over 3 ranks OK" in fixed.stdout


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun", "network")
def test_torchrun_across_hosts(tmp_path: Path) -> None:
    """One torchrun agent per host, two workers each, meeting at n1's rendezvous."""
    agents = [
        f"{ON_HOST} {n} {{python}} -m torch.distributed.run --nnodes 3 --node-rank {n - 1} "
        f"--nproc-per-node 2 --master-addr n1 --master-port {{port}} {DDP} {{out}} & "
        for n in (1, 2, 3)
    ]
    command = "".join(agents) + "for agent in $(jobs -p); do wait $agent || exit 1; done"
    found = records(command, tmp_path)
    check_ddp(found, 6, "torchelastic")
    assert {record["spec"]["num_nodes"] for record in found} == {3}


#: Each MPI's launcher across the hosts, its daemons started on n2 and n3 through the
#: remote shell, as over ssh; and the variables that are its own truth.
MPIRUN_ACROSS_HOSTS = {
    "openmpi": (
        f"{ON_HOST} 1 mpirun --allow-run-as-root --host n1:2,n2:2,n3:2 -np 6 "
        f"--mca plm_rsh_agent {RSH} -x MASTER_ADDR=n1 {{task}}",
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ),
    "mpich": (
        f"{ON_HOST} 1 mpirun.mpich -np 6 -ppn 2 -hosts n1,n2,n3 -launcher rsh "
        f"-launcher-exec {RSH} -genv MASTER_ADDR n1 {{task}}",
        ("PMI_RANK", "PMI_SIZE"),
    ),
}


@pytest.mark.mpi
@pytest.mark.usefixtures("mpirun", "mpich", "network")
@pytest.mark.parametrize("mpi", sorted(MPIRUN_ACROSS_HOSTS))
def test_mpirun_across_hosts(mpi: str, tmp_path: Path) -> None:
    command, (rank, size) = MPIRUN_ACROSS_HOSTS[mpi]
    records = launch(command, tmp_path)
    check_mpi(records, rank, size)
    assert {record["spec"]["num_nodes"] for record in records} == {3}
    assert {record["spec"]["master_addr"] for record in records} == {"n1"}


@contextmanager
def host_forgets_n1(view: Path = Path("/etc/netns/ce-n3/hosts")) -> Iterator[None]:
    """n3's /etc/hosts without n1 (a node whose name service lags): only n3 cannot resolve
    the main address."""
    saved = view.read_text()
    view.write_text("".join(line for line in saved.splitlines(True) if not line.endswith(" n1\n")))
    try:
        yield
    finally:
        view.write_text(saved)


#: Each rank runs the pre-flight check the adapters run, and prints what it found.
PREFLIGHT = "{python} -c 'import clusterenv; print([f.id for f in clusterenv.preflight()])'"


@pytest.mark.slurm
def test_the_preflight_check_names_what_one_host_lacks(tmp_path: Path, net_slurm: Cluster) -> None:
    """Issue 39 across real hosts: a main address one node cannot resolve stops that node's
    rank before it would hang (the others pass), and an interface a node does not have is
    named once per node; a correct launch prints nothing."""
    correct = run(f"srun -N3 {PREFLIGHT}", tmp_path, 90, net_slurm)
    assert correct.returncode == 0, correct.stderr
    assert correct.stdout.split("\n").count("[]") == 3
    assert "clusterenv:" not in correct.stderr
    with host_forgets_n1():
        lagging = run(f"srun -N3 {PREFLIGHT}", tmp_path, 90, net_slurm)
    assert lagging.returncode != 0
    assert lagging.stdout.split("\n").count("[]") == 2  # n1 and n2 resolve it
    assert lagging.stderr.count("clusterenv: error [main-address-unresolved]") == 1
    assert "PreflightError" in lagging.stderr
    missing = run(
        f"NCCL_SOCKET_IFNAME=hsn0 srun -N3 --ntasks-per-node=2 {PREFLIGHT}", tmp_path, 90, net_slurm
    )
    assert missing.returncode == 0, missing.stderr
    assert missing.stderr.count("clusterenv: warning [interface-missing]") == 3  # once per node
    assert missing.stdout.split("\n").count("['interface-missing']") == 6
    present = run(f"NCCL_SOCKET_IFNAME=ib0 srun -N3 {PREFLIGHT}", tmp_path, 90, net_slurm)
    assert "clusterenv:" not in present.stderr


#: torchrun under srun meeting at SLURM_LAUNCH_NODE_IPADDR, the address of the host srun
#: ran on (issue 47), expanded in each task: run by `clusterenv run`, whose pre-flight check
#: reads the launcher's options.
AT_LAUNCH_HOST = (
    "srun -N2 bash -c '{python} -m clusterenv run -m torch.distributed.run --nnodes=2"
    " --nproc-per-node=1 --rdzv-backend=c10d --rdzv-endpoint=$SLURM_LAUNCH_NODE_IPADDR:{port}"
    " --rdzv-id=lh {report} {out}'"
)


@pytest.mark.slurm
@pytest.mark.usefixtures("torchrun")
def test_a_rendezvous_at_the_host_srun_ran_on(tmp_path: Path, net_slurm: Cluster) -> None:
    """From the head (a login node), SLURM_LAUNCH_NODE_IPADDR is the head's address, where no
    agent hosts the rendezvous: named where the launcher starts (CLUSTERENV_STRICT stops it
    there, before the agents wait); the same line in a job script meets at the first node
    and trains, silent."""
    named = "clusterenv: warning [slurm.main-address-launch-host]"
    outside = run(f"CLUSTERENV_STRICT=1 {AT_LAUNCH_HOST}", tmp_path, 90, net_slurm)
    assert outside.returncode != 0
    assert named in outside.stderr
    assert not list((tmp_path / "records").glob("*.json"))  # no worker started
    # The job script written by run() itself, which fills in its placeholders.
    job = f"cat >job.sh <<'EOF'\n#!/bin/bash\n{AT_LAUNCH_HOST}\nEOF\n"
    inside = run(f"{job}sbatch --wait -N2 -o job.out job.sh", tmp_path, 120, net_slurm)
    log = (tmp_path / "job.out").read_text()
    assert inside.returncode == 0, log[-3000:]
    assert "main-address-launch-host" not in log
    assert len(list((tmp_path / "records").glob("*.json"))) == 2
