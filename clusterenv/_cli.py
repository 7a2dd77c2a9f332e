"""`clusterenv` / `python -m clusterenv`: see what this process got, and why."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import traceback
from collections.abc import Mapping, Sequence

from clusterenv import __version__
from clusterenv._capture import launcher_variables
from clusterenv._detect import explain_environment
from clusterenv._diagnose import diagnose
from clusterenv._probe import DEFAULT_TIMEOUT, probe
from clusterenv._reader import read_text_file
from clusterenv._spec import ResourceSpec, Source
from clusterenv.exceptions import ClusterEnvError, ProbeError
from clusterenv.hostlist import compress_hostlist

__all__ = ["main"]

_SOURCES = textwrap.fill(
    f"the scheduler or launcher detected ({', '.join(source.value for source in Source)})",
    width=80,
    initial_indent=" " * 20,
    subsequent_indent=" " * 20,
).lstrip()
FIELDS = f"""fields:
  source            {_SOURCES}
  role              rank: one task of a launch; batch: an sbatch script body;
                    shell: the salloc shell; standalone: no launcher
  nodes             nodes in this step (or allocation)
  devices/node      ranks on this node: Lightning's `devices`
  world size        ranks in the whole job
  global/local/node rank of this process
  main address      host:port where rank 0 listens (MASTER_ADDR / MASTER_PORT)
  hosts             the node list, compressed, and how many
  GPUs/node         GPUs allocated per node; visible: CUDA ids this process may use

exit status: 0 ok (also with warnings), 1 warnings with --strict, 2 error"""


class _Usage(Exception):
    """A problem with the command line's inputs (e.g. an unreadable --env-file)."""


def read_env_file(path: str) -> tuple[dict[str, str], dict[str, str]]:
    """An environment from `env`/`printenv` output, KEY=VALUE lines or a JSON object, and
    the host files a `clusterenv capture` recorded with it (by path)."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as file:
                text = file.read()
    except OSError as error:
        raise _Usage(f"cannot read --env-file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise _Usage(
            f"--env-file {path} is not UTF-8 text (env, KEY=VALUE lines or JSON)"
        ) from None
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise _Usage(f"--env-file {path} is not valid JSON: {error}") from None
        files = data.get("files", {}) if isinstance(data, dict) and "env" in data else {}
        data = data.get("env", data) if isinstance(data, dict) else data
        if not isinstance(data, dict) or not isinstance(files, dict):
            raise _Usage(f"--env-file {path}: expected a JSON object of variables")
        return _strings(data), _strings(files)
    env = {}
    for line in text.splitlines():
        name, sep, value = line.removeprefix("export ").partition("=")
        if sep and name.strip() and not name.lstrip().startswith("#"):
            env[name.strip()] = value.strip().strip("'\"")
    return env, {}


def _strings(data: Mapping[object, object]) -> dict[str, str]:
    return {str(key): str(value) for key, value in data.items()}


def _capture(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The launcher variables, and the host files that detection reads (PBS, LSF), so that
    `inspect --env-file` works on another machine too."""
    files: dict[str, str] = {}

    def record(path: str) -> str:
        files[path] = read_text_file(path)
        return files[path]

    with contextlib.suppress(ClusterEnvError):  # a broken environment is still captured
        explain_environment(env, gpu_probe=tuple, read_file=record)
    return {"env": launcher_variables(env), "files": files}


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


def _report(
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
        ("GPUs/node", spec.gpus_per_node, origins.get("gpus_per_node", "")),
        ("visible GPUs", ",".join(spec.visible_devices) or "-", origins.get("visible_devices", "")),
    ]
    lines = [f"{bold}clusterenv {__version__}: {spec.source.value}{reset}"]
    rows.insert(0, ("why", detection.reason, ""))
    for name, value, origin in rows:
        line = f"  {name:<13} {value!s:<20} {origin}".rstrip()
        lines.append(line if len(line) <= 80 else line[:79] + "…")
    if "trainer_kwargs" in adapter:
        kwargs = adapter["trainer_kwargs"]
        assert isinstance(kwargs, dict)
        lines.append(f"{bold}Trainer kwargs ({adapter['package']}){reset}")
        lines += [f"  {name:<23} {value}" for name, value in kwargs.items()]
    for warning in warnings:
        first, *rest = textwrap.wrap(f"warning: {warning}", 80, subsequent_indent="  ")
        lines += [first.replace("warning:", f"{yellow}warning:{reset}", 1), *rest]
    data: dict[str, object] = {
        "spec": spec.model_dump(mode="json"),
        "source_reason": detection.reason,
        "provenance": origins,
        "warnings": warnings,
        **({"lightning": adapter} if adapter else {}),
    }
    return data, warnings, "\n".join(lines)


