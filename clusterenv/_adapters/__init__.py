"""What the framework adapters (:mod:`clusterenv.torch`, :mod:`clusterenv.jax`,
:mod:`clusterenv.lightning`, ``clusterenv env``) derive from a spec, torch-free: a rank's
``env://`` variables, a node's torchrun arguments, its GPUs, rank-zero helpers; diagnosis
quotes them in its fixes. May import the engine and everything below it."""
