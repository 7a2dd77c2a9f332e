"""clusterenv.lightning against both Lightning packages: kwargs, real Trainers, requeue."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import signal
import subprocess
import sys
import warnings
from types import SimpleNamespace
from typing import Any

import pytest

import clusterenv.lightning as cl
from clusterenv import ClusterEnvError, MissingDependencyError, ResourceSpec, detect_environment
from clusterenv.lightning._kwargs import parse_devices
from clusterenv.testing import sagemaker_env
from tests.available import require_modules
from tests.envs import batch_step, salloc_shell, srun_task, torchrun_worker

require_modules("lightning", "pytorch_lightning")

PACKAGES: list[cl.Package] = ["lightning", "pytorch_lightning"]
ENVIRONMENTS = {
    "lightning": "lightning.fabric.plugins.environments",
    "pytorch_lightning": "lightning_fabric.plugins.environments",
}
TRAINERS = {"lightning": "lightning.pytorch", "pytorch_lightning": "pytorch_lightning"}


def spec_of(env: dict[str, str], gpus: tuple[str, ...] = ()) -> ResourceSpec:
    return detect_environment(env, gpu_probe=lambda: gpus)


def environments(package: str) -> Any:
    return importlib.import_module(ENVIRONMENTS[package])


def geometry(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(kwargs[key] for key in ("num_nodes", "devices", "accelerator", "strategy"))


@pytest.fixture(params=PACKAGES)
def package(request: pytest.FixtureRequest) -> cl.Package:
    name: cl.Package = request.param
    return name


@pytest.fixture
def in_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Put a launcher environment into os.environ (for Trainer and detection)."""

    def apply(env: dict[str, str]) -> None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)

    return apply


def make_trainer(package: str, kwargs: dict[str, Any]) -> Any:
    trainer_class = importlib.import_module(TRAINERS[package]).Trainer
    return trainer_class(
        **kwargs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


# -- kwargs for every source -----------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "gpus", "expected", "plugin"),
    [
        (srun_task([2, 2], 3), (), (2, 2, "cpu", "ddp"), "SLURMEnvironment"),
        (srun_task([1], 0), (), (1, 1, "cpu", "auto"), "SLURMEnvironment"),
        (srun_task([4, 4], 5, gpus_on_node=4), (), (2, 4, "cuda", "ddp"), "SLURMEnvironment"),
        (torchrun_worker(3, nnodes=2), (), (2, 2, "cpu", "ddp"), "ClusterEnvironment"),
        ({"CUDA_VISIBLE_DEVICES": ""}, (), (1, 1, "cpu", "auto"), "LightningEnvironment"),
        ({}, ("0", "1"), (1, 2, "cuda", "ddp"), "LightningEnvironment"),
        (batch_step("cn001", ntasks_per_node=2), (), (1, 2, "cpu", "ddp"), "LightningEnvironment"),
        (batch_step("cn001", gpus_per_node=4), (), (1, 4, "cuda", "ddp"), "LightningEnvironment"),
        (sagemaker_env(2, 1, gpus=4), tuple("0123"), (2, 4, "cuda", "ddp"), "LightningEnvironment"),
    ],
    ids=[
        "srun-2x2",
        "srun-1",
        "srun-gpus",
        "torchrun-2x2",
        "local-cpu",
        "local-2gpus",
        "batch-cpu",
        "batch-gpus",
        "sagemaker-node-2x4",
    ],
)
def test_trainer_kwargs_follow_the_spec(
    package: cl.Package,
    env: dict[str, str],
    gpus: tuple[str, ...],
    expected: tuple[Any, ...],
    plugin: str,
) -> None:
    spec = spec_of(env, gpus)
    kwargs = cl.trainer_kwargs(spec, package=package)
    assert geometry(kwargs) == expected
    assert kwargs["use_distributed_sampler"] is True
    [environment] = kwargs["plugins"]
    assert isinstance(environment, getattr(environments(package), plugin))
    if spec.role.value == "node":  # Lightning starts the node's ranks, at the platform's address
        assert not environment.creates_processes_externally
        assert (environment.main_address, environment.main_port, environment.node_rank()) == (
            spec.master_addr,
            spec.master_port,
            spec.node_rank,
        )
    if spec.role.value == "rank":
        assert environment.creates_processes_externally
        assert (environment.world_size(), environment.global_rank()) == (
            spec.world_size,
            spec.global_rank,
        )
        assert (environment.local_rank(), environment.node_rank()) == (
            spec.local_rank,
            spec.node_rank,
        )
        assert (environment.main_address, environment.main_port) == (
            spec.master_addr,
            spec.master_port,
        )


