"""Every error clusterenv raises.

All of them derive from :class:`ClusterEnvError`, itself a :class:`ValueError`, so
``except ValueError`` keeps working for callers that do not know clusterenv. Each
message names the variable(s) involved, the value found, and a ``HINT:`` saying what
to do about it::

    ClusterEnvError
    ├── MissingVariableError           a variable the source needs is not set
    ├── InvalidVariableError           a variable is set but its value cannot be parsed
    │   └── HostlistError              a Slurm hostlist is malformed
    ├── InconsistentEnvironmentError   values parse, but contradict each other
    ├── LaunchMismatchError            a framework's settings (Lightning's num_nodes,
    │                                  devices) contradict the launch
    ├── PreflightError                 the pre-flight check where training starts found
    │                                  what makes a hang certain (or, strict, a warning)
    ├── ProbeError                     `clusterenv probe`: the ranks cannot all reach rank 0,
    │                                  or they disagree about the job (``clusterenv.ProbeError``,
    │                                  defined with the probe, which it carries the table of)
    └── MissingDependencyError         an optional package (Lightning) is not installed
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterenv._core.safe import escape, redact_text

__all__ = [
    "ClusterEnvError",
    "HostlistError",
    "InconsistentEnvironmentError",
    "InvalidVariableError",
    "LaunchMismatchError",
    "MissingDependencyError",
    "MissingVariableError",
    "PreflightError",
]


class ClusterEnvError(ValueError):
    """Base class: the environment does not describe a usable set of resources.

    ``variables`` names the environment variables involved (may be empty when the
    input did not come from the environment, e.g. a direct ``expand_hostlist`` call)
    and ``hint`` says what to do.
    """

    def __init__(self, message: str, *, variables: Sequence[str] = (), hint: str = "") -> None:
        self.variables = tuple(variables)
        self.hint = hint
        # Messages quote values from the environment: never a secret, never a raw escape.
        text = f"{message}. HINT: {hint}" if hint else message
        super().__init__(escape(redact_text(text)))


class MissingVariableError(ClusterEnvError):
    """A variable that the detected (or forced) source needs is not set."""


class InvalidVariableError(ClusterEnvError):
    """A variable is set, but its value has the wrong format or is out of range."""


class HostlistError(InvalidVariableError):
    """A Slurm hostlist expression (e.g. ``cn[001-004]``) is malformed."""


class InconsistentEnvironmentError(ClusterEnvError):
    """Values parse on their own but contradict each other (e.g. rank >= world size)."""


class MissingDependencyError(ClusterEnvError, ImportError):
    """An optional dependency (e.g. Lightning for :mod:`clusterenv.lightning`) is missing."""


class LaunchMismatchError(ClusterEnvError):
    """A framework setting (Lightning's ``num_nodes``/``devices``) contradicts the launch:
    training would hang at the first collective instead of failing."""


class PreflightError(ClusterEnvError):
    """The pre-flight check (:func:`clusterenv.preflight`, run by ``clusterenv run`` and the
    torch, JAX and Lightning adapters) found what makes a hang certain, such as a main
    address that does not resolve on this node; with ``CLUSTERENV_STRICT=1``, any warning."""


def __getattr__(name: str) -> type[ClusterEnvError]:
    """``ProbeError``, defined with the probe (which imports this module), imported only
    when asked for: ``from clusterenv.exceptions import ProbeError`` works like every other
    error, without an import circle and without importing the probe for detection."""
    if name == "ProbeError":
        from clusterenv._probe import ProbeError  # noqa: PLC0415

        return ProbeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
