"""The text a proposed rule is tried on before anyone confirms it: healthy training logs and random log-like lines.

A rule that fires on a healthy run would send every job to the wrong fix, so a proposal must match none of
these lines. The healthy corpus is data, loaded where it lives (knowledge/healthy.py). The
random sample is code, not a log: seeded lines of log-like words that catch patterns that are merely broad
(`error`, `\\d+ failed`) without happening to hit a healthy line; only the proposal check uses it.
"""

from __future__ import annotations

import random
from functools import lru_cache

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
        words = [
            rng.choice(fillers)() if rng.random() < 0.3 else rng.choice(_WORDS) for _ in range(rng.randrange(3, 18))
        ]
        out.append(" ".join(words))
    return tuple(out)
