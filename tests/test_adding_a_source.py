"""docs/adding-a-source.md, executed: its template source is added to a copy of the
repository exactly as the page says, and the suite's source tests pass with it registered;
without each duty the page names, a test fails naming it. The template is OAR's; the copy
names it Kelp, a scheduler nobody has, so that the day OAR itself is added these tests
still add a new source."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.available import HANG_GUARD_S

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "adding-a-source.md"
_NAMES = {"OAR": "KELP", "Oar": "Kelp", "oar": "kelp"}
_EXPORT = "from clusterenv._models.kelp import kelp_env\n"
#: What the suite checks of a source, run in the copy.
SOURCE_TESTS = ("tests/sources", "tests/test_docs_lists.py", "tests/test_inspect_report.py")


def _kelp(text: str) -> str:
    """``text`` with OAR's names made Kelp's."""
    return re.sub("|".join(_NAMES), lambda found: _NAMES[found.group()], text)


def _template() -> dict[str, str]:
    """The guide's template: path -> text, from its code blocks titled with a path, its
    names made Kelp's."""
    blocks = re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```$', GUIDE.read_text(), re.S | re.M)
    return {_kelp(path): _kelp(text) for path, text in blocks}


def _edit(path: Path, after: str, line: str) -> None:
    """Insert ``line`` after the first line that is ``after`` (stripped)."""
    lines = path.read_text().splitlines(keepends=True)
    index = next(i for i, text in enumerate(lines) if text.strip() == after)
    lines.insert(index + 1, line)
    path.write_text("".join(lines))


def _pytest(copy: Path, *args: str, update: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy), "UPDATE_SNAPSHOTS": "1" if update else "0"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )


#: What an sdist or `git archive` unpacked, or a test run, adds that is no source file.
_BUILT = ("build", "dist", "__pycache__", "*.egg-info", ".nox", ".*_cache", ".hypothesis")


def _files() -> list[str]:
    """The repository's files: git's list in a checkout, else (an sdist, `git archive`)
    every file but what builds and test runs leave."""
    if not (ROOT / ".git").exists():
        ignore = shutil.ignore_patterns(*_BUILT)
        found: list[str] = []
        for folder, names, files in os.walk(ROOT):
            names[:] = sorted(set(names) - ignore(folder, names))
            found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files]
        return found
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return list(filter(None, listed.split("\0")))


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files, with the template source added as the guide says."""
    root = tmp_path_factory.mktemp("repository")
    for name in _files():
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    for name, text in _template().items():
        (root / name).write_text(text)
    _edit(
        root / "clusterenv" / "_core" / "spec.py",
        'GRIDENGINE = "gridengine"',
        '    KELP = "kelp"\n',
    )
    testing = root / "clusterenv" / "testing" / "__init__.py"
    _edit(testing, "from clusterenv._models.mpi import mpich_env, openmpi_env", _EXPORT)
    _edit(testing, '"gridengine_env",', '    "kelp_env",\n')
    _edit(root / "mkdocs.yml", "- PBS / Torque: sources/pbs.md", "      - Kelp: sources/kelp.md\n")
    _pytest(root, "tests/test_docs_lists.py", "tests/test_inspect_report.py", update=True)
    return root


def test_the_template_names_the_files_of_a_source() -> None:
    assert set(_template()) == {
        "clusterenv/sources/kelp.py",
        "clusterenv/_models/kelp.py",
        "tests/sources/test_kelp.py",
        "docs/sources/kelp.md",
    }


def test_a_source_added_by_the_guide_passes_the_suite(copy: Path) -> None:
    result = _pytest(copy, *SOURCE_TESTS)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "kelp" in (copy / "README.md").read_text().lower(), "the lists are generated"


@pytest.mark.parametrize(
    ("path", "duty", "test"),
    [
        (
            "clusterenv/sources/kelp.py",
            _kelp('    roles = Roles(batch="the job script of an OAR job (job{job})")\n'),
            "test_a_launcher_started_in_a_job_script_owns_its_ranks",
        ),
        (
            "clusterenv/sources/kelp.py",
            _kelp(
                '    proof = "documented: the OAR user documentation'
                ' (`OAR_JOB_ID`, `OAR_NODEFILE`)"\n'
            ),
            "test_its_proof_and_schema_entry_exist",
        ),
        ("docs/sources/kelp.md", None, "test_hints_and_docs_page_exist"),
        ("tests/sources/test_kelp.py", None, "test_its_proof_and_schema_entry_exist"),
        (
            "clusterenv/testing/__init__.py",
            '    "kelp_env",\n',
            "test_every_launch_model_is_exported_by_testing_unchanged",
        ),
    ],
    ids=["batch-role", "proof", "docs-page", "unit-test", "builder-export"],
)
def test_a_missing_duty_fails_a_test_naming_it(
    copy: Path, path: str, duty: str | None, test: str
) -> None:
    original = (copy / path).read_text()
    try:
        if duty is None:
            (copy / path).unlink()
        else:
            assert duty in original
            (copy / path).write_text(original.replace(duty, ""))
        tests = ("tests/sources/test_contract.py", "tests/test_layout.py")
        result = _pytest(copy, *tests, "-k", "kelp or exported")
    finally:
        (copy / path).write_text(original)
    assert result.returncode != 0
    assert re.search(rf"FAILED \S*::{test}\b", result.stdout), result.stdout[-3000:]
