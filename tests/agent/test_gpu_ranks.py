"""agent/gpu_ranks.py: the rank whose GPU a kernel line names, by the PCI address the driver and NCCL both print."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.agent.gpu_ranks import pci_bus_ids
from crashcart.api import triage
from crashcart.evals.generator import JobSpec, generate_job

# NCCL prints 0000:02:00.0 as `busId 2000` (its busIdToInt64 skips `:` and `.`), newer releases without the
# function digit (`200`): both are looked for.
BUS_02 = {0x200, 0x2000}


@pytest.mark.parametrize(
    "line",
    [
        "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",  # wilicc/gpu-burn#1
        "[74889.644112] NVRM: GPU at PCI:0000:02:00: GPU-660d987e-5b28-3bf6-2a2d-1d5ecae7f6df",  # the same dmesg
        "NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.",  # scenarios.yaml's xid79 (NVIDIA/nvidia-docker#1553)
    ],
)
def test_a_driver_line_gives_the_bus_id_nccl_prints_for_its_gpu(line: str) -> None:
    assert pci_bus_ids(line) == BUS_02


def test_lines_that_name_no_gpu_give_no_bus_id() -> None:
    assert pci_bus_ids("NCCL WARN NET/IB : Got completion from peer 10.64.0.4<41455> with status=12") == set()
    assert pci_bus_ids("kernel: pcieport 0000:00:03.1: AER: Corrected error received: 0000:3b:00.0") == set()


@pytest.mark.parametrize("layout", ["per_node", "per_rank"])
def test_a_lost_gpu_names_the_rank_whose_communicator_used_it(tmp_path: Path, layout: str) -> None:
    """The Xid is in node03's kernel log with no rank; its PCI address is the busId of one rank's NCCL lines."""
    spec = JobSpec(nodes=4, gpus_per_node=8, total_mb=0.5, scenario="xid79", fault_node=3, layout=layout)
    job = generate_job(tmp_path, spec)
    diagnosis = triage(tmp_path / "logs").diagnosis
    assert diagnosis.faulty_nodes == ["node03"]
    assert diagnosis.faulty_ranks == [job.faulty_rank]
    assert job.faulty_rank is not None and job.faulty_rank // 8 == 3
