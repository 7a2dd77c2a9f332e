"""MPI ranks: Open MPI 4.1 and MPICH (hydra)."""

from __future__ import annotations

from clusterenv._models.launch import Launch, positive, rank_of

__all__ = ["examples", "mpich_env", "openmpi_env"]


def openmpi_env(
    np: int = 1, rank: int = 0, *, slots: int | None = None, job_id: int = 4242 << 16
) -> Launch:
    """Rank ``rank`` of Open MPI 4.1's ``mpirun --oversubscribe -np NP`` on one host.

    ``slots`` is the host's slot count (its cores; default ``np``): more ranks than slots
    make Open MPI oversubscribe instead of binding. ``OMPI_COMM_WORLD_NODE_RANK`` is, as in
    the real thing, the rank within the node, not the node.
    """
    positive("openmpi_env", np=np, slots=slots)
    rank_of("openmpi_env", rank, np)
    slots = slots or np
    daemon = f"{job_id - 1}.0;tcp://10.0.0.1:41813"
    session = f"/tmp/ompi.host.0/jf.{job_id >> 16}"
    env = {
        "OMPI_APP_CTX_NUM_PROCS": str(np),
        "OMPI_ARGV": "train.py",
        "OMPI_COMMAND": "python",
        "OMPI_COMM_WORLD_RANK": str(rank),
        "OMPI_COMM_WORLD_SIZE": str(np),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(np),
        "OMPI_COMM_WORLD_NODE_RANK": str(rank),
        "OMPI_FILE_LOCATION": f"{session}/1/{rank}",
        "OMPI_FIRST_RANKS": "0",
        "OMPI_MCA_ess": "^singleton",
        "OMPI_MCA_ess_base_jobid": str(job_id),
        "OMPI_MCA_ess_base_vpid": str(rank),
        "OMPI_MCA_initial_wdir": "/home/user",
        "OMPI_MCA_mpi_oversubscribe": "1" if np > slots else "0",
        "OMPI_MCA_orte_app_num": "0",
        "OMPI_MCA_orte_ess_node_rank": str(rank),
        "OMPI_MCA_orte_ess_num_procs": str(np),
        "OMPI_MCA_orte_hnp_uri": daemon,
        "OMPI_MCA_orte_jobfam_session_dir": session,
        "OMPI_MCA_orte_launch": "1",
        "OMPI_MCA_orte_local_daemon_uri": daemon,
        "OMPI_MCA_orte_num_nodes": "1",
        "OMPI_MCA_orte_precondition_transports": "0b535d86c88adf3a-31ea5102151c874c",
        "OMPI_MCA_orte_tmpdir_base": "/tmp",
        "OMPI_MCA_orte_top_session_dir": "/tmp/ompi.host.0",
        "OMPI_MCA_pmix": "^s1,s2,cray,isolated",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_shmem_RUNTIME_QUERY_hint": "mmap",
        "OMPI_NUM_APP_CTX": "1",
        "OMPI_UNIVERSE_SIZE": str(slots),
    }
    if np <= slots:
        env["OMPI_MCA_orte_bound_at_launch"] = "1"
    server = f"{job_id - 1}.0;tcp4://127.0.0.1:46035"
    return Launch(
        env
        | {
            "PMIX_BFROP_BUFFER_TYPE": "PMIX_BFROP_BUFFER_NON_DESC",
            "PMIX_DSTORE_21_BASE_PATH": f"{session}/pmix_dstor_ds21",
            "PMIX_DSTORE_ESH_BASE_PATH": f"{session}/pmix_dstor_ds12",
            "PMIX_GDS_MODULE": "ds21,ds12,hash",
            "PMIX_HOSTNAME": "host",
            "PMIX_ID": f"{job_id}.{rank}",
            "PMIX_MCA_mca_base_component_show_load_errors": "1",
            "PMIX_NAMESPACE": str(job_id),
            "PMIX_RANK": str(rank),
            "PMIX_SECURITY_MODE": "munge,native",
            "PMIX_SERVER_TMPDIR": session,
            **{f"PMIX_SERVER_URI{v}": server for v in ("2", "21", "3", "4", "41")},
            "PMIX_SYSTEM_TMPDIR": "/tmp",
            "PMIX_VERSION": "4.2.2rc2",
        }
    )


def mpich_env(
    np: int = 1, rank: int = 0, *, ranks_per_node: int | None = None, master_addr: str | None = None
) -> Launch:
    """Rank ``rank`` of MPICH's ``mpirun -np NP -ppn RANKS_PER_NODE`` (hydra).

    Hydra names neither the nodes nor the main host: a launch over several nodes needs
    ``MASTER_ADDR`` in the environment (``master_addr``), as it does for real.
    """
    positive("mpich_env", np=np, ranks_per_node=ranks_per_node)
    rank_of("mpich_env", rank, np)
    per_node = ranks_per_node or np
    node_ranks = min(per_node, np - rank // per_node * per_node)  # the last node may run fewer
    env = {
        "PMI_RANK": str(rank),
        "PMI_SIZE": str(np),
        "PMI_FD": str(6 + rank % per_node),
        "MPI_LOCALRANKID": str(rank % per_node),
        "MPI_LOCALNRANKS": str(node_ranks),
    }
    return Launch(env | ({"MASTER_ADDR": master_addr} if master_addr else {}))


def examples() -> list[Launch]:
    """One launch per role this source produces: the contract tests run every source's."""
    return [openmpi_env(2, 1), mpich_env(4, 3, ranks_per_node=2, master_addr="n1")]
