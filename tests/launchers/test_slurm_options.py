"""The option tables `clusterenv check` reads job scripts with are the real sbatch's and
srun's: each installed release's manual page (22.05 on the host, 24.11 in its chroot) lists
exactly the options the stored table gives that release, each taking an argument (or not,
or optionally) as the table says. ``UPDATE_SNAPSHOTS=1`` rewrites the table."""

from __future__ import annotations

import gzip
import itertools
import os
import pprint
import re
from pathlib import Path

import pytest

from clusterenv.sources.slurm import _options
from clusterenv.sources.slurm._options import Table
from tests.available import unavailable
from tests.launchers.harness import Cluster

TABLE = Path(_options.__file__)


def manual_options(page: Path) -> dict[str, tuple[str, str]]:
    """``--long`` -> (its short letter or "", "required", "optional" or "none"), as the
    manual's option headings (``.TP`` then ``\\fB\\-N\\fR, \\fB\\-\\-nodes\\fR=<...>``) say."""
    with gzip.open(page, "rt", errors="replace") as manual:
        lines = manual.read().splitlines()
    found: dict[str, tuple[str, str]] = {}
    for heading, line in itertools.pairwise(lines):
        if heading.strip() != ".TP" or not line.startswith("\\fB\\-"):
            continue
        plain = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-")
        short = re.match(r"-(\w)\b", plain)
        for part in re.split(r",\s*", plain):
            option = re.match(r"--([a-z][a-z0-9-]*)(\[?=)?", part)
            if option:
                argument = {None: "none", "[=": "optional", "=": "required"}[option.group(2)]
                found[option.group(1)] = (short.group(1) if short else "", argument)
    return found


def updated(stored: Table, release: str, real: dict[str, tuple[str, str]]) -> Table:
    """``stored`` with ``release``'s options made ``real``'s."""
    merged: Table = {}
    for name, (short, kinds) in stored.items():
        others = {r: kind for r, kind in kinds.items() if r != release}
        if others:
            merged[name] = (short, others)
    for name, (short, kind) in real.items():
        kinds = {**merged.get(name, ("", {}))[1], release: kind}
        merged[name] = (short, dict(sorted(kinds.items())))
    return dict(sorted(merged.items()))


@pytest.mark.slurm
@pytest.mark.parametrize("command", ["sbatch", "srun"])
def test_the_stored_options_are_the_installed_manuals(command: str, slurm_cluster: Cluster) -> None:
    release, root = slurm_cluster.version, Path(slurm_cluster.root or "/")
    page = root / f"usr/share/man/man1/{command}.1.gz"
    if not page.is_file():
        unavailable(f"{page} is missing: Slurm {release}'s manual pages are not installed")
    real = manual_options(page)
    name = command.upper()
    stored: Table = getattr(_options, name)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        body = f"{name}: Table = " + pprint.pformat(updated(stored, release, real), width=100)
        text = re.sub(rf"^{name}: Table = \{{.*?^\}}$", body, TABLE.read_text(), flags=re.S | re.M)
        TABLE.write_text(text)
        return
    mine = {
        option: (short, kinds[release])
        for option, (short, kinds) in stored.items()
        if release in kinds
    }
    assert mine == real
