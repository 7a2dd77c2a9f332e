"""The engine: the rules every source shares, applied once, and detection itself (which
source, in what order, building the spec). May import :mod:`clusterenv._core`,
:mod:`clusterenv._node` and :mod:`clusterenv.sources`; never diagnosis, adapters, the probe
or the CLI."""
