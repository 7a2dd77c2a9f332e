"""The generated blocks of README.md and docs/: the lists of sources, from the registry,
and what the commands print (``tests/docs_outputs.py``).

Each block sits between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` in its
page; ``tests/test_docs_lists.py`` fails where a page differs from what the code says now,
and ``UPDATE_SNAPSHOTS=1 pytest tests/test_docs_lists.py`` rewrites them. A new source thus
reaches every list, and a changed message every page that shows it, without a hand edit.
"""

from __future__ import annotations

import inspect
import json
import re
import textwrap
from collections import defaultdict
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from clusterenv import Role, Source, explain_environment
from clusterenv.sources import DETECTORS
from tests.docs_outputs import OUTPUTS
from tests.envs import examples
from tests.truth import CAPTURES, EXPECTED

__all__ = ["BLOCKS", "render", "rewrite"]

ROOT = Path(__file__).parents[1]


def _captures() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Per source: the names of the captures whose tasks it read, and the launchers (with
    their versions) those captures ran."""
    names: dict[str, list[str]] = defaultdict(list)
    launchers: dict[str, set[str]] = defaultdict(set)
    for path in sorted(CAPTURES.rglob("*.json")):
        capture = json.loads(path.read_text())
        name = str(path.relative_to(CAPTURES).with_suffix(""))
        specs = json.loads((EXPECTED / path.relative_to(CAPTURES)).read_text())
        for source in sorted({str(spec["source"]) for spec in specs if "source" in spec}):
            if name not in names[source]:
                names[source].append(name)
            launchers[source].add(_launcher(capture))
    return names, launchers


def _launcher(capture: dict[str, str]) -> str:
    """``deepspeed 0.19.8``, ``slurm-wlm 24.11.5``: the launcher a capture ran, as recorded."""
    launcher, version = capture.get("launcher", ""), capture.get("version") or ""
    return version if version[:1].isalpha() else f"{launcher} {version}".strip()


def _roles(source: Source) -> str:
    """The roles a source produces: those of its builder's examples (one per role)."""
    found = set()
    for launch in examples(source):
        found.add(
            explain_environment(
                launch, gpu_probe=tuple, read_file=launch.read_file, ask=launch.ask
            ).spec.role
        )
    return ", ".join(role.value for role in Role if role in found)


def detection_order() -> str:
    return "\n".join(
        f"{number}. **{d.source.value}** ([{d.name}](sources/{d.source.value}.md)) — {d.reason}."
        for number, d in enumerate(DETECTORS, 2)
    )


def proof_table() -> str:
    names, _ = _captures()
    rows = ["| source | roles | proof | captures |", "|---|---|---|---|"]
    for d in DETECTORS:
        value = d.source.value
        captures = ", ".join(f"`{name}`" for name in names.get(value, [])) or "—"
        rows.append(f"| {value} | {_roles(d.source)} | {d.proof} | {captures} |")
    return "\n".join(rows)


def index_links() -> str:
    links = ", ".join(f"[{d.name}](sources/{d.source.value}.md)" for d in DETECTORS)
    return textwrap.fill(
        f"Per source, in the order they are tried: {links}.", width=92, break_on_hyphens=False
    )


def summary(proven: str) -> str:
    """Which sources run for real here, and which follow their documentation (``proven``:
    the link to the proof table from the page)."""
    _, launchers = _captures()
    live = [d for d in DETECTORS if d.proof.startswith("live")]
    documented = [d for d in DETECTORS if d not in live]
    ran = {v for d in live for v in launchers.get(d.source.value, ())}
    # a launcher recorded with its version stands for its records without one
    versions = sorted(
        v for v in ran if "+" not in v and not any(w.startswith(f"{v} ") for w in ran)
    )
    return textwrap.fill(
        f"Run for real in its test suite and checked in every task against the launcher's own "
        f"truth: {', '.join(d.name for d in live)} ({', '.join(versions)}). Read from their "
        f"documentation (no real launch here): {', '.join(d.name for d in documented)}. "
        f"[What is proven, and how]({proven}).",
        width=92,
        break_on_hyphens=False,
    )


def builder_table() -> str:
    rows = ["| builder | source | what it builds |", "|---|---|---|"]
    for source in Source:
        module = import_module(f"clusterenv._models.{source.value}")
        for name in module.__all__:
            builder: Callable[..., object] = getattr(module, name)
            if name == "examples" or not callable(builder):
                continue
            doc = " ".join((builder.__doc__ or "").split("\n\n")[0].split())
            first = re.split(r"(?<=[.:;])\s", doc, maxsplit=1)[0].rstrip(".:;")
            signature = inspect.signature(builder)
            shown = ", ".join(
                p.name for p in signature.parameters.values() if p.kind is not p.KEYWORD_ONLY
            )
            rows.append(f"| `{name}({shown})` | {source.value} | {first} |")
    return "\n".join(rows)


#: (page, block name) -> how it is rendered.
BLOCKS: dict[tuple[str, str], Callable[[], str]] = {
    ("README.md", "sources"): lambda: summary("docs/detection.md#what-is-proven-and-how"),
    ("docs/index.md", "summary"): lambda: summary("detection.md#what-is-proven-and-how"),
    ("docs/index.md", "sources"): index_links,
    ("docs/detection.md", "order"): detection_order,
    ("docs/detection.md", "proof"): proof_table,
    ("docs/testing.md", "builders"): builder_table,
    **OUTPUTS,
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {name} -->\n)(.*?)(\n<!-- end generated -->)", flags=re.DOTALL
    )


def render(page: str) -> str:
    """``page``'s text with every generated block as the registry says now."""
    text = (ROOT / page).read_text()
    for (path, name), block in BLOCKS.items():
        if path == page:
            parts = _pattern(name).split(text)  # before, opening, old, closing, after
            assert len(parts) == 5, f"{page} has not one <!-- generated: {name} --> block"
            text = "".join((parts[0], parts[1], block(), parts[3], parts[4]))
    return text


def rewrite() -> None:
    for page in dict.fromkeys(path for path, _ in BLOCKS):
        (ROOT / page).write_text(render(page))
