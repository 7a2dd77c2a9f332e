"""The documentation's examples are run, and every error class is documented."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

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
