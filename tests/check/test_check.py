"""`clusterenv check` on job scripts (issue 49): each family of mistake named at its line
in a broken script and silent in its corrected twin; hostile scripts end in one short
error; the JSON keeps its published schema."""

from __future__ import annotations

import json
import os
import re
import textwrap
import time
from pathlib import Path

import pytest

from clusterenv._check import check
from clusterenv._check.report import CheckReport
from clusterenv._cli import main

SCHEMA = Path(__file__).parents[2] / "docs" / "schema" / "check-v1.json"
GOOD = """\
    #!/bin/bash
    #SBATCH --nodes=2
    #SBATCH --ntasks-per-node=4
    #SBATCH --gpus-per-node=4
    #SBATCH --cpus-per-task=8
    export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK
    srun python train.py
"""


def report(
    tmp_path: Path, script: str, *argv: str, env: dict[str, str] | None = None
) -> CheckReport:
    path = tmp_path / "job.sbatch"
    path.write_text(textwrap.dedent(script))
    return check(str(path), env or {}, argv)


def named(result: CheckReport) -> dict[str, int]:
    """Finding id -> its line, for every finding above a note."""
    return {f.id: f.line for f in result.findings if f.level != "info"}


def test_a_correct_script_is_predicted_task_by_task_and_silent(tmp_path: Path) -> None:
    result = report(tmp_path, GOOD)
    assert named(result) == {}
    (launch,) = result.launches
    assert (launch.line, launch.launcher, launch.nodes, launch.world_size) == (7, "srun", 2, 8)
    assert launch.ranks_per_node == 4
    assert [r.rank for r in launch.map[1].ranks] == [4, 5, 6, 7]
    assert result.allocation.lines == {
        "nodes": 2,
        "tasks_per_node": 3,
        "gpus_per_node": 4,
        "cpus_per_task": 5,
    }


def test_neural_lams_readme_gres_is_not_sbatch_syntax(tmp_path: Path) -> None:
    broken = GOOD.replace("--gpus-per-node=4", "--gres:gpu=4")
    result = report(tmp_path, broken)
    assert named(result) == {"slurm.directive-refused": 4}
    (finding,) = [f for f in result.findings if f.id == "slurm.directive-refused"]
    assert "--gres=gpu:4" in finding.fix
    assert named(report(tmp_path, GOOD.replace("--gpus-per-node=4", "--gres=gpu:4"))) == {}


@pytest.mark.parametrize(
    ("line", "finding"),
    [
        ("#SABTCH --time=1:00:00", "slurm.directive-misspelt"),
        ("# SBATCH --time=1:00:00", "slurm.directive-misspelt"),
        ("#SBATCH --ntask-per-node=4", "slurm.directive-near-miss"),
    ],
)
def test_a_directive_sbatch_skips_or_refuses(tmp_path: Path, line: str, finding: str) -> None:
    broken = GOOD.replace("    #SBATCH --nodes=2\n", f"    #SBATCH --nodes=2\n    {line}\n")
    assert named(report(tmp_path, broken)) == {finding: 3}
    disabled = GOOD.replace(
        "    #SBATCH --nodes=2\n", "    #SBATCH --nodes=2\n    ##SBATCH --time=1\n"
    )
    assert named(report(tmp_path, disabled)) == {}


def test_a_site_option_is_a_note_and_an_abbreviation_is_the_option(tmp_path: Path) -> None:
    site = GOOD.replace("#SBATCH --nodes=2", "#SBATCH --nodes=2 --container-image=pytorch")
    result = report(tmp_path, site)
    assert named(result) == {}
    assert [f.id for f in result.findings] == ["slurm.directive-site-option"]
    short = GOOD.replace("--ntasks-per-node=4", "--ntasks-per-n=4")  # getopt: unambiguous
    assert report(tmp_path, short).allocation.tasks_per_node == 4


def test_directives_after_the_first_command_and_a_late_shebang(tmp_path: Path) -> None:
    late = GOOD.replace("    export SRUN", "    #SBATCH --time=2:00:00\n    export SRUN")
    late = late.replace(
        "    #SBATCH --cpus-per-task=8\n", "    module load python\n    #SBATCH --cpus-per-task=8\n"
    )
    result = report(tmp_path, late)
    late_lines = [f.line for f in result.findings if f.id == "slurm.directive-after-command"]
    assert late_lines == [6, 7]
    assert result.allocation.cpus_per_task is None  # sbatch never read it
    shebang = "    # train\n" + GOOD
    assert named(report(tmp_path, shebang))["slurm.script-no-shebang"] == 1


def test_python_alone_in_a_multi_node_job_and_no_launcher(tmp_path: Path) -> None:
    alone = GOOD.replace("srun python train.py", "python train.py")
    assert named(report(tmp_path, alone)) == {"slurm.no-launcher": 7}
    nothing = GOOD.replace("srun python train.py", "# srun python train.py")
    assert named(report(tmp_path, nothing)) == {"slurm.no-launcher": 7}


