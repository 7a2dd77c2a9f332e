"""The documentation's examples are run, and every error class is documented."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

import clusterenv
import clusterenv.exceptions
from clusterenv import ClusterEnvError, ProbeError

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


def test_the_anemoi_page_quotes_the_error_clusterenv_run_prints() -> None:
    """The refusal of anemoi's defaults (1 device) under a 2-rank torchrun, as quoted."""
    cl = pytest.importorskip("clusterenv.lightning")
    from clusterenv.testing import torchrun_env  # noqa: PLC0415

    spec = clusterenv.detect_environment(torchrun_env(1, 2, rank=0), gpu_probe=tuple)
    with pytest.raises(ClusterEnvError) as raised:
        cl.trainer_kwargs(spec, devices=1, package="lightning")
    page = (ROOT / "docs" / "integrations" / "anemoi.md").read_text()
    assert f"clusterenv: error: {raised.value}\n" in page
