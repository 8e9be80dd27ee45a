"""A real local Slurm (munged + slurmctld + one slurmd per node) for the launcher tests."""

from .cluster import INSTALL, JobResult, LocalSlurm, SlurmError, loopback_names, missing_binaries

__all__ = ["INSTALL", "JobResult", "LocalSlurm", "SlurmError", "loopback_names", "missing_binaries"]
