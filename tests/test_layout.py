"""The package's layout by role (issue 48): each folder is a layer, and a module imports only
from its own layer or the layers below, so that detection can never come to depend on
diagnosis, the adapters, the probe or the CLI. Every import counts, a function's own
(lazy) ones too; the few that run back up are listed with why."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "clusterenv"

#: Bottom up: what each layer holds (a folder, or a public module at the top).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("clusterenv._core", "clusterenv.exceptions", "clusterenv.hostlist"),
    ("clusterenv._node", "clusterenv._models"),
    ("clusterenv.sources",),
    ("clusterenv._engine",),
    ("clusterenv._adapters",),
    ("clusterenv._diagnosis",),
    ("clusterenv._check",),
    (
        *("clusterenv.torch", "clusterenv.jax", "clusterenv.lightning", "clusterenv.config"),
        *("clusterenv.testing", "clusterenv.pytest_plugin"),
    ),
    ("clusterenv._probe",),
    # The package's own namespace re-exports the API, the probe's included.
    ("clusterenv._cli", "clusterenv.__main__", "clusterenv"),
)
#: Imports that run back up, each made inside a function so that nothing loads it early.
UPWARD = {
    # ProbeError is importable from clusterenv.exceptions, where users look for it; it is the
    # probe's own type (issue 47), loaded on first use.
    ("clusterenv.exceptions", "clusterenv._probe"),
}


def layer(module: str) -> int:
    """The layer of ``module``: that of its longest named prefix."""
    best, found = -1, -1
    for index, members in enumerate(LAYERS):
        for member in members:
            if (module == member or module.startswith(member + ".")) and len(member) > best:
                best, found = len(member), index
    assert found >= 0, f"{module} belongs to no layer: add its folder to LAYERS"
    return found


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Every clusterenv module -> the clusterenv modules it imports, anywhere in it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        names = found.setdefault(module_of(path), set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {
        module: {name for name in names if name.split(".")[0] == "clusterenv"}
        for module, names in found.items()
    }


def violations(graph: dict[str, set[str]]) -> list[str]:
    """The arrows of ``graph`` that run up a layer, other than :data:`UPWARD`'s."""
    wrong = []
    for module, names in sorted(graph.items()):
        for name in sorted(names):
            if layer(name) <= layer(module):
                continue
            if any(module.startswith(low) and name.startswith(up) for low, up in UPWARD):
                continue
            wrong.append(f"{module} imports {name}")
    return wrong


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert violations(imports()) == []


def test_an_arrow_against_the_layers_is_caught() -> None:
    """The contract bites: detection importing the pre-flight check, or a core type the
    engine, is named."""
    graph = imports()
    graph["clusterenv._engine.detect"].add("clusterenv._diagnosis.preflight")
    graph["clusterenv._core.spec"].add("clusterenv._engine.rules")
    assert violations(graph) == [
        "clusterenv._core.spec imports clusterenv._engine.rules",
        "clusterenv._engine.detect imports clusterenv._diagnosis.preflight",
    ]


def test_every_folder_says_what_it_holds_and_what_it_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc, f"{init.parent.name}/ has no docstring saying what lives there"
        if init.parent.name.startswith("_"):
            assert "import" in doc.lower(), f"{init.parent.name}/ does not say what it may import"


def test_every_launch_model_is_exported_by_testing_unchanged() -> None:
    """The builders are the launch models: `clusterenv.testing` exports each model's own
    objects, so removing an export (or a model's `__all__` entry) fails here by name."""
    from clusterenv import testing  # noqa: PLC0415 - the module under test

    for path in sorted((PACKAGE / "_models").glob("*.py")):
        if path.stem in ("__init__", "launch"):  # launch: the helpers the models share
            continue
        model = importlib.import_module(module_of(path))
        for name in set(model.__all__) - {"examples"}:  # examples: the suite's, per source
            assert getattr(testing, name, None) is getattr(model, name), (
                f"clusterenv.testing does not export {name} of {module_of(path)}"
            )
            assert name in testing.__all__, f"{name} is missing from clusterenv.testing.__all__"