def test_torchrun_for_two_nodes_once_in_the_batch_step(tmp_path: Path) -> None:
    script = GOOD.replace(
        "srun python train.py",
        "torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d "
        "--rdzv-endpoint=$(hostname):29500 train.py",
    ).replace("--ntasks-per-node=4", "--ntasks-per-node=1")
    assert named(report(tmp_path, script)) == {"torchelastic.launcher-once-for-nodes": 7}
    twin = script.replace("torchrun --nnodes", "srun torchrun --nnodes")
    result = report(tmp_path, twin)
    assert named(result) == {}
    assert (result.launches[0].launcher, result.launches[0].world_size) == ("srun+torchrun", 8)


def test_a_double_launch_and_a_torchrun_without_nnodes(tmp_path: Path) -> None:
    rdzv = "--rdzv-backend=c10d --rdzv-endpoint=$(hostname):29500"
    double = GOOD.replace(
        "srun python train.py", f"srun torchrun --nproc-per-node=4 --nnodes=2 {rdzv} t.py"
    )
    assert named(report(tmp_path, double)) == {"slurm.double-launch": 7}
    alone = double.replace("--ntasks-per-node=4", "--ntasks-per-node=1").replace(" --nnodes=2", "")
    assert named(report(tmp_path, alone)) == {"slurm.torchrun-one-node": 7}


def test_a_node_rank_is_expanded_by_the_shell_that_reads_it(tmp_path: Path) -> None:
    """In the job script $SLURM_NODEID is the batch step's 0 on every node; inside srun
    bash -c '...' each task expands its own."""
    torchrun = (
        "torchrun --nnodes=2 --nproc-per-node=1 --node_rank=$SLURM_NODEID "
        "--master_addr=$(hostname) train.py"
    )
    base = GOOD.replace("--ntasks-per-node=4", "--ntasks-per-node=1")
    once = report(tmp_path, base.replace("srun python train.py", f"srun {torchrun}"))
    assert named(once) == {"torchelastic.node-rank-mismatch": 7}
    each = report(tmp_path, base.replace("srun python train.py", f"srun bash -c '{torchrun}'"))
    assert named(each) == {}
    assert [r.rank for node in each.launches[0].map for r in node.ranks] == [0, 1]


def test_tasks_that_do_not_match_the_gpus(tmp_path: Path) -> None:
    fewer = GOOD.replace("--ntasks-per-node=4", "--ntasks-per-node=2")
    assert named(report(tmp_path, fewer)) == {"slurm.tasks-not-gpus": 7}
    ntasks = GOOD.replace("--ntasks-per-node=4", "--ntasks=8")
    assert "slurm.ntasks-without-per-node" in named(report(tmp_path, ntasks))


def test_a_step_that_asks_more_or_less_than_its_job(tmp_path: Path) -> None:
    more = report(tmp_path, GOOD.replace("srun python", "srun -N 4 python"))
    assert named(more) == {"slurm.step-exceeds-job": 7}
    fewer = report(tmp_path, GOOD.replace("srun python", "srun -N1 python"))
    assert named(fewer)["slurm.step-fewer-nodes"] == 7


def test_cpus_per_task_not_handed_to_srun(tmp_path: Path) -> None:
    lost = GOOD.replace("    export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\n", "")
    assert named(report(tmp_path, lost)) == {"slurm.cpus-not-inherited": 6}
    passed = lost.replace("srun python", "srun -c 8 python")
    assert named(report(tmp_path, passed)) == {}


def test_the_command_line_and_input_variables_win_over_directives(tmp_path: Path) -> None:
    result = report(tmp_path, GOOD, "-N", "3", env={"SBATCH_GPUS_PER_NODE": "2"})
    assert (result.allocation.nodes, result.allocation.gpus_per_node) == (3, 2)
    assert result.allocation.lines["nodes"] == 0


def test_a_launch_in_a_loop_is_not_modelled_never_guessed(tmp_path: Path) -> None:
    loop = GOOD.replace(
        "srun python train.py", "for i in 1 2; do\n      srun python train.py\n    done"
    )
    result = report(tmp_path, loop)
    assert result.launches == []
    assert [(n.line, n.why[:9]) for n in result.not_modelled] == [(8, "a launch ")]
    assert named(result) == {}


