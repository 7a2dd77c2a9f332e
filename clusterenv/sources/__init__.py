"""One module per scheduler or launcher, all behind :class:`~clusterenv.sources.base.Detector`."""
