"""The `slurm_cluster` fixture: one private Slurm cluster for the whole session, stopped at the end.

It skips only when Slurm is not installed (`.ci/install-slurm.sh` installs it); any other start-up failure
fails loudly, with the daemon's log tail, so CI cannot go green without having run against real Slurm.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# cluster.py is test infrastructure beside this file, not a package: make `import cluster` find it.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import SlurmCluster, missing_binaries  # noqa: E402


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    if shutil.which("slurmctld") is None and not Path("/usr/sbin/slurmctld").exists():
        pytest.skip("Slurm is not installed (run .ci/install-slurm.sh: slurm-wlm slurmdbd munge mariadb-server)")
    missing = missing_binaries()
    if missing:
        pytest.fail(f"Slurm is installed but these are missing: {', '.join(missing)} (run .ci/install-slurm.sh)")
    if os.geteuid() != 0:
        pytest.fail("the Slurm tests need root: slurmd starts jobs as their user and mknods fake GPU devices")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    began = time.perf_counter()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])  # sacct/scontrol run by crashcart find it
            cluster.start()
            print(f"\nslurm cluster up in {time.perf_counter() - began:.1f}s: {cluster.timings}", file=sys.stderr)
            yield cluster
    finally:
        stopping = time.perf_counter()
        cluster.stop()
        print(f"\nslurm cluster stopped in {time.perf_counter() - stopping:.1f}s", file=sys.stderr)
        shutil.rmtree(cluster.root / "db", ignore_errors=True)  # ~100 MB of InnoDB files; the logs stay
