"""Batch triage: every failed job under a folder tree or from Slurm, triaged in parallel, summarised by cost."""
