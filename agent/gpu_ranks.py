"""The rank whose GPU a driver line names, from the PCI address both the driver and NCCL print.

An Xid or a lost GPU is logged by the kernel with the GPU's PCI address (`NVRM: Xid (PCI:0000:df:00): 79`) and no
rank; NCCL logs each rank's communicator with the same address as an integer (`... rank 7 nranks 16 cudaDev 7
busId df000 - Init COMPLETE`: NCCL's busIdToInt64 reads the address's hex digits, skipping `:` and `.`; newer
releases stop at the `.`, dropping the function digit). So the node's communicator lines say which rank lost its GPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashcart.agent.event_kinds import Signal
from crashcart.parsers.models import FileScan, RuleHit
from crashcart.parsers.numbers import small_int

NCCL_INIT_RULE = "ctx.nccl_init"
# `PCI:0000:df:00` (Xid), `GPU 0000:df:00.0:` and `GPU at PCI:0000:df:00:` (NVRM), `00000000:DF:00.0` (nvidia-smi)
_PCI = re.compile(
    r"(?:PCI:|\bGPU (?:at PCI:)?)([0-9a-f]{4}(?:[0-9a-f]{4})?:[0-9a-f]{2}:[0-9a-f]{2})(?:\.([0-7]))?", re.I
)
_BUS_ID = re.compile(r"\bbusId ([0-9a-f]{1,16})\b")


def pci_bus_ids(text: str) -> set[int]:
    """The integers NCCL would print as `busId` for the GPU a driver line names: with and without the function
    digit (a GPU's is 0 when the line leaves it out), as releases differ; empty when the line names no GPU."""
    m = _PCI.search(text)
    if m is None:
        return set()
    domain, bus, device = m.group(1).split(":")
    without = (int(domain, 16) << 8 | int(bus, 16)) << 8 | int(device, 16)
    return {without, without << 4 | int(m.group(2) or "0")}


def gpu_ranks(roots: Sequence[Signal], scans: Sequence[FileScan]) -> list[int]:
    """The global ranks whose GPU the root-cause lines name, by node and PCI address.

    A job has one communicator per parallel group, each printing a rank within its group; the one with the most
    ranks on the line (the world's) gives the global rank.
    """
    wanted = {(_short(e.node), bus) for e in roots if e.node for bus in pci_bus_ids(e.text)}
    if not wanted:
        return []
    best: dict[tuple[str, int], tuple[int, int]] = {}  # (node, busId) -> (nranks, rank)
    for hit in _nccl_inits(scans):
        bus, rank = _BUS_ID.search(hit.ref.text), small_int(hit.captures.get("rank", ""))
        if bus is None or rank is None or hit.ref.node is None:
            continue
        key = (_short(hit.ref.node), int(bus.group(1), 16))
        size = small_int(hit.captures.get("nranks", "")) or 0
        if key in wanted and size > best.get(key, (-1, 0))[0]:
            best[key] = (size, rank)
    return sorted({rank for _, rank in best.values()})


def _nccl_inits(scans: Sequence[FileScan]) -> list[RuleHit]:
    return [h for scan in scans for h in scan.hits if h.rule_id == NCCL_INIT_RULE and "busId" in h.ref.text]


def _short(host: str) -> str:
    """A host's first label: the kernel log says `node07`, NCCL may say `node07.cluster`."""
    return host.split(".", 1)[0].lower()
