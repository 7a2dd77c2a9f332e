"""The pre-commit hook `clusterenv-check` (.pre-commit-hooks.yaml), run by the real
pre-commit from PyPI: a repository of job scripts is told the mistake of a broken script at
its line, and its corrected twin passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.available import require_modules

ROOT = Path(__file__).parents[1]
BROKEN = "#!/bin/bash\n#SBATCH --nodes=2\npython train.py\n"


def _hook(repo: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "clusterenv-check"]
    return subprocess.run(
        [*command, "--files", "job.sbatch"],
        cwd=repo,
        env={**os.environ, "PRE_COMMIT_HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_hook_names_the_mistake_and_passes_the_corrected_script(tmp_path: Path) -> None:
    require_modules("pre_commit")
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("pre-commit installs a hook from a git repository: this is no checkout")
    repo = tmp_path / "jobs"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    script = repo / "job.sbatch"
    script.write_text(BROKEN)
    subprocess.run(["git", "add", "job.sbatch"], cwd=repo, check=True)
    broken = _hook(repo, tmp_path / "cache")
    assert broken.returncode == 1, broken.stdout[-3000:] + broken.stderr[-3000:]
    assert "line 3: warning [slurm.no-launcher]" in broken.stdout
    script.write_text(BROKEN.replace("python train.py", "srun python train.py"))
    fixed = _hook(repo, tmp_path / "cache")
    assert fixed.returncode == 0, fixed.stdout[-3000:]
