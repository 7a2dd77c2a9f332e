"""The pytest plugin, run in inner pytest sessions (pytester)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.available import require_modules

EXAMPLE = Path(__file__).parents[1] / "docs" / "examples" / "test_train_topologies.py"


def test_fixtures_apply_and_restore_without_leaking(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the suite ran inside a real Slurm job under torchrun.
    monkeypatch.setenv("SLURM_JOB_ID", "999")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "outer")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    pytester.makepyfile(
        """
        import os
        import clusterenv
        from clusterenv.testing import local_env, torchrun_env

        def test_applies(cluster_env):
            env = cluster_env(torchrun_env(nnodes=2, nproc_per_node=2, rank=3))
            assert env["RANK"] == os.environ["RANK"] == "3"
            assert "SLURM_JOB_ID" not in os.environ  # the outer job is hidden
            assert clusterenv.detect_environment().node_rank == 1

        def test_no_leak_between_tests():
            assert "RANK" not in os.environ
            assert os.environ["SLURM_JOB_ID"] == "999"

        def test_fake_gpus(cluster_env, fake_gpus):
            cluster_env(local_env())
            assert fake_gpus(2) == ("0", "1")
            assert clusterenv.detect_environment().world_size == 2
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"  # the outer environment is back
    assert os.environ["TORCHELASTIC_RUN_ID"] == "outer"


def test_fake_gpus_patches_torch_too(pytester: pytest.Pytester) -> None:
    require_modules("torch")
    pytester.makepyfile(
        """
        import torch

        def test_two(fake_gpus):
            fake_gpus(2)
            assert torch.cuda.device_count() == 2 and torch.cuda.is_available()

        def test_restored():
            assert torch.cuda.device_count() == 0
        """
    )
    # A subprocess: pytester's in-process runs drop torch from sys.modules, and torch
    # cannot be imported twice into one process.
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_fake_gpus_refuses_what_no_node_has(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from clusterenv import ClusterEnvError

        @pytest.mark.parametrize("n", [-1, 10**9, 2.5, True])
        def test_count(fake_gpus, n):
            with pytest.raises(ClusterEnvError, match="is not a number of GPUs"):
                fake_gpus(n)

        def test_vendor(fake_gpus):
            with pytest.raises(ClusterEnvError, match="is not a GPU vendor"):
                fake_gpus(2, "acme")
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=5)


def test_the_documented_example_passes(pytester: pytest.Pytester) -> None:
    require_modules("lightning")
    pytester.makepyfile(**{EXAMPLE.stem: EXAMPLE.read_text()})
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=4)
