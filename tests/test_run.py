"""`clusterenv run` behaves like `python` for ordinary script layouts (issue 27): sibling
imports, packages with -m, relative data paths, ``if __name__ == "__main__"``, and a failing
script shown with its own traceback and exit status 1; clusterenv's own problems are one
line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)  # `run` imports Lightning where it is installed


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "clusterenv", "run", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "CLUSTERENV_SOURCE": "local"},
        timeout=110,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """train.py beside model.py, a package with __main__, a data file, a failing script."""
    (tmp_path / "model.py").write_text("NAME = 'net'\n")
    (tmp_path / "data.txt").write_text("42\n")
    (tmp_path / "train.py").write_text(
        "import sys\nfrom model import NAME\n\n"
        "def main():\n"
        "    print(NAME, open('data.txt').read().strip(), sys.argv[1:], __name__)\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("VALUE = 7\n")
    (package / "train.py").write_text(
        "from .helpers import VALUE\nimport sys\nprint(VALUE, sys.argv[1:], __name__)\n"
    )
    (tmp_path / "fails.py").write_text("def deep():\n    raise ValueError('bad batch')\n\ndeep()\n")
    return tmp_path


def test_a_script_imports_its_siblings_and_reads_relative_paths(project: Path) -> None:
    result = run("train.py", "--lr", "3", cwd=project)
    assert result.stdout.strip() == "net 42 ['--lr', '3'] __main__", result.stderr
    elsewhere = project / "runs"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("7\n")
    result = run(str(project / "train.py"), cwd=elsewhere)  # data from the working folder
    assert result.stdout.strip() == "net 7 [] __main__", result.stderr


def test_a_package_module_with_m(project: Path) -> None:
    result = run("-m", "pkg.train", "x", cwd=project)
    assert result.stdout.strip() == "7 ['x'] __main__", result.stderr


def test_the_scripts_own_error_is_its_own(project: Path) -> None:
    result = run("fails.py", cwd=project)
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "ValueError: bad batch" in result.stderr
    assert 'fails.py", line 2, in deep' in result.stderr
    assert "internal error" not in result.stderr
    assert "runpy" not in result.stderr
    assert "clusterenv/_cli" not in result.stderr


@pytest.mark.parametrize("text", [b"def f(:\n", b"\x7fELF\x00\x01"], ids=["syntax", "binary"])
def test_a_script_that_does_not_compile_shows_its_error_alone(project: Path, text: bytes) -> None:
    """As python shows it: no traceback of clusterenv's or runpy's frames (a program given
    where a script belongs, `clusterenv run python -m ...`, is a binary)."""
    (project / "broken.py").write_bytes(text)
    result = run("broken.py", cwd=project)
    assert result.returncode == 1
    assert "SyntaxError" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_scripts_exit_status_is_kept(project: Path) -> None:
    (project / "exits.py").write_text("import sys\nsys.exit(3)\n")
    assert run("exits.py", cwd=project).returncode == 3


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["missing.py"], "no such file"),
        (["-m", "pkg.typo"], "no such module"),
        (["-m", "nopackage.train"], "no such module"),
        (["--debug", "missing.py"], "no such file"),
        (["pkg"], "not a file"),
    ],
)
def test_clusterenvs_own_problems_are_one_line(project: Path, args: list[str], words: str) -> None:
    result = run(*args, cwd=project)
    assert result.returncode == 2
    assert words in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_script_is_one_line(project: Path) -> None:
    (project / "train.py").chmod(0)
    result = run("train.py", cwd=project)
    assert (result.returncode, "permission denied" in result.stderr) == (2, True)
