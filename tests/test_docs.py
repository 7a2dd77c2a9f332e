"""The documentation's examples are run, and every error class is documented."""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from importlib.metadata import metadata
from pathlib import Path

import pytest

import clusterenv
import clusterenv.exceptions
from clusterenv import ClusterEnvError, ProbeError
from clusterenv.testing import slurm_env
from tests.envs import clusterenv_command

ROOT = Path(__file__).parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_examples_in_the_docs_run(page: Path) -> None:
    """The ``pycon`` blocks: fences become blank lines so that they end the expected output."""
    text = re.sub(r"^\s*```.*$", "", page.read_text(), flags=re.MULTILINE)
    test = doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_every_error_class_has_a_section() -> None:
    text = (ROOT / "docs" / "errors.md").read_text()
    classes = {
        value
        for value in vars(clusterenv.exceptions).values()
        if isinstance(value, type) and issubclass(value, ClusterEnvError)
    } | {ProbeError}
    for cls in classes:
        assert f"\n## {cls.__name__}\n" in text, f"docs/errors.md lacks {cls.__name__}"


def test_every_include_marker_is_well_formed_and_names_a_file() -> None:
    """A marker the formatter spaced out (``--8 < --``) renders as a line of garbage, and
    ``mkdocs build --strict`` does not notice."""
    for page in PAGES:
        for line in page.read_text().splitlines():
            if line.lstrip().startswith("--8"):
                found = re.fullmatch(r'--8<-- "([^"]+)"', line.strip())
                assert found, f"{page.relative_to(ROOT)}: malformed include {line!r}"
                assert (ROOT / found[1]).is_file(), f"{page.relative_to(ROOT)}: no {found[1]}"


def test_python_blocks_use_only_names_they_define() -> None:
    """Each page's ``python`` blocks (includes expanded), in page order as a reader runs
    them: no name used that no block imports or defines (ruff's F821), so none raises
    NameError as written."""
    failures = []
    for page in PAGES:
        text = re.sub(
            r'^--8<-- "([^"]+)"$', lambda m: (ROOT / m[1]).read_text(), page.read_text(), flags=re.M
        )
        blocks = re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
        if not blocks:
            continue
        result = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821", "-"],
            input="\n".join(blocks),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode:
            failures.append(f"{page.relative_to(ROOT)}:\n{result.stdout}")
    assert not failures, "\n".join(failures)


def _python_blocks(page: Path) -> str:
    """The page's own ``python`` blocks in page order: not an include (the file's own test
    runs it) nor a block titled with the file it shows (tests/test_adding_a_source.py writes
    and tests those)."""
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.MULTILINE | re.DOTALL)
    return "\n".join(block for block in blocks if not block.startswith("--8<--"))


