"""Traceback rules about reading training data.

An exception raised while a record is read or decoded (DataLoader workers, image decoders, dataset, JSON and
Arrow readers) is the data's, except tensor-storage misuse in collate/getitem, which is the code's. A text
decode error is the data's (a file not in the encoding its reader expects), unless a deserialiser read it: a
pickle's first byte failing as UTF-8 under pickle.load means the file was opened in text mode, a code bug.
"""

from __future__ import annotations

import re

from crashcart.agent.traceback_findings import CONFIDENT, LIKELY, OWN_CODE, Finding
from crashcart.agent.traceback_frames import basename, is_library, is_stdlib, is_user, path, raiser, short_type
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import Frame, RaisedException, Traceback

_WORKER_RERAISE = re.compile(r"^Caught (\S+) in DataLoader worker process \d+")
_DATA_PACKAGES = frozenset(
    {"PIL", "cv2", "imageio", "pyarrow", "webdataset", "datasets", "decord", "soundfile", "librosa", "av", "lmdb"}
)
_COLLATE_BUG = re.compile(
    r"stack expects each tensor to be equal size|resize storage|storage that is not resizable"
    r"|batch must contain tensors"
)
# Readers of binary formats that, handed a text-mode file, see its bytes decoded as text.
_DESERIALISER = re.compile(r"\b(?:pickle|cPickle|torch|np|numpy|joblib|dill)\.loads?\(")


def is_worker_reraise(exc: RaisedException) -> bool:
    return bool(_WORKER_RERAISE.match(exc.message))


def _is_data_frame(frame: Frame) -> bool:
    """A frame that reads or decodes training data: DataLoader internals, decoders, dataset readers."""
    file = path(frame)
    if "torch/utils/data/" in file or frame.package in _DATA_PACKAGES:
        return True
    if is_stdlib(frame):
        return "/json/" in file
    return is_user(frame) and frame.function in ("__getitem__", "__getitems__")


def data_loading(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Exceptions while reading a record are the data's, except tensor-storage misuse in collate/getitem."""
    reading = tb.worker is not None or is_worker_reraise(exc) or any(map(_is_data_frame, exc.frames))
    if not reading and not _raised_by_library_dataset(exc):
        return None
    in_collate = any(path(f).endswith("collate.py") for f in exc.frames)
    if _COLLATE_BUG.search(exc.message) or (in_collate and short_type(exc) == "TypeError"):
        return Finding("collate_bug", FailureClass.CODE_BUG, OWN_CODE, "tensor storage misused in collate/getitem")
    return Finding("data_loading", FailureClass.DATA_ERROR, LIKELY, "raised while reading data")


def _raised_by_library_dataset(exc: RaisedException) -> bool:
    """A ValueError/KeyError raised in an installed package's dataset module: the library's dataset class checks
    the records it is given (a JSONL without the fields it needs, an empty split), so the records are wrong."""
    raised = raiser(exc.frames)
    named = raised is not None and is_library(raised) and "dataset" in basename(raised).lower()
    return named and short_type(exc) in ("ValueError", "KeyError")


def text_decoding(exc: RaisedException, tb: Traceback) -> Finding | None:
    """A UnicodeDecodeError: a binary file through a text handle under a deserialiser, else a data file that is
    not valid text in the encoding its reader expects."""
    if short_type(exc) != "UnicodeDecodeError" or not exc.frames:
        return None
    if any(_DESERIALISER.search(f.source or "") for f in exc.frames):
        return Finding("binary_read_as_text", FailureClass.CODE_BUG, CONFIDENT, "a binary file opened in text mode")
    return Finding("text_decoding", FailureClass.DATA_ERROR, LIKELY, "a file is not valid text in its encoding")
