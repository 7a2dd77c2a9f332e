"""Silencing findings by id: ``CLUSTERENV_IGNORE=id[,id...]`` (and ``--ignore ID`` on
`inspect` and `run`), as linters silence a rule (ruff ``--ignore``, shellcheck
``disable=``): a site where one finding does not apply keeps all the others."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from clusterenv._core.finding import ENGINE_IDS, Finding
from clusterenv._core.safe import shorten
from clusterenv.exceptions import ClusterEnvError
from clusterenv.sources import DETECTORS

__all__ = ["IGNORE", "ignored", "kept", "known_ids"]

IGNORE = "CLUSTERENV_IGNORE"


def known_ids() -> frozenset[str]:
    """Every finding id the package writes: the engine's and each source's."""
    return frozenset(ENGINE_IDS).union(*(d.finding_ids for d in DETECTORS))


def ignored(env: Mapping[str, str], given: Iterable[str] = ()) -> frozenset[str]:
    """The ids ``CLUSTERENV_IGNORE`` and ``given`` (``--ignore``) name; an id no finding
    has (a typo silences nothing) is a ``ClusterEnvError`` listing the known ones."""
    items = [*env.get(IGNORE, "").split(","), *given]
    wanted = frozenset(item.strip() for item in items if item.strip())
    unknown = sorted(wanted - known_ids())
    if unknown:
        raise ClusterEnvError(
            f"{IGNORE} (or --ignore) names no finding: {shorten(', '.join(unknown))!r}",
            variables=[IGNORE],
            hint="use the ids inspect prints; the known ones are " + ", ".join(sorted(known_ids())),
        )
    return wanted


def kept(findings: Iterable[Finding], silenced: frozenset[str]) -> list[Finding]:
    """``findings`` without the silenced ones."""
    return [finding for finding in findings if finding.id not in silenced]
