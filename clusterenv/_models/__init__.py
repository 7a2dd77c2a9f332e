"""Launch models: for each launcher's options, exactly what every process of the launch
sees (the builders :mod:`clusterenv.testing` exports, each checked against live captures of
the real launcher). Knowledge the package uses at run time too, so it lives outside
``testing``. May import :mod:`clusterenv._core` and :mod:`clusterenv.hostlist` only."""
