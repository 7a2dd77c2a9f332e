"""Every list of sources in the docs is the registry's (tests/docs_lists.py)."""

from __future__ import annotations

import os

import pytest

from tests.docs_lists import BLOCKS, ROOT, render, rewrite

PAGES = sorted(dict.fromkeys(page for page, _ in BLOCKS))


@pytest.mark.parametrize("page", PAGES)
def test_the_lists_of_sources_are_generated(page: str) -> None:
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        rewrite()
    assert (ROOT / page).read_text() == render(page), (
        f"{page}'s lists of sources are not the registry's: "
        "UPDATE_SNAPSHOTS=1 pytest tests/test_docs_lists.py"
    )
