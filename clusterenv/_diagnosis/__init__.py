"""Diagnosis of a detected launch: the facts of this machine, multiprocessing copies of a
rank, the findings every source shares, silencing them by id, the pre-flight check and what
a capture records. May import :mod:`clusterenv._adapters`, the engine and everything below;
never the public adapters, the probe or the CLI."""