def test_silenced_findings_and_the_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.sbatch"
    path.write_text(textwrap.dedent(GOOD.replace("srun python", "python")))
    assert main(["check", "--offline", str(path)]) == 1
    assert "line 7: warning [slurm.no-launcher]" in capsys.readouterr().out
    assert main(["check", "--offline", "--ignore", "slurm.no-launcher", str(path)]) == 0
    capsys.readouterr()
    path.write_text(textwrap.dedent(GOOD))
    assert main(["check", "--offline", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["launches"][0]["world_size"] == 8
    assert main(["check", "--offline", "--", "sbatch", "-N", "1", str(path)]) == 0
    assert "world size 4" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content",
    [
        b"\x7fELF\x00\x01binary",
        b"#!/bin/bash\n" + b"x" * (2 << 20),
        b"#!/bin/bash\nsrun python '" + b"'\"" * 20000 + b"\n",
        b"#!/bin/bash\nsrun python " + b"$(" * 50000 + b"\n",
        b"#!/bin/bash\nexport A=" + b"${" * 50000 + b"\nsrun python $A\n",
        "#!/bin/bash\n#SBATCH --job-name=\u202eevil\x1b[31m\nsrun python t.py\n".encode(),
    ],
    ids=["binary", "huge", "quotes", "substitutions", "parameters", "control"],
)
def test_hostile_scripts_end_in_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "job.sbatch"
    path.write_bytes(content)
    start = time.perf_counter()
    code = main(["check", "--offline", str(path)])
    elapsed = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "\x1b" not in out + err
    assert "\u202e" not in out + err
    assert code in (0, 1, 2)
    if code == 2:
        assert len(err.splitlines()) == 1
    assert elapsed < 30, "linear in the script's size"  # a guard against a hang, not a benchmark


def test_the_json_keeps_its_published_schema() -> None:
    schema = CheckReport.model_json_schema()
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SCHEMA.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
    assert json.loads(SCHEMA.read_text()) == schema, "bump schema_version if a field changed"


def _docs_scripts() -> dict[str, str]:
    """Every job script of the docs: docs/examples/*.sbatch and each fenced block that
    begins with a shebang and holds an #SBATCH line."""
    docs = SCHEMA.parents[1]
    found = {
        str(p.relative_to(docs)): p.read_text() for p in sorted(docs.glob("examples/*.sbatch"))
    }
    for page in sorted(docs.rglob("*.md")):
        blocks = re.findall(r"^```(?:bash|sh)\n(#!.*?)^```$", page.read_text(), re.S | re.M)
        for index, block in enumerate(blocks):
            if "#SBATCH" in block:
                found[f"{page.relative_to(docs)}#{index}"] = block
    return found


@pytest.mark.parametrize(("name", "script"), sorted(_docs_scripts().items()))
def test_every_job_script_of_the_docs_is_silent(tmp_path: Path, name: str, script: str) -> None:
    result = report(tmp_path, script)
    assert named(result) == {}, name
    assert result.launches, f"{name}: no launch predicted"


def test_a_variable_nothing_sets_or_the_tasks_never_see(tmp_path: Path) -> None:
    typo = GOOD.replace("srun python train.py", "srun python train.py --nodes $SLURM_NNODE")
    assert named(report(tmp_path, typo)) == {"check.unset-variable": 7}
    site = GOOD.replace("srun python train.py", "srun python train.py --data $DATA_DIR")
    assert named(report(tmp_path, site)) == {}  # the submit shell may export it: a note
    hidden = GOOD.replace("export SRUN_CPUS_PER_TASK", "SRUN_CPUS_PER_TASK")
    assert named(report(tmp_path, hidden)) == {
        "check.not-exported": 7,
        "slurm.cpus-not-inherited": 7,
    }


def test_a_framework_count_that_contradicts_the_launch(tmp_path: Path) -> None:
    for argument in ("--num_nodes 4", "--trainer.num_nodes=4", "system.hardware.num_nodes=4"):
        wrong = GOOD.replace("srun python train.py", f"srun python train.py {argument}")
        assert named(report(tmp_path, wrong)) == {"check.argument-contradicts": 7}, argument
    right = GOOD.replace("srun python train.py", "srun python train.py --num_nodes 2 --devices 4")
    assert named(report(tmp_path, right)) == {}


def test_heterogeneous_and_array_jobs_say_what_is_not_modelled(tmp_path: Path) -> None:
    het = GOOD.replace(
        "    #SBATCH --cpus-per-task=8\n", "    #SBATCH hetjob\n    #SBATCH --nodes=8\n"
    )
    result = report(tmp_path, het)
    assert result.allocation.nodes == 2  # the first component's
    assert [(n.line, n.why[:20]) for n in result.not_modelled] == [(5, "a heterogeneous job:")]
    array = report(tmp_path, GOOD.replace("#SBATCH --nodes=2", "#SBATCH --nodes=2 --array=0-3"))
    assert array.allocation.array == "0-3"
    assert [n.line for n in array.not_modelled] == [2]


def test_only_torchrun_is_told_it_lacks_nnodes(tmp_path: Path) -> None:
    """The counts come from the torchrun source's own reading of its command line: an
    accelerate launch per node (its own --num_machines) is no torchrun without --nnodes."""
    base = GOOD.replace("--ntasks-per-node=4", "--ntasks-per-node=1")
    accelerate = "srun accelerate launch --num_machines 2 --multi_gpu train.py"
    result = report(tmp_path, base.replace("srun python train.py", accelerate))
    assert "slurm.torchrun-one-node" not in named(result)