def _probe(timeout: float, backend: str | None) -> int:
    try:
        report = probe(timeout=timeout, backend=backend)
    except ProbeError as error:
        if error.report is not None:  # rank 0: the table first, then the verdict
            print(error.report.table())
        raise
    if report.rows:
        print(report.table())
        if backend:
            spec = report.spec
            print(f"{backend}: init_process_group and all_reduce over {spec.world_size} ranks OK")
    return 0


def _run(module: str | None, target: list[str]) -> int:
    import clusterenv.lightning as cl  # noqa: PLC0415 - imports Lightning

    if module is None and not target:
        raise _Usage("clusterenv run needs a SCRIPT or -m MODULE")
    if module is None:
        cl.run_script(target[0], target[1:])
    else:
        cl.run_script(module, target, module=True)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clusterenv",
        description="What resources does this process have, and what is its place in the job?",
    )
    parser.add_argument("--version", action="version", version=f"clusterenv {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect",
        help="show the detected resources and where each value came from",
        description="Show what this process got and why. Run it as `srun clusterenv inspect` "
        "to see every task.",
        epilog=FIELDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect.add_argument(
        "--json", action="store_true", help="print JSON: spec, provenance, warnings"
    )
    inspect.add_argument(
        "--env-file",
        metavar="PATH",
        help="read the environment from a file (env/printenv output, KEY=VALUE lines or JSON; "
        "'-' for stdin) instead of this process's",
    )
    inspect.add_argument("--strict", action="store_true", help="exit 1 when there are warnings")
    inspect.add_argument(
        "--lightning",
        nargs="?",
        const="auto",
        choices=["auto", "lightning", "pytorch_lightning"],
        help="also show the Trainer kwargs of clusterenv.lightning (imports torch; default "
        "package: the first installed of lightning, pytorch_lightning)",
    )
    capture = commands.add_parser(
        "capture",
        help="print this process's launcher variables as JSON, for bug reports",
        description="Print the scheduler, launcher and CUDA variables of this process as JSON "
        "(secrets redacted), with the host files detection reads (PBS_NODEFILE, "
        "LSB_DJOB_HOSTFILE). `clusterenv inspect --env-file FILE` reads it back, on any "
        "machine.",
    )
    capture.add_argument("--env-file", metavar="PATH", help="capture from a file instead")
    probe = commands.add_parser(
        "probe",
        help="check that every rank reaches rank 0, before training starts",
        description="Run in every rank, like the training (`srun clusterenv probe`, "
        "`torchrun ... -m clusterenv probe`): a TCP rendezvous at the main address and port. "
        "Rank 0 prints one row per rank and the verdict; the other ranks print only "
        "failures. Exit 0 when every rank arrived and all agree, 2 otherwise.",
    )
    probe.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"give up after S seconds (default {DEFAULT_TIMEOUT:g})",
    )
    probe.add_argument(
        "--backend",
        choices=["gloo"],
        help="then also init_process_group and all_reduce with torch.distributed",
    )
    run = commands.add_parser(
        "run",
        help="run a training script whose Lightning Trainer then follows the allocation",
        description="Run SCRIPT (or -m MODULE) with ARGS, like python would, with every "
        "lightning.pytorch / pytorch_lightning Trainer it builds receiving num_nodes, devices, "
        "strategy and the cluster-environment plugin from the detected allocation. Only "
        "values left at Lightning's defaults change (num_nodes=1 counts as a default); "
        "explicit values that contradict the allocation fail with exit 2. Example: "
        "srun clusterenv run -m neural_lam.train_model --config_path config.yaml",
    )
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    run.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT|ARGS ...")
    for sub in (inspect, capture, probe, run):
        sub.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and argv[1:2] not in (["-h"], ["--help"], []):
        # Everything after the script or module belongs to it, options included, so
        # argparse (which would claim them) only documents `run`.
        module = argv[2] if argv[1] == "-m" and len(argv) > 2 else None
        target = argv[3:] if module else argv[1:]
        return argparse.Namespace(command="run", module=module, target=target, debug=False)
    return _parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    try:
        if args.command == "probe":
            return _probe(args.timeout, args.backend)
        if args.command == "run":
            return _run(args.module, args.target)
        env, files = read_env_file(args.env_file) if args.env_file else (dict(os.environ), {})
        if args.command == "capture":
            print(json.dumps(_capture(env), indent=2))
            return 0
        data, warnings, text = _report(env, files, args.lightning)
    except (ClusterEnvError, _Usage) as error:
        if args.debug:
            traceback.print_exc()
        print(f"clusterenv: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(data, indent=2) if args.json else text)
    return 1 if args.strict and warnings else 0
