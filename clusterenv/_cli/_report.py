"""`clusterenv inspect`: the report of what this process got, and why."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Mapping
from typing import Any

from clusterenv import __version__
from clusterenv._detect import explain_environment
from clusterenv._diagnose import diagnose
from clusterenv._reader import read_text_file
from clusterenv._safe import escape, redact_text
from clusterenv._spec import ResourceSpec
from clusterenv.exceptions import ClusterEnvError
from clusterenv.hostlist import compress_hostlist

__all__ = ["redact_json", "report"]


def _style(code: str) -> str:
    on = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    return f"\033[{code}m" if on else ""


def _lightning(spec: ResourceSpec, package: str) -> tuple[dict[str, object], list[str]]:
    """The adapter's Trainer kwargs for ``spec`` (imports Lightning, hence only on request)."""
    import clusterenv.lightning as cl  # noqa: PLC0415 - torch only with --lightning

    chosen = cl.resolve_package(None if package == "auto" else package)  # type: ignore[arg-type]
    try:
        kwargs = cl.trainer_kwargs(spec, package=chosen)
    except ClusterEnvError as error:
        return {"package": chosen, "error": str(error)}, [f"Lightning: {error}"]
    kwargs["plugins"] = [type(plugin).__name__ for plugin in kwargs["plugins"]]
    return {"package": chosen, "trainer_kwargs": kwargs}, []


def report(
    env: Mapping[str, str], files: Mapping[str, str], lightning: str | None
) -> tuple[dict[str, object], list[str], str]:
    def read_file(path: str) -> str:
        return files[path] if path in files else read_text_file(path)

    detection = explain_environment(env, read_file=read_file)
    spec, origins = detection.spec, detection.origins
    warnings = diagnose(spec, env)
    adapter: dict[str, object] = {}
    if lightning:
        adapter, problems = _lightning(spec, lightning)
        warnings += problems
    bold, yellow, reset = _style("1"), _style("33"), _style("0")
    hosts = (
        f"{compress_hostlist(spec.hostnames)} ({len(spec.hostnames)})"
        if spec.hostnames
        else "(not named)"
    )
    rows = [
        ("role", spec.role.value, ""),
        ("nodes", spec.num_nodes, origins.get("num_nodes", "")),
        ("devices/node", spec.devices_per_node, origins.get("devices_per_node", "")),
        ("world size", spec.world_size, origins.get("world_size", "")),
        ("global rank", spec.global_rank, origins.get("global_rank", "")),
        ("local rank", spec.local_rank, origins.get("local_rank", "")),
        ("node rank", spec.node_rank, origins.get("node_rank", "")),
        ("main address", f"{spec.master_addr}:{spec.master_port}", origins.get("master_addr", "")),
        ("job id", spec.job_id or "-", origins.get("job_id", "")),
        ("hosts", hosts, origins.get("hostnames", "")),
        ("accelerator", spec.accelerator.value, ""),
        (
            "GPU vendor",
            spec.gpu_vendor.value if spec.gpu_vendor else "-",
            origins.get("gpu_vendor", ""),
        ),
        ("GPUs/node", spec.gpus_per_node, origins.get("gpus_per_node", "")),
        ("visible GPUs", ",".join(spec.visible_devices) or "-", origins.get("visible_devices", "")),
        ("CPUs/rank", spec.cpus_per_rank or "-", origins.get("cpus_per_rank", "")),
    ]
    lines = [f"{bold}clusterenv {__version__}: {spec.source.value}{reset}"]
    rows.insert(0, ("why", detection.reason, ""))
    for name, value, origin in rows:
        # Values come from the environment: secrets out, control characters escaped.
        line = escape(redact_text(f"  {name:<13} {value!s:<20} {origin}".rstrip()))
        lines.append(line if len(line) <= 80 else line[:79] + "…")
    if "trainer_kwargs" in adapter:
        kwargs = adapter["trainer_kwargs"]
        assert isinstance(kwargs, dict)
        lines.append(f"{bold}Trainer kwargs ({adapter['package']}){reset}")
        lines += [escape(f"  {name:<23} {value}") for name, value in kwargs.items()]
    for warning in warnings:
        text = escape(redact_text(f"warning: {warning}"))
        first, *rest = textwrap.wrap(text, 80, subsequent_indent="  ")
        lines += [first.replace("warning:", f"{yellow}warning:{reset}", 1), *rest]
    data: dict[str, object] = {
        "spec": spec.model_dump(mode="json"),
        "source_reason": detection.reason,
        "provenance": origins,
        "warnings": warnings,
        **({"lightning": adapter} if adapter else {}),
    }
    return redact_json(data), warnings, "\n".join(lines)


def redact_json(data: Any) -> Any:
    """``data`` with every string redacted (JSON stays exact: ``json.dumps`` escapes the
    control characters itself)."""
    if isinstance(data, str):
        return redact_text(data)
    if isinstance(data, dict):
        return {key: redact_json(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact_json(value) for value in data]
    return data