def test_evaluation_turns_the_sampler_off_and_overrides_pass_through() -> None:
    kwargs = cl.trainer_kwargs(
        spec_of(srun_task([2], 1)), evaluation=True, package="lightning", max_epochs=3
    )
    assert kwargs["use_distributed_sampler"] is False
    assert kwargs["max_epochs"] == 3
    assert "use_distributed_sampler" not in cl.fabric_kwargs(
        spec_of(srun_task([2], 1)), package="lightning"
    )


@pytest.mark.parametrize(
    ("argv", "devices"),
    [
        ([], None),
        (["--devices", "2"], 2),
        (["--devices", "0", "1"], [0, 1]),
        (["--devices", "0,"], [0]),
    ],
)
def test_add_trainer_args_is_neural_lam_compatible(argv: list[str], devices: Any) -> None:
    args = cl.add_trainer_args(argparse.ArgumentParser()).parse_args(argv)
    assert args.num_nodes is None
    assert parse_devices(args.devices) == devices


def test_arguments_come_from_parsed_args(in_env: Any) -> None:
    in_env(srun_task([2, 2], 1))
    args = cl.add_trainer_args(argparse.ArgumentParser()).parse_args(["--num_nodes", "2"])
    assert geometry(cl.trainer_kwargs(args, package="lightning")) == (2, 2, "cpu", "ddp")
    assert cl.trainer_kwargs(package="lightning")["num_nodes"] == 2  # None: detect


@pytest.mark.parametrize(
    ("spec", "given", "words"),
    [
        (srun_task([1]), {"num_nodes": 2}, ["num_nodes=2", "1 node(s)", "srun -N"]),
        (srun_task([1, 1]), {"devices": ["0", "1"]}, ["devices=2", "1 rank(s)", "ntasks-per-node"]),
        (torchrun_worker(0), {"devices": 1}, ["devices=1", "nproc_per_node"]),
        (srun_task([2, 1]), {}, ["3 ranks on 2 nodes", "--ntasks-per-node"]),
        (salloc_shell(), {}, ["salloc shell", "srun python"]),
        (batch_step("cn[001-002]"), {}, ["batch step", "2 nodes", "--num_nodes 1"]),
        (batch_step("cn001"), {"num_nodes": 2}, ["num_nodes=2", "srun"]),
        ({"CUDA_VISIBLE_DEVICES": "0"}, {"devices": 2}, ["sees 1 GPU"]),
        ({"CUDA_VISIBLE_DEVICES": ""}, {"devices": [0, 1]}, ["GPU indices", "sees 0 GPU"]),
        ({}, {"devices": "many"}, ["devices='many'", "--devices auto"]),
        ({}, {"devices": 0}, ["asks for no device"]),
        ({}, {"devices": [1, 1]}, ["repeats"]),
    ],
    ids=[
        "nodes-vs-step",
        "devices-vs-tasks",
        "devices-vs-torchrun",
        "uneven-tasks",
        "salloc-shell",
        "multi-node-batch",
        "batch-nodes",
        "too-many-gpus",
        "indices-on-cpu",
        "not-a-count",
        "zero",
        "repeated",
    ],
)
def test_contradictions_raise_with_the_fix(
    spec: dict[str, str], given: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(ClusterEnvError) as error:
        cl.trainer_kwargs(spec_of(spec), package="lightning", **given)
    for word in words:
        assert word in str(error.value)
    assert "HINT: " in str(error.value)


def test_a_contradiction_names_the_variable_when_detected(in_env: Any) -> None:
    in_env(srun_task([1]))
    with pytest.raises(ClusterEnvError, match="SLURM_STEP_NUM_NODES"):
        cl.trainer_kwargs(package="lightning", num_nodes=2)


def test_a_single_node_batch_step_may_train_on_its_node() -> None:
    kwargs = cl.trainer_kwargs(spec_of(batch_step("cn[001-002]")), package="lightning", num_nodes=1)
    assert (kwargs["num_nodes"], kwargs["devices"]) == (1, 1)


def test_per_task_gpus_that_lightning_cannot_address_raise() -> None:
    env = srun_task([2], 1, gpus_on_node=1) | {"CUDA_VISIBLE_DEVICES": "1"}
    with pytest.raises(ClusterEnvError, match=r"cuda:1.*gpu-bind=none"):
        cl.trainer_kwargs(spec_of(env), package="lightning")


# -- real Trainers in both namespaces --------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        srun_task([2, 2], 3, job_name="interactive"),
        srun_task([3, 3], 4),
        torchrun_worker(3, nnodes=2),
    ],
    ids=["srun-interactive-name", "srun-3x2", "torchrun"],
)
def test_a_trainer_sees_the_specs_ranks(
    package: cl.Package, in_env: Any, env: dict[str, str]
) -> None:
    in_env(env)
    spec = detect_environment()
    trainer = make_trainer(package, cl.trainer_kwargs(package=package))
    assert (trainer.world_size, trainer.global_rank, trainer.local_rank) == (
        spec.world_size,
        spec.global_rank,
        spec.local_rank,
    )
    assert (trainer.node_rank, trainer.num_nodes) == (spec.node_rank, spec.num_nodes)


