"""The NVIDIA Xid table (knowledge/xid.yaml): what each Xid means, its likely cause, and what to do.

The diagnosis reads the Xid number off a kernel line (the `xid` group of the gpu.* signatures) and looks it
up here to say whether the node must be drained and what the operator should do.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator

from crashcart.knowledge.loading import load_versioned
from crashcart.knowledge.records import Frozen, Strict
from crashcart.knowledge.taxonomy import FailureClass

XID_FILE = Path(__file__).parent / "xid.yaml"
SCHEMA_VERSION = 1
XID_CLASSES = frozenset({FailureClass.GPU_HARDWARE, FailureClass.CUDA_ERROR, FailureClass.CODE_BUG})


class Cause(str, Enum):
    """Likely cause classes, most likely first in a record (vocabulary of shared/spec/xid-reference.md)."""

    APPLICATION = "application"
    DRIVER_FIRMWARE = "driver_firmware"
    HARDWARE = "hardware"
    MEMORY_ECC = "memory_ecc"
    NVLINK = "nvlink"
    THERMAL = "thermal"
    SYMPATHETIC = "sympathetic"


class XidInfo(Frozen):
    """One Xid: meaning, cause, vendor bucket, our operator action, and how a failed job is classified."""

    code: int = Field(ge=1, le=999)
    meaning: str = Field(min_length=8)
    causes: list[Cause] = Field(min_length=1)
    catalog_bucket: str = Field(min_length=3)
    action: str = Field(min_length=8)
    failure_class: FailureClass
    drain: bool
    sympathetic: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> XidInfo:
        if self.failure_class not in XID_CLASSES:
            raise ValueError(f"Xid {self.code}: failure_class must be one of {sorted(c.value for c in XID_CLASSES)}")
        if self.drain and self.failure_class is not FailureClass.GPU_HARDWARE:
            raise ValueError(f"Xid {self.code}: only gpu_hardware Xids can require a drain")
        if self.sympathetic and self.drain:
            raise ValueError(f"Xid {self.code}: a sympathetic Xid defers to the Xid it accompanies, so no drain")
        if self.sympathetic != (Cause.SYMPATHETIC in self.causes):
            raise ValueError(f"Xid {self.code}: sympathetic flag and 'sympathetic' cause disagree")
        return self


class XidFile(Strict):
    """The shape of xid.yaml."""

    version: int = SCHEMA_VERSION
    xids: list[XidInfo] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> XidFile:
        seen: set[int] = set()
        for info in self.xids:
            if info.code in seen:
                raise ValueError(f"duplicate Xid {info.code}")
            seen.add(info.code)
        return self


def load_xid_file(path: Path) -> dict[int, XidInfo]:
    """Load and validate an Xid table; any problem is a KnowledgeError naming the file."""
    parsed = load_versioned(path, XidFile, "Xid file", SCHEMA_VERSION)
    return {info.code: info for info in parsed.xids}


@lru_cache(maxsize=1)
def load_xids() -> dict[int, XidInfo]:
    """The shipped Xid table keyed by code (cached: the file does not change at run time)."""
    return load_xid_file(XID_FILE)


def xid_info(code: int) -> XidInfo | None:
    """The record for one Xid, or None for a code the table does not know."""
    return load_xids().get(code)
