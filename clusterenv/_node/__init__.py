"""What this node has, asked without torch: its GPUs (each vendor's rules and drivers), the
CPUs a rank may use, the container it runs in, its name service and addresses, NCCL's
network plugin. May import :mod:`clusterenv._core` only."""