#: clusterenv's adapters, each named after the framework it imports.
ADAPTERS = ("jax", "torch", "lightning")
RUNNABLE = [p for p in [ROOT / "README.md", *PAGES] if _python_blocks(p)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_python_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    """As a reader on a plain machine runs them: one script of the page's blocks, in a new
    interpreter without launcher variables."""
    code = _python_blocks(page)
    imported = re.findall(r"^(?:import|from) ([a-z_.]+)", code, re.MULTILINE)
    for module in imported:  # clusterenv.jax needs jax: its adapters import their framework
        name = module.removeprefix("clusterenv.").split(".")[0]
        if not module.startswith("clusterenv.") or name in ADAPTERS:  # not .testing: ours
            pytest.importorskip(name)
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{page.relative_to(ROOT)}:\n{result.stderr[-3000:]}"


#: Each page's ``bash`` blocks: the test that runs them as written, or the test that runs the
#: same launch here and why the block itself cannot run (a page shows a site's GPU job).
BASH_BLOCKS = {
    "README.md": "nox -s docs runs the first command as written (the second is this suite); "
    "the anemoi line: tests/launchers/anemoi (srun 2x1, 2x2 with these overrides; no GPUs here)",
    "docs/index.md": "the README's block (nox -s docs runs its first command)",
    "docs/neural-lam.md": "torchrun.sh: tests/launchers/test_fits.py as written; neural-lam.sbatch "
    "asks 8 GPUs (bash -n checks it; tests/launchers/neural_lam trains the same srun shape on CPU)",
    "docs/frameworks/shell.md": "tests/launchers/test_frameworks.py runs each srun line as written",
    "docs/integrations/anemoi.md": "tests/launchers/anemoi: the same srun and torchrun launches "
    "with these overrides, on CPU (the job script asks GPUs)",
    "docs/integrations/neural-lam.md": "tests/launchers/neural_lam: each block's launches (the "
    "PBS one: test_train_model_across_two_pbs_hosts)",
    "docs/commands/inspect.md": "as written under the builders' srun: "
    "test_the_command_pages_commands_run_...; live: tests/launchers (every shape)",
    "docs/commands/capture.md": "tests/launchers/capture.py records every live task this way; "
    "as written under the builders' srun: test_the_command_pages_commands_run_...",
    "docs/commands/env.md": "as written under the builders' srun: "
    "test_the_command_pages_commands_run_...; live: tests/launchers/test_frameworks.py",
    "docs/commands/probe.md": "tests/launchers/test_probe.py (srun, torchrun, --backend gloo)",
    "docs/commands/run.md": "tests/launchers/neural_lam (srun, torchrun), test_fits.py and "
    "test_launches.py (a wrapped torchrun's node rank)",
    "docs/commands/check.md": "tests/check/test_check.py (each family, the command line, "
    "--json); live: tests/launchers/test_check.py submits each shape to both Slurm releases",
}


def test_every_output_block_is_what_the_command_prints_and_every_command_block_runs() -> None:
    """A ``text`` block is generated from the command (tests/docs_outputs.py) or includes a
    file a test compares; a ``bash`` block is listed in BASH_BLOCKS with what runs it."""
    with_commands = set()
    for page in [ROOT / "README.md", *PAGES]:
        name = str(page.relative_to(ROOT))
        text = re.sub(
            r"<!-- generated: .*?<!-- end generated -->", "", page.read_text(), flags=re.S
        )
        for language, body in re.findall(r"^```(text|bash)\n(.*?)^```", text, re.M | re.S):
            if language == "bash":
                assert name in BASH_BLOCKS, f"{name}: a command block no test runs:\n{body}"
                with_commands.add(name)
            else:  # an included output is a file its test compares (tests/data/reports)
                assert body.startswith("--8<--"), f"{name}: an output no command printed:\n{body}"
    assert with_commands == set(BASH_BLOCKS), "BASH_BLOCKS names a page without command blocks"


def _srun(line: str, cwd: Path) -> None:
    """``srun [-o PATTERN] [--ntasks-per-node=1] clusterenv ARGS`` in every task of a job of
    two nodes with two tasks each, as the builders make their variables (``%t``: the task);
    rank 0 on 127.0.0.1, as under the loopback clusters (their node names resolve nowhere)."""
    words = shlex.split(line)
    start = words.index("clusterenv")
    options, command = words[1:start], words[start:]
    per_node = 1 if "--ntasks-per-node=1" in options else 2
    pattern = options[options.index("-o") + 1] if "-o" in options else None
    for task in range(2 * per_node):
        launch = slurm_env(nodes=2, tasks_per_node=per_node, procid=task, within="sbatch")
        env = dict(launch, MASTER_ADDR="127.0.0.1")
        result = clusterenv_command(*command[1:], env=env, cwd=cwd)
        assert result.returncode == 0, f"{line} (task {task}):\n{result.stderr}"
        if pattern:
            (cwd / pattern.replace("%t", str(task))).write_text(result.stdout)


@pytest.mark.parametrize("name", ["inspect", "capture", "env"])
def test_the_command_pages_commands_run_under_the_builders_launches(
    name: str, tmp_path: Path
) -> None:
    """Each `clusterenv` line of the page's examples as written: under srun, in every task
    of a launch the builders make (clusterenv.testing); alone, on this machine."""
    page = (ROOT / "docs" / "commands" / f"{name}.md").read_text()
    (block,) = re.findall(r"^```bash\n(.*?)^```", page, re.M | re.S)
    for line in (line.split("  #")[0].strip() for line in block.splitlines()):
        if line.startswith("srun "):
            _srun(line, tmp_path)
        elif line.startswith("clusterenv "):
            result = clusterenv_command(*shlex.split(line)[1:], env={}, cwd=tmp_path)
            assert result.returncode == 0, f"{line}:\n{result.stderr}"


def test_every_extra_a_page_installs_exists() -> None:
    """``pip install '.[X]'`` and ``'clusterenv-hpc[X]'`` on any page, hint or message name
    extras of pyproject.toml."""
    declared = set(metadata("clusterenv-hpc").get_all("Provides-Extra") or ())
    texts = [
        p.read_text() for p in [ROOT / "README.md", *PAGES, *(ROOT / "clusterenv").rglob("*.py")]
    ]
    named = {
        extra
        for text in texts
        for group in re.findall(r"(?:'\.|clusterenv-hpc)\[([a-z,-]+)\]", text)
        for extra in group.split(",")
    }
    assert named, "no page names an extra: the pattern is stale"
    assert named <= declared, named - declared
