"""The text a proposed rule is tried on before anyone confirms it: healthy training logs and random log-like lines.

A rule that fires on a healthy run would send every job to the wrong fix, so a proposal must match none of
these lines. The healthy corpus is the shipped samples in knowledge/healthy/*.log (Megatron, DeepSpeed, HF
Trainer, torchrun, NCCL INFO, Slurm, kernel: the benign lines that look alarming) plus a small healthy job from
the eval generator in its per-node and Slurm layouts. The random sample catches patterns that are merely
broad (`error`, `\\d+ failed`) without happening to hit a healthy line.
"""

from __future__ import annotations

import random
import tempfile
from functools import lru_cache
from pathlib import Path

from crashcart.knowledge.errors import KnowledgeError

HEALTHY_DIR = Path(__file__).resolve().parents[1] / "knowledge" / "healthy"
RANDOM_LINES = 2000
_VOCABULARY = (
    "the a of to in for on with from by at is was not no all any some this that job step iter iteration epoch "
    "loss lr grad norm rank node host gpu GPU cuda CUDA NCCL nccl torch python process thread worker device "
    "memory allocated reserved free total used error errors failed failure warning WARN INFO DEBUG ERROR fatal "
    "timeout timed out retry retrying connection connect refused reset closed peer socket network link port "
    "file path read write open save saved load loaded checkpoint shard tensor model layer batch size data "
    "dataset sample token tokens seq length world local global group comm init start started done finished "
    "exit exited code status signal killed abort aborted unknown invalid value missing found expected got "
    "time elapsed ms seconds throughput samples/s TFLOPs kernel driver version module library config option "
    "disk space quota mount server client request response queue scheduler slurm srun task pid uid"
)
_WORDS = tuple(_VOCABULARY.split())


def healthy_corpus() -> list[str]:
    """Distinct healthy training-log lines (about 2,100), built once per process."""
    return list(_healthy())


@lru_cache(maxsize=1)
def _healthy() -> tuple[str, ...]:
    lines: dict[str, None] = {}
    samples = sorted(HEALTHY_DIR.glob("*.log"))
    if not samples:  # a validation against the generated job alone would pass rules that fire on DeepSpeed or HF
        raise KnowledgeError(f"no healthy log samples in {HEALTHY_DIR}: reinstall crashcart with its package data "
                             "(knowledge/healthy/*.log)")
    for path in samples:
        lines.update(dict.fromkeys(path.read_text(encoding="utf-8").splitlines()))
    lines.update(dict.fromkeys(_generated_healthy()))
    lines.pop("", None)
    return tuple(lines)


def _generated_healthy() -> list[str]:
    """Lines of a small healthy job from evals.generator (scenario "none"), in two launcher layouts."""
    from crashcart.evals.generator import JobSpec, generate_job  # the generator is only needed here, once

    lines: list[str] = []
    specs = [JobSpec(nodes=2, gpus_per_node=2, total_mb=0.2, scenario="none", seed=7),
             JobSpec(nodes=2, gpus_per_node=2, total_mb=0.1, scenario="none", seed=8, layout="slurm",
                     torchrun_prefix=False, hostname="gpu-{:03d}")]
    for spec in specs:
        with tempfile.TemporaryDirectory(prefix="crashcart-healthy-") as tmp:
            generate_job(Path(tmp), spec, workers=1)
            for path in sorted((Path(tmp) / "logs").iterdir()):
                lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
    return lines


@lru_cache(maxsize=1)
def random_lines() -> tuple[str, ...]:
    """RANDOM_LINES seeded lines of log-ish words, numbers, hex ids, paths and addresses (the same every run)."""
    rng = random.Random(20240501)
    fillers = [
        lambda: str(rng.randrange(0, 100000)),
        lambda: f"{rng.random() * 100:.3f}",
        lambda: f"0x{rng.getrandbits(32):08x}",
        lambda: "/" + "/".join(rng.choice(_WORDS).lower() for _ in range(rng.randrange(2, 5))),
        lambda: ".".join(str(rng.randrange(256)) for _ in range(4)),
        lambda: f"{rng.choice(_WORDS)}={rng.randrange(1000)}",
        lambda: rng.choice(["[", "]", "(", ")", ":", "|", "-", ",", "=>"]),
    ]
    out = []
    for _ in range(RANDOM_LINES):
        words = [rng.choice(fillers)() if rng.random() < 0.3 else rng.choice(_WORDS)
                 for _ in range(rng.randrange(3, 18))]
        out.append(" ".join(words))
    return tuple(out)
