#!/bin/bash
# torchrun on one machine with 4 ranks (GPUs if there are, CPU/gloo otherwise).
set -euo pipefail
torchrun --standalone --nproc_per_node=4 train.py "$@"

# Two machines, run once on each (node 0 is the main address):
#   torchrun --nnodes=2 --node_rank=0 --nproc_per_node=4 \
#            --master_addr=node0.example.org --master_port=29500 train.py
#   torchrun --nnodes=2 --node_rank=1 --nproc_per_node=4 \
#            --master_addr=node0.example.org --master_port=29500 train.py