def test_ntasks_without_ntasks_per_node_is_accepted(package: cl.Package, in_env: Any) -> None:
    """Lightning's SLURMEnvironment refuses it; the job is valid."""
    env = srun_task([2, 2], 2)
    env.pop("SLURM_NTASKS_PER_NODE", None)
    in_env(env)
    assert make_trainer(package, cl.trainer_kwargs(package=package)).world_size == 4


def test_the_trainers_own_devices_are_checked_at_launch(package: cl.Package) -> None:
    environment = cl.cluster_environment(spec_of(srun_task([2, 2], 0)), package=package)
    with pytest.raises(ClusterEnvError, match="the Trainer's devices=1"):
        environment.validate_settings(num_devices=1, num_nodes=2)
    environment.validate_settings(num_devices=2, num_nodes=2)


@pytest.mark.parametrize(("env", "requeue"), [(srun_task([1]), True), (torchrun_worker(0), False)])
def test_slurm_requeue_handler_is_installed(
    package: cl.Package, in_env: Any, env: dict[str, str], requeue: bool
) -> None:
    in_env(env)
    trainer = make_trainer(package, cl.trainer_kwargs(package=package))
    before = signal.getsignal(signal.SIGUSR1)
    trainer._signal_connector.register_signal_handlers()
    try:
        handler = signal.getsignal(signal.SIGUSR1)
        handlers = getattr(handler, "signal_handlers", [])
        names = [getattr(h, "__name__", "") for h in handlers]
        assert ("_slurm_sigusr_handler_fn" in names) is requeue
    finally:
        trainer._signal_connector.teardown()
    assert signal.getsignal(signal.SIGUSR1) == before


def test_auto_requeue_can_be_turned_off(package: cl.Package) -> None:
    environment = cl.cluster_environment(
        spec_of(srun_task([1])), package=package, auto_requeue=False
    )
    assert environment.auto_requeue is False


# -- which package ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("imports", "expected"),
    [("pytorch_lightning", "pytorch_lightning"), ("lightning", "lightning"), ("os", "lightning")],
)
def test_the_package_the_script_imported_is_chosen(imports: str, expected: str) -> None:
    code = (
        f"import sys, {imports}, clusterenv.lightning as cl; print(cl.resolve_package()); "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    chosen, torch_imported = result.stdout.split()
    assert chosen == expected
    if imports == "os":
        assert torch_imported == "False", "choosing a package must not import it"


def test_both_packages_imported_is_ambiguous() -> None:
    for name in PACKAGES:
        importlib.import_module(name)
    with pytest.raises(ClusterEnvError, match="package='lightning' or package='pytorch_lightning'"):
        cl.resolve_package()
    assert cl.resolve_package("pytorch_lightning") == "pytorch_lightning"
    with pytest.raises(ClusterEnvError, match="not a Lightning package"):
        cl.resolve_package("torch")  # type: ignore[arg-type]


def test_missing_lightning_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PACKAGES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError, match=r"clusterenv-hpc\[lightning\]"):
        cl.trainer_kwargs(spec_of({}))


