"""Every generated block of the docs is what the code says now: the lists of sources are the
registry's, the output blocks what the commands print (tests/docs_lists.py)."""

from __future__ import annotations

import os

import pytest

from tests.docs_lists import BLOCKS, ROOT, render, rewrite

PAGES = sorted(dict.fromkeys(page for page, _ in BLOCKS))


@pytest.mark.parametrize("page", PAGES)
def test_the_generated_blocks_are_current(page: str) -> None:
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        rewrite()
    assert (ROOT / page).read_text() == render(page), (
        f"{page}'s generated blocks are not what the code says now: "
        "UPDATE_SNAPSHOTS=1 pytest tests/test_docs_lists.py"
    )
