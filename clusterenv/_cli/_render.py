"""The human renderings of an :class:`~clusterenv._cli._report.InspectReport`.

The text report wraps, never cuts: a long value or origin continues on the next lines,
aligned, within 80 columns. The Markdown report is shaped for pasting into an issue. Both
escape control characters (the report's strings are already redacted).
"""

from __future__ import annotations

import os
import sys
import textwrap

from clusterenv._cli._report import InspectReport
from clusterenv._core.safe import escape
from clusterenv.hostlist import compress_hostlist

__all__ = ["markdown", "text"]

_WIDTH = 80
_VALUE_AT = 16  # "  name" padded to 16 columns, then the value
_ORIGIN_AT = 37  # values up to 20 characters keep the origin on their line
_Row = tuple[str, str, str]  # name, value, origin


def _style(code: str) -> str:
    """An escape code where the terminal shows it: not for pipes, ``NO_COLOR`` (any value,
    no-color.org) or ``TERM=dumb``."""
    on = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    return f"\033[{code}m" if on else ""


def _origin(report: InspectReport, field: str) -> str:
    return ", ".join(f"{o.variable}={o.value!r}" for o in report.origins.get(field, []))


def _spec_rows(report: InspectReport) -> list[_Row]:
    spec = report.spec
    hosts = (
        f"{compress_hostlist(spec.hostnames)} ({len(spec.hostnames)})"
        if spec.hostnames
        else "(not named)"
    )
    fields = [
        ("nodes", "num_nodes"),
        ("devices/node", "devices_per_node"),
        ("world size", "world_size"),
        ("global rank", "global_rank"),
        ("local rank", "local_rank"),
        ("node rank", "node_rank"),
        ("main address", "master_addr"),
        ("main port", "master_port"),
    ]
    return [
        ("why", report.reason, ""),
        ("role", spec.role.value, ""),
        *((name, str(getattr(spec, field)), _origin(report, field)) for name, field in fields),
        ("job id", spec.job_id or "-", _origin(report, "job_id")),
        ("hosts", hosts, _origin(report, "hostnames")),
        ("accelerator", spec.accelerator.value, ""),
        (
            "GPU vendor",
            spec.gpu_vendor.value if spec.gpu_vendor else "-",
            _origin(report, "gpu_vendor"),
        ),
        ("GPUs/node", str(spec.gpus_per_node), _origin(report, "gpus_per_node")),
        ("visible GPUs", ",".join(spec.visible_devices) or "-", _origin(report, "visible_devices")),
        ("CPUs/rank", str(spec.cpus_per_rank or "-"), _origin(report, "cpus_per_rank")),
    ]


def _machine_rows(report: InspectReport) -> tuple[str, list[_Row]]:
    machine = report.machine
    if report.origin == "env-file" and machine.host is None:
        note = "not recorded (a plain environment dump; `clusterenv capture` records it)"
        return "machine", [("GPUs, CPUs", note, "")]
    gpus = machine.gpus
    if gpus is None or not gpus.devices:
        shown = "none found"
    else:
        models = sorted(set(gpus.models))
        kind = f" x {', '.join(models)}" if models else ""
        driver = f", driver {gpus.driver}" if gpus.driver else ""
        vendor = gpus.vendor.value if gpus.vendor else "unknown vendor"
        shown = f"{len(gpus.devices)}{kind} ({vendor}{driver})"
    affinity = f" ({machine.affinity_list})" if machine.affinity_list else ""
    packages = ", ".join(f"{name} {version}" for name, version in machine.packages.items())
    return "machine", [
        ("host", machine.host or "-", ""),
        ("os", machine.os or "-", ""),
        ("python", machine.python or "-", ""),
        ("packages", packages or "-", ""),
        ("GPUs", shown, ""),
        ("launchers", "; ".join(f"{k}: {v}" for k, v in machine.launchers.items()) or "-", ""),
        (
            "CPUs",
            f"{machine.cpus or '-'}, this process may use {machine.affinity or '-'}{affinity}",
            "",
        ),
    ]


def _wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        _WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _row(name: str, value: str, origin: str) -> list[str]:
    head = f"  {name:<{_VALUE_AT - 3}} "
    value, origin = escape(value), escape(origin)
    if origin and len(head) + len(value) < _ORIGIN_AT:
        return _wrap(origin, f"{head}{value:<{_ORIGIN_AT - len(head)}}", " " * _ORIGIN_AT)
    lines = _wrap(value, head, " " * _VALUE_AT)
    return lines + (_wrap(origin, " " * _ORIGIN_AT, " " * _ORIGIN_AT) if origin else [])


def text(report: InspectReport) -> str:
    bold, yellow, reset = _style("1"), _style("33"), _style("0")
    spec = report.spec
    lines = [f"{bold}clusterenv {report.clusterenv}: {spec.source.value}{reset}"]
    lines += [line for row in _spec_rows(report) for line in _row(*row)]
    title, rows = _machine_rows(report)
    lines.append(f"{bold}{title}{reset}")
    lines += [line for row in rows for line in _row(*row)]
    if report.network:
        lines.append(f"{bold}network{reset}")
        for name, value in report.network.items():
            lines += _wrap(escape(f"{name}={value}"), "  ", "    ")
    if report.lightning and "trainer_kwargs" in report.lightning:
        lines.append(f"{bold}Trainer kwargs ({report.lightning['package']}){reset}")
        for name, value in report.lightning["trainer_kwargs"].items():
            lines += _wrap(escape(str(value)), f"  {name:<23} ", " " * 26)
    for warning in report.warnings:
        level = "note" if warning.level == "info" else warning.level
        first, *rest = _wrap(escape(f"{level} [{warning.id}]: {warning}"), "", "  ")
        shown = level if warning.level == "info" else f"{yellow}{level}{reset}"
        lines += [first.replace(level, shown, 1), *rest]
    return "\n".join(lines)


def _code(value: str) -> str:
    """``value`` as a code span in a table cell: nothing inside is Markdown, but ``|``
    still ends a cell (GitHub) and a backtick needs a longer fence."""
    value = escape(value).replace("|", "\\|")
    if not value:
        return " "
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def markdown(report: InspectReport) -> str:
    """The report as Markdown: a heading, a table per section, the warnings as a list."""
    spec = report.spec
    out = [
        f"### clusterenv {report.clusterenv}: {spec.source.value}, {escape(report.description)}",
        "",
        "| field | value | from |",
        "|---|---|---|",
    ]
    out += [f"| {name} | {_code(v)} | {_code(o)} |" for name, v, o in _spec_rows(report)]
    title, rows = _machine_rows(report)
    out += ["", f"**{title}**", "", "| | |", "|---|---|"]
    out += [f"| {name} | {_code(value)} |" for name, value, _ in rows]
    if report.network:
        out += ["", "**network**", ""]
        out += [f"- {_code(f'{name}={value}')}" for name, value in report.network.items()]
    if report.warnings:
        out += ["", "**warnings**", ""]
        out += [
            f"- `{w.id}` ({w.level}): {escape(w.message)}. **Fix:** {escape(w.fix)}"
            for w in report.warnings
        ]
    return "\n".join(out)
