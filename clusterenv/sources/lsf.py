"""IBM LSF: a ``jsrun`` task (``JSM_NAMESPACE_RANK`` set) or the job script (``LSB_JOBID``).

jsrun names ranks (``JSM_NAMESPACE_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE``) but not nodes: they
are derived from the ranks per node. The hosts come from ``LSB_DJOB_HOSTFILE`` (one line
per slot, so names repeat) or ``LSB_MCPU_HOSTS`` (``"hostA 4 hostB 4"``). On clusters
with a launch node (Summit-like) the first host runs the job script and no rank: it is
dropped when it is listed with one slot before hosts with several, or when the file names
one host more than the jsrun launch has nodes.
The main address is ``MASTER_ADDR`` or the first compute host.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from clusterenv._core.hostfile import MAX_HOST_LINES
from clusterenv._core.reader import EnvReader, parse_integer
from clusterenv._core.safe import shorten
from clusterenv._core.spec import Source
from clusterenv.exceptions import InvalidVariableError, MissingVariableError
from clusterenv.sources._detector import Fields, Gpus, Hints, Roles
from clusterenv.sources._geometry import job_script_fields, read_ranks
from clusterenv.sources._job_script import JobScriptDetector

__all__ = ["DETECTOR", "LsfDetector"]

_HINT = "LSF sets this in the job; run inside bsub"
_HOST_VARIABLES = ("LSB_DJOB_HOSTFILE", "LSB_MCPU_HOSTS")
_JSM_HINT = "jsrun sets this in every task; start the ranks with jsrun"


def _mcpu_slots(value: str) -> list[str]:
    """``LSB_MCPU_HOSTS='hostA 4 hostB 4'`` as one host per slot, at most MAX_HOST_LINES."""
    words = value.split()
    if len(words) % 2:
        raise InvalidVariableError(
            f"LSB_MCPU_HOSTS={shorten(value)!r} is not 'host count' pairs",
            variables=("LSB_MCPU_HOSTS",),
            hint=_HINT,
        )
    counts = [parse_integer("LSB_MCPU_HOSTS", count, hint=_HINT) for count in words[1::2]]
    if sum(counts) > MAX_HOST_LINES:
        raise InvalidVariableError(
            f"LSB_MCPU_HOSTS={shorten(value)!r} lists {sum(counts)} slots, more than "
            f"{MAX_HOST_LINES}",
            variables=("LSB_MCPU_HOSTS",),
            hint=_HINT,
        )
    return [host for host, count in zip(words[::2], counts, strict=True) for _ in range(count)]


class LsfDetector(JobScriptDetector):
    source = Source.LSF
    name = "LSF"
    reason = "LSB_JOBID (or jsrun's JSM_NAMESPACE_RANK) is set: inside an LSF job"
    proof = (
        "documented: IBM Spectrum LSF's job environment (`LSB_DJOB_HOSTFILE`, `LSB_MCPU_HOSTS`)"
        " and [OLCF's jsrun guide](https://docs.olcf.ornl.gov/systems/summit_user_guide.html) "
        "(`JSM_NAMESPACE_*`)"
    )
    variables = ("LSB_", "LSF_", "JSM_")
    launch_keys = ("LSB_JOBID",)
    launcher = "jsrun"
    job_variable, node_file, hint = "LSB_JOBID", "LSB_DJOB_HOSTFILE", _HINT
    version_command = ("lsid",)  # "IBM Spectrum LSF Standard 10.1.0.13, ..."
    roles = Roles(batch="the job script of an LSF job (job{job})")
    hints = Hints(
        num_nodes="change bsub -nnodes / jsrun -n",
        devices="change the tasks per resource set (jsrun -a, -r)",
        uneven="request the same slots per host (LSF span[ptile=P])",
        main="export MASTER_ADDR as the host of rank 0 to every rank, e.g. jsrun -E "
        "MASTER_ADDR=$(hostname) ...",
    )

    def present(self, env: Mapping[str, str]) -> bool:
        return super().present(env) or "JSM_NAMESPACE_RANK" in env

    def runs_task(self, env: Mapping[str, str]) -> bool:
        return "JSM_NAMESPACE_RANK" in env  # jsrun's PMIx sets PMIX_RANK too

    def read(self, reader: EnvReader, gpus: Gpus) -> Fields:
        task = "JSM_NAMESPACE_RANK" in reader.env
        # A jsrun task may lack the job's LSB_* variables (seen in the field).
        job_id = reader.optional("job_id", "LSB_JOBID") if task else self.job_id(reader)
        has_hosts = any(name in reader.env for name in _HOST_VARIABLES)
        slots = self._slots(reader) if has_hosts or not task else []
        # the job script describes what jsrun should start
        fields = self._task(reader, slots) if task else job_script_fields(reader, slots)
        return {**fields, "job_id": job_id}

    def _slots(self, reader: EnvReader) -> list[str]:
        """One host name per slot, from the host file or ``LSB_MCPU_HOSTS``."""
        if "LSB_DJOB_HOSTFILE" in reader.env:
            slots = self.slots(reader)
        elif "LSB_MCPU_HOSTS" in reader.env:
            slots = _mcpu_slots(reader.text("hostnames", "LSB_MCPU_HOSTS", hint=_HINT))
        else:
            raise MissingVariableError(
                "hostnames needs LSB_DJOB_HOSTFILE or LSB_MCPU_HOSTS, neither is set",
                variables=("LSB_DJOB_HOSTFILE", "LSB_MCPU_HOSTS"),
                hint=_HINT,
            )
        if not slots:
            raise InvalidVariableError(
                f"LSB_MCPU_HOSTS={shorten(reader.env['LSB_MCPU_HOSTS'])!r} lists no host",
                variables=("LSB_MCPU_HOSTS",),
                hint=_HINT,
            )
        first, rest = slots[0], slots[1:]
        if rest and first not in rest and min(Counter(rest).values()) > 1:
            return rest  # a launch node: listed first, with one slot, running no rank
        return slots

    @staticmethod
    def _task(reader: EnvReader, slots: list[str]) -> Fields:
        """A jsrun task, on the compute hosts (rank 0's first)."""
        fields = read_ranks(
            reader,
            world=("JSM_NAMESPACE_SIZE",),
            rank=("JSM_NAMESPACE_RANK",),
            local_rank=("JSM_NAMESPACE_LOCAL_RANK",),
            local_size=("JSM_NAMESPACE_LOCAL_SIZE",),
            hint=_JSM_HINT,
        )
        num_nodes, hosts = fields["num_nodes"], list(dict.fromkeys(slots))
        # A launch node left in the list (one slot, first): it runs no rank, so it is not
        # the main address even when the compute hosts have one slot each too.
        launch_node = len(hosts) > num_nodes and slots.count(hosts[0]) == 1
        compute = hosts[1:] if launch_node else hosts
        named = tuple(compute) if len(compute) == num_nodes else ()
        if compute:
            reader.derive("master_addr", "hostnames")
            fields["master_addr"] = compute[0]
        return {**fields, "hostnames": named}


DETECTOR = LsfDetector()
