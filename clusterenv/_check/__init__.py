"""`clusterenv check`: a job script read before submission, every task it will start
predicted by the launch models, and the mistakes it shows named at their lines.

May import diagnosis, the engine, the launch models and everything below them; never the
probe or the CLI."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from clusterenv._check.predict import predict
from clusterenv._check.report import CheckReport, Finding, NotModelled
from clusterenv._check.shell import read_script
from clusterenv.sources import script_scheduler

__all__ = ["check"]


def check(
    path: str,
    env: Mapping[str, str],
    argv: Sequence[str] = (),
    silenced: Iterable[str] = (),
    *,
    ask: bool = False,
) -> CheckReport:
    """What sbatch makes of the job script at ``path`` submitted from ``env`` (its
    ``SBATCH_*`` input variables) with ``argv``'s options, and what every task will see;
    with ``ask``, the scheduler configured here is asked too (``sbatch --test-only``)."""
    physical = read_script(path)
    scheduler = script_scheduler(physical)
    read = scheduler.directives(physical, env, argv)
    prediction = predict(physical, read, scheduler)
    answer = scheduler.test_submit(path, argv) if ask else None
    if answer is not None:
        prediction.findings += [(0, finding) for finding in answer[1]]
    quiet = frozenset(silenced)
    seen: set[tuple[int, str, str]] = set()
    findings = []
    for line, finding in sorted(read.findings + prediction.findings, key=lambda item: item[0]):
        key = (line, finding.id, finding.message)
        if key in seen or finding.id in quiet:
            continue
        seen.add(key)
        findings.append(Finding(line=line, **finding.model_dump()))
    return CheckReport(
        script=path,
        scheduler_says=None if answer is None else answer[0],
        allocation=prediction.allocation,
        launches=prediction.launches,
        findings=findings,
        not_modelled=[
            *(
                NotModelled(line=line, text=physical[line - 1][:200], why=why)
                for line, why in read.unread
            ),
            *prediction.not_modelled,
        ],
    )
