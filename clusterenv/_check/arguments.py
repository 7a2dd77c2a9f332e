"""What a launch line's own words show: a variable that nothing sets (a misspelt
``$SLURM_NNODE``), one the tasks read that the job script set but did not export, and an
argument of the training script that contradicts what the launch gives it (Lightning's
``--num_nodes``, Hydra's ``trainer.devices=``, anemoi's ``system.hardware.num_nodes=``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from clusterenv._check.shell import Word
from clusterenv._core.finding import Finding
from clusterenv._core.safe import shorten
from clusterenv._core.spec import ResourceSpec

__all__ = ["contradictions", "not_exported", "unset"]

_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
#: Variables the ranks or srun itself read from their environment: set but not exported,
#: they never reach them.
_READ_BY_TASKS = ("MASTER_ADDR", "MASTER_PORT", "SRUN_", "OMP_NUM_THREADS", "NCCL_", "GLOO_")
#: A framework's own count on its command line: option or Hydra/OmegaConf override -> field.
_COUNTS = {
    "num_nodes": "num_nodes",
    "num-nodes": "num_nodes",
    "trainer.num_nodes": "num_nodes",
    "system.hardware.num_nodes": "num_nodes",
    "devices": "devices_per_node",
    "trainer.devices": "devices_per_node",
    "system.hardware.num_gpus_per_node": "devices_per_node",
}


def unset(command: Sequence[Word], variables: Mapping[str, object]) -> list[Finding]:
    """Variables of ``command`` that the batch shell does not know: a ``SLURM_`` one that
    Slurm does not set is a warning (a misspelling: its value is empty); any other a note
    (the submit shell may export it: sbatch passes its environment on)."""
    found = []
    for name in dict.fromkeys(
        n for w in command if not w.known for n in _REFERENCE.findall(w.text)
    ):
        if name in variables:
            continue
        slurm = name.startswith(("SLURM_", "SLURMD_"))
        found.append(
            Finding(
                id="check.unset-variable",
                message=f"${name} is set by nothing before this line"
                + (
                    ": Slurm sets no such variable in the job script, so it expands to nothing"
                    if slurm
                    else " (unless the shell you submit from exports it)"
                ),
                fix="check its spelling (Slurm's: `env | grep SLURM` inside a job), or set and "
                "export it above this line",
                level="warning" if slurm else "info",
            )
        )
    return found


def not_exported(text: str, variables: Mapping[str, tuple[str, bool]]) -> list[Finding]:
    """Variables the tasks (or srun) read from their environment that the job script set
    without ``export``, and that the line ``text`` does not pass on itself."""
    found = []
    for name, (_, exported) in variables.items():
        if (
            exported
            or not name.startswith(_READ_BY_TASKS)
            or f"${name}" in text
            or f"${{{name}}}" in text
        ):
            continue
        found.append(
            Finding(
                id="check.not-exported",
                message=f"{name} is set in the job script but not exported: the tasks this line "
                "starts (and srun itself) never see it",
                fix=f"export {name}=...",
            )
        )
    return found


def contradictions(texts: Sequence[str], spec: ResourceSpec) -> list[Finding]:
    """A count on the training script's command line that is not the launch's."""
    found = []
    for index, word in enumerate(texts):
        name, equals, value = word.lstrip("-").partition("=")
        field = _COUNTS.get(name)
        if field is None:
            continue
        if not equals:
            value = texts[index + 1] if index + 1 < len(texts) else ""
        launched = getattr(spec, field)
        if value.isdigit() and int(value) != launched:
            found.append(
                Finding(
                    id="check.argument-contradicts",
                    message=f"{shorten(word)} {'' if equals else shorten(value)} asks for "
                    f"{value} but the launch gives each rank {field}={launched}: the "
                    "Lightning adapter stops the job (LaunchMismatchError), a bare Trainer "
                    "hangs at the rendezvous".replace("  ", " "),
                    fix=f"drop the argument and let the launch decide ({field} follows "
                    "`clusterenv run`, or ${clusterenv:" + field + "} in a Hydra config)",
                    level="error",
                )
            )
    return found
