"""Start real launches on the suite's clusters, collect what every task saw, and record
captures. Root-only subprocess plumbing; the checks against each launcher's truth are
tests/truth.py's, shared with the replays of the captures."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterenv import detect_environment
from tests.launchers.capture import scrub, scrub_text
from tests.truth import CAPTURES, EXPECTED, Record

REPORT = Path(__file__).with_name("report.py")
ON_HOST = Path(__file__).with_name("on-host.sh")
FIT = Path(__file__).with_name("fit.py")


@dataclass(frozen=True)
class Cluster:
    """One of the suite's real clusters: the host's Slurm (Debian 12: 22.05), or one in a
    chroot whose commands then run inside it (Slurm 24.11 of slurm24-up.sh, the Grid Engine
    of gridengine-up.sh)."""

    version: str
    root: str | None = None
    #: What the clients need besides a clean environment (Grid Engine's cell and ports).
    env: tuple[str, ...] = ()
    #: The emulated host (on-host.sh) the commands run on: the cluster of slurm-net-up.sh.
    host: str | None = None
    #: A script that enters the chroot instead of plain chroot (flux-enter.sh), and the
    #: command the shell line runs under there (a Flux test instance).
    enter: tuple[str, ...] = ()
    under: tuple[str, ...] = ()

    def argv(self, line: str, workdir: Path) -> list[str]:
        """How to run the shell ``line`` in ``workdir`` against this cluster."""
        if self.root is None:
            return [*self._on(), *(("env", *self.env) if self.env else ()), "bash", "-c", line]
        clean = ["/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
        clean += self.env
        script = f"cd {shlex.quote(str(workdir))} && {line}"
        return [*self._on(), *clean, "HOME=/root", *self.under, "bash", "-c", script]

    def command(self, *args: str) -> list[str]:
        """A Slurm client command (``scontrol``, ``srun --version``) against this cluster."""
        return [*self._on(), *(("/usr/bin/env", *self.env) if self.env else ()), *args]

    def _on(self) -> list[str]:
        """Where its commands run: on an emulated host, in the chroot, or both."""
        if self.enter:
            return list(self.enter)
        chroot = ["--root", self.root] if self.root else []
        if self.host is not None:
            return [str(ON_HOST), *chroot, self.host]
        return ["chroot", self.root] if self.root else []


HOST_SLURM = Cluster("22.05")
#: Where each release's cluster across the emulated hosts keeps its slurm.conf, as its
#: commands see it (slurm-net-up.sh).
NET_SLURM_CONF = {
    "22.05": "/tmp/clusterenv-slurm-net/slurm.conf",
    "24.11": "/var/lib/clusterenv-slurm-net/slurm.conf",
}


def across_hosts(version: str, root: str | None) -> Cluster:
    """The cluster of ``version`` across the emulated hosts n1..n3, used from its head."""
    return Cluster(version, root, env=(f"SLURM_CONF={NET_SLURM_CONF[version]}",), host="head")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def launch(
    command: str, workdir: Path, timeout: float = 120, slurm: Cluster = HOST_SLURM
) -> list[Record]:
    """Run ``command`` (``{task}`` = the report script) in a clean environment."""
    files = launch_files(command, workdir, timeout, slurm)
    return [json.loads(path.read_text()) for path in files]


def run(
    command: str, workdir: Path, timeout: float = 120, slurm: Cluster = HOST_SLURM
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with bash in a clean environment, like a fresh login, against
    ``slurm``'s cluster where it uses Slurm.

    Placeholders: ``{task}`` (report.py into ``{out}``), ``{python}``, ``{report}``,
    ``{fit}`` (fit.py), ``{out}`` (``workdir/records``) and ``{port}`` (a free TCP port).
    """
    out = workdir / "records"
    out.mkdir(parents=True, exist_ok=True)
    task = f"{sys.executable} {REPORT} {out}"
    line = command.format(
        task=task, python=sys.executable, report=REPORT, fit=FIT, out=out, port=free_port()
    )
    # Nothing of the test process's own environment leaks into the job.
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    return subprocess.run(
        slurm.argv(line, workdir),
        env=env,
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def launch_files(
    command: str, workdir: Path, timeout: float = 120, slurm: Cluster = HOST_SLURM
) -> list[Path]:
    """Run ``command`` (see :func:`run`); the files its tasks wrote into ``{out}``."""
    result = run(command, workdir, timeout, slurm)
    if result.returncode:
        raise AssertionError(
            f"{result.args[-1]!r} exited {result.returncode}:\n{result.stderr[-3000:]}"
        )
    files = sorted((workdir / "records").glob("*.json"))
    if not files:
        raise AssertionError(f"{result.args[-1]!r} started no task:\n{result.stderr[-3000:]}")
    return files


def scontrol_hostnames(nodelist: str, slurm: Cluster = HOST_SLURM) -> list[str] | None:
    """``scontrol show hostnames``; ``None`` where it rejects the list (22.05 exits 0 after
    "Invalid hostlist", so a rejected list is one that prints no host)."""
    result = subprocess.run(
        slurm.command("scontrol", "show", "hostnames", nodelist),
        capture_output=True,
        text=True,
        timeout=30,
    )
    hosts = result.stdout.split()
    return hosts if result.returncode == 0 and hosts else None


def node_lists(records: list[Record], slurm: Cluster) -> dict[str, list[str]]:
    """Every node list the tasks name, with the hosts ``scontrol show hostnames`` gives for
    it: what a capture keeps so that a replay checks the nodes without Slurm."""
    lists = {
        env[name]
        for record in records
        for env in [record["env"]]
        if isinstance(env, dict)
        for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_NODELIST_HET_GROUP_0")
        if name in env
    }
    return {nodelist: scontrol_hostnames(nodelist, slurm) or [] for nodelist in sorted(lists)}


def slurm_version(slurm: Cluster = HOST_SLURM) -> str:
    command = slurm.command("srun", "--version")
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()


def _scrubbed_files(files: Mapping[str, str]) -> dict[str, str]:
    """The host file (a task reads one) under the path its scrubbed variable names."""
    (text,) = files.values()
    return {"/scrubbed": scrub_text(text)}


def _scrubbed(answers: Mapping[str, str]) -> dict[str, str]:
    """The launcher's answers with this machine's host name scrubbed, keys and values."""
    return {scrub_text(command): scrub_text(text) for command, text in answers.items()}


def _scrubbed_spec(record: Record) -> Record:
    """The task's spec with this machine's host name scrubbed. Where the host name was part
    of a job id (Open MPI 5's ``PMIX_NAMESPACE=prterun-<host>-<pid>@1``), the port derived
    from it changes too: that one field is re-derived from the scrubbed environment."""
    if "spec" not in record:  # refused where it ran: the refusal is what a replay must give
        return {"error": record["error"], "message": scrub_text(record["message"])}
    spec: Record = json.loads(scrub_text(json.dumps(record["spec"])))
    if spec.get("job_id") != record["spec"].get("job_id"):
        replay = detect_environment(
            scrub(record["env"]), gpu_probe=lambda: (), cpu_probe=lambda: record["cpus"]
        )
        spec["master_port"] = replay.master_port
    return spec


def capture_name(name: str, slurm: Cluster) -> str:
    """22.05's captures are the top level of tests/data/captures; 24.11's its subfolder."""
    return name if slurm.root is None else f"slurm-{slurm.version}/{name}"


def record_capture(
    name: str, command: str, records: list[Record], extra: Mapping[str, Any]
) -> None:
    """Write a capture when RECORD_CAPTURES=1 (``nox -s captures``)."""
    if os.environ.get("RECORD_CAPTURES") != "1":
        return
    tasks = [
        (
            {
                "env": scrub(record["env"]),
                "cpus": record["cpus"],
                **({"torch": record["torch"]} if "torch" in record else {}),
                **({"truth": record["truth"]} if "truth" in record else {}),
                **({"answers": _scrubbed(record["answers"])} if "answers" in record else {}),
                # Host files under their scrubbed paths, as the scrubbed variables name them.
                **({"files": _scrubbed_files(record["files"])} if "files" in record else {}),
                **({"machine": record["machine"]} if "machine" in record else {}),
            },
            _scrubbed_spec(record),
        )
        for record in records
    ]
    tasks.sort(key=lambda task: json.dumps(task[0], sort_keys=True))
    capture = {"name": name, "command": command, **extra, "tasks": [t for t, _ in tasks]}
    for folder, data in ((CAPTURES, capture), (EXPECTED, [spec for _, spec in tasks])):
        path = folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
