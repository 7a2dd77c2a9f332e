"""What every builder returns, and the one parameter check they share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from clusterenv.exceptions import ClusterEnvError

__all__ = ["Launch", "check", "ids", "port", "positive", "rank_of"]


class Launch(dict[str, str]):
    """The environment of one process of a launch, the files its variables name, and what
    the launcher's own commands answer there.

    A plain ``dict`` of variables (pass it as ``env=``); ``files`` holds the host files a
    scheduler writes (``PBS_NODEFILE``, ``LSB_DJOB_HOSTFILE``), which are not on disk in a
    test: pass ``read_file=launch.read_file`` to :func:`~clusterenv.detect_environment`;
    ``answers`` what the launcher's commands print in the process (Flux's ``flux job
    taskmap``), which do not run in a test: pass ``ask=launch.ask``.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        files: Mapping[str, str] | None = None,
        answers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(env)
        self.files = dict(files or {})
        self.answers = dict(answers or {})

    def ask(self, argv: tuple[str, ...]) -> str | None:
        """What command ``argv`` prints in this process (from ``answers``); ``None`` where
        it is not there, like a command that is not installed."""
        return self.answers.get(" ".join(argv))

    def read_file(self, path: str) -> str:
        """The text of ``path`` from ``files``; ``FileNotFoundError`` like a missing file."""
        if path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return self.files[path]


def check(builder: str, ok: bool, message: str, hint: str) -> None:
    """Raise the builders' one error type unless ``ok``."""
    if not ok:
        raise ClusterEnvError(f"{builder}: {message}", hint=hint)


def positive(builder: str, **counts: int | None) -> None:
    """Every count given (not ``None``) is at least 1."""
    for name, value in counts.items():
        check(
            builder, value is None or value >= 1, f"{name}={value} is not >= 1", f"pass {name} >= 1"
        )


def rank_of(builder: str, rank: int, world: int) -> None:
    """``rank`` is one of ``world`` ranks."""
    check(
        builder,
        0 <= rank < world,
        f"rank={rank} is not one of {world} ranks",
        "pass 0 <= rank < ranks",
    )


def port(builder: str, value: int) -> None:
    check(
        builder,
        1 <= value <= 65535,
        f"master_port={value} is not a TCP port",
        "pass 1 <= master_port <= 65535",
    )


def ids(numbers: Sequence[int] | range) -> str:
    return ",".join(map(str, numbers))
