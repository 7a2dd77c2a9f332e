"""Issue 47, live: the pre-flight check stops a rank only on definitive evidence. A real
name server (name_server.py, seen through glibc's resolver in a mount namespace) that
answers late or says "try again" lets a correct two-rank DDP launch train, one that says
"no such name" stops it with the fix; a finding silenced by id lets a strict launch train;
and a launcher for two nodes started once in a two-node job script is stopped before its
rendezvous waits, on both Slurm releases, while one agent per node trains in silence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.launchers.harness import Cluster, run
from tests.truth import check_torchrun

NAME_SERVER = Path(__file__).with_name("name_server.py")
DDP = Path(__file__).with_name("ddp_train.py")
RULES = "late.test=late:4 again.test=again:1 gone.test=none"
#: Two ranks of an env:// launch (a job script's own loop), on two "nodes" of one host.
RANK = f"LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 {{python}} {DDP} {{out}}"
RANKS = (
    f"RANK=0 {RANK} & r0=$!; RANK=1 {RANK} & r1=$!; "
    "wait $r0; first=$?; wait $r1; exit $((first | $?))"
)


def ddp(name: str, tmp_path: Path, settings: str = "") -> tuple[int, str, list[dict[str, Any]]]:
    """Exit status, standard error and records of the two ranks meeting at ``name``."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is missing")
    ranks = f"export MASTER_ADDR={name} MASTER_PORT={{port}} {settings}; {RANKS}"
    line = f"unshare -m --propagation private {{python}} {NAME_SERVER} {RULES} -- bash -c '{ranks}'"
    result = run(line, tmp_path, timeout=180)
    records = [json.loads(path.read_text()) for path in (tmp_path / "records").glob("*.json")]
    return result.returncode, result.stderr, records


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_a_name_service_that_answers_late_or_says_try_again_is_no_reason_to_stop(
    tmp_path: Path,
) -> None:
    """Late (4 s, past the check's 3 s): a warning on each node, and torch, which asks
    again, trains. "Try again" for 1 s: asked again within the budget, trains, silent."""
    code, stderr, records = ddp("late.test", tmp_path / "late")
    assert code == 0, stderr[-3000:]
    assert sorted(record["torch"]["rank"] for record in records) == [0, 1]
    assert all(record["preflight"] == ["main-address-lookup-slow"] for record in records)
    assert "warning [main-address-lookup-slow]" in stderr

    code, stderr, records = ddp("again.test", tmp_path / "again")
    assert code == 0, stderr[-3000:]
    assert len(records) == 2
    assert all(record["preflight"] == [] for record in records)
    assert "clusterenv:" not in stderr, stderr


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_a_name_that_does_not_exist_stops_every_rank_with_the_fix(tmp_path: Path) -> None:
    code, stderr, records = ddp("gone.test", tmp_path)
    assert code != 0, stderr[-3000:]
    assert not records
    assert (
        "error [main-address-unresolved]: the main address 'gone.test' does not resolve" in stderr
    )
    assert "export MASTER_ADDR as a name every node resolves" in stderr


@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_a_finding_silenced_by_id_lets_a_strict_launch_train(tmp_path: Path) -> None:
    """CLUSTERENV_STRICT=1 makes the late name service's warning stop the ranks; naming it
    in CLUSTERENV_IGNORE silences it alone, and the same launch trains."""
    code, stderr, records = ddp("late.test", tmp_path / "strict", "CLUSTERENV_STRICT=1")
    assert code != 0, stderr[-3000:]
    assert not records
    assert "stops this rank (0) before it hangs: main-address-lookup-slow" in stderr

    silenced = "CLUSTERENV_STRICT=1 CLUSTERENV_IGNORE=main-address-lookup-slow"
    code, stderr, records = ddp("late.test", tmp_path / "silenced", silenced)
    assert code == 0, stderr[-3000:]
    assert len(records) == 2
    assert all(record["preflight"] == [] for record in records)
    assert "clusterenv:" not in stderr, stderr


#: One torchrun for two nodes, wrapped by `clusterenv run`, meeting at a c10d rendezvous.
ELASTIC = (
    "{python} -m clusterenv run -m torch.distributed.run --nnodes=2 --nproc-per-node=1 "
    "--rdzv-backend=c10d --rdzv-endpoint=127.0.0.1:{port} --rdzv-id=once {report} {out}"
)


@pytest.mark.slurm
@pytest.mark.torchrun
@pytest.mark.usefixtures("torchrun")
def test_a_launcher_for_two_nodes_started_once_in_the_job_script_is_stopped(
    tmp_path: Path, slurm_cluster: Cluster
) -> None:
    """Family (a): torchrun --nnodes=2 typed in the job script of a two-node job runs on the
    first node only and waits for a second agent that never starts. clusterenv run stops it
    at once; one agent per node (srun --ntasks-per-node=1) trains with nothing said."""
    once = f"sbatch --wait -o {{out}}/job.out -N2 --ntasks-per-node=1 --wrap '{ELASTIC}'"
    result = run(once, tmp_path, slurm=slurm_cluster)
    log = (tmp_path / "records" / "job.out").read_text()
    assert result.returncode != 0, log
    assert "error [torchelastic.launcher-once-for-nodes]" in log, log
    assert not list((tmp_path / "records").glob("*.json"))  # no worker started

    each = f"srun -N2 --ntasks-per-node=1 -K {ELASTIC}"
    result = run(each, tmp_path / "each", slurm=slurm_cluster)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "clusterenv:" not in result.stderr, result.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "each/records").glob("*.json")]
    assert len(records) == 2
    check_torchrun(records)