# -- rank zero --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (srun_task([2], 0), True),
        (srun_task([2], 1), False),
        (torchrun_worker(1), False),
        ({"CUDA_VISIBLE_DEVICES": ""}, True),
        ({"CUDA_VISIBLE_DEVICES": "", "LOCAL_RANK": "1"}, False),  # spawned by Lightning
    ],
)
def test_rank_zero_before_torch_distributed(
    in_env: Any, capsys: pytest.CaptureFixture[str], env: dict[str, str], expected: bool
) -> None:
    in_env(env)
    assert cl.is_rank_zero() is expected
    cl.rank_zero_print("hello")
    assert (capsys.readouterr().out == "hello\n") is expected


# -- follow_allocation / clusterenv run -------------------------------------------------


def test_follow_allocation_fills_in_defaults_only(package: cl.Package, in_env: Any) -> None:
    in_env(srun_task([2, 2], 3))
    trainer_class = importlib.import_module(TRAINERS[package]).Trainer
    original = trainer_class.__init__
    with cl.follow_allocation():
        trainer = make_trainer(package, {"num_nodes": 1, "devices": "auto"})
        assert (trainer.num_nodes, trainer.num_devices, trainer.world_size) == (2, 2, 4)
        assert trainer.global_rank == 3
        with pytest.raises(ClusterEnvError, match="num_nodes=3"):
            make_trainer(package, {"num_nodes": 3})
    assert trainer_class.__init__ is original


def test_follow_allocation_reads_neural_lams_device_list_as_a_count(
    package: cl.Package, in_env: Any
) -> None:
    in_env(torchrun_worker(1, nproc_per_node=2))
    with cl.follow_allocation():
        trainer = make_trainer(package, {"devices": [2], "strategy": "auto"})
    assert (trainer.num_devices, trainer.world_size, trainer.global_rank) == (2, 2, 1)


def test_follow_allocation_warns_when_dataloader_workers_outnumber_the_cpus(
    package: cl.Package, in_env: Any
) -> None:
    """``srun --cpus-per-task=4``: a DataLoader with 8 workers gets a warning with the fix
    (3 workers and the training process); the script's own callbacks are kept."""
    torch_data = importlib.import_module("torch.utils.data")
    in_env(srun_task([1], 0) | {"SLURM_CPUS_PER_TASK": "4"})
    mine = importlib.import_module(f"{TRAINERS[package]}.callbacks").Callback()
    with cl.follow_allocation(detect_environment(cpu_probe=lambda: 64)):
        trainer = make_trainer(package, {"callbacks": [mine]})
    (check,) = [c for c in trainer.callbacks if type(c).__name__ == "ClusterEnvWorkerCheck"]
    assert mine in trainer.callbacks
    for workers, warns in ((8, True), (3, False)):
        loader = torch_data.DataLoader(list(range(4)), num_workers=workers)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check.on_train_start(SimpleNamespace(train_dataloader=loader), None)
        said = [str(w.message) for w in caught]
        assert bool(said) is warns, said
        if warns:
            assert "starts 8 worker processes but this rank may use 4 CPU(s)" in said[0]
            assert "num_workers=3" in said[0]


def test_run_script_runs_it_as_main(tmp_path: Any, in_env: Any, capsys: Any) -> None:
    in_env(srun_task([2], 1))
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, lightning.pytorch as pl\n"
        "if __name__ == '__main__':\n"
        "    t = pl.Trainer(logger=False, enable_checkpointing=False)\n"
        "    print(sys.argv[1:], t.world_size, t.global_rank)\n"
    )
    cl.run_script(str(script), ["--epochs", "1"])
    assert capsys.readouterr().out.splitlines()[-1] == "['--epochs', '1'] 2 1"


def test_the_worker_check_reads_every_shape_of_train_dataloader() -> None:
    from clusterenv.lightning._workers import _loaders, oversubscribed  # noqa: PLC0415

    spec = detect_environment(
        srun_task([1], 0) | {"SLURM_CPUS_PER_TASK": "2"}, cpu_probe=lambda: 64
    )
    many, few = SimpleNamespace(num_workers=4), SimpleNamespace(num_workers=1)
    assert oversubscribed(spec, [few]) is None
    assert oversubscribed(spec, [few, many]) is not None
    unknown = detect_environment(srun_task([1], 0), cpu_probe=lambda: None)
    assert oversubscribed(unknown, [many]) is None  # nothing known: no warning
    assert _loaders({"a": few, "b": [many, (few,)]}) == [few, many, few]
    assert _loaders(SimpleNamespace(flattened=[few, many])) == [few, many]
    assert _loaders(None) == []
