"""docs/commands.md: one place for every command, each with the help it prints (generated:
``UPDATE_SNAPSHOTS=1 pytest tests/test_commands_page.py``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from clusterenv._cli import _parser

PAGE = Path(__file__).parents[1] / "docs" / "commands.md"
INTRO = """# Commands

Every command of `clusterenv`, with the help it prints (`clusterenv COMMAND --help`; this
page is generated from it and checked by the test suite). The guides say when to use each:
[inspect and capture](inspect.md), [probe](troubleshooting-network.md), [env](frameworks/shell.md),
[run](neural-lam.md).
"""


def render() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: a fixed width here
    try:
        return _render()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _render() -> str:
    parser = _parser()
    sections = [INTRO]
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, sub in actions[0].choices.items():
        sections.append(f"## `clusterenv {name}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
    return "\n".join(sections)


def test_the_commands_page_is_the_help() -> None:
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        PAGE.write_text(render())
    assert PAGE.read_text() == render(), "UPDATE_SNAPSHOTS=1 pytest tests/test_commands_page.py"
