"""Options several commands share."""

from __future__ import annotations

import argparse

__all__ = ["ignore_option"]


def ignore_option(parser: argparse.ArgumentParser, reach: str = "") -> None:
    """``--ignore ID`` (repeatable), as ``CLUSTERENV_IGNORE`` silences findings; ``reach``
    says where else it applies."""
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID",
        help="silence the finding ID (repeat for several; CLUSTERENV_IGNORE=ID,ID does the "
        f"same{reach})",
    )
