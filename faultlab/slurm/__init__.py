"""faultlab on a SLURM cluster: the launcher (a member of the launcher seam), its job script,
the scheduler's commands, the options users give, and preflight. See docs/cluster.md."""
