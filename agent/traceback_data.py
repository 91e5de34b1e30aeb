"""Traceback rules about reading training data.

An exception raised while a record is read or decoded (DataLoader workers, image decoders, dataset, JSON and
Arrow readers) is the data's, except tensor-storage misuse in collate/getitem, which is the code's. Stacking
tensors of unequal size is the code's in a collate function (samples of different sizes need padding or a
resize), the data's inside a dataset's __getitem__ (one sample's own records disagree) or when the shapes differ
in rank (a grey-scale or RGBA image, a colour mask, among the others). A number that does not parse, raised
while numpy, pandas or scikit-learn convert a table, is a malformed record. A text decode error is the data's (a
file not in the encoding its reader expects), unless a deserialiser read it: a pickle's first byte failing as
UTF-8 under pickle.load means the file was opened in text mode, a code bug. pickle.load running out of input on the
job's own files is an empty or truncated data file (a cache an earlier run left empty, a download cut short).
A KeyError raised in the user's own function that loads or reads the data is a record without a field the code
expects (a dialog without its "topic", an annotation without its "bbox"). A ZeroDivisionError where the raising
line divides by a len() is a dataset or file list that came out empty (no image found where the loader looks).
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
_COLLATE_BUG = re.compile(r"resize storage|storage that is not resizable|batch must contain tensors")
# torch.stack's check (aten): "stack expects each tensor to be equal size, but got [4, 144, 112] at entry 0 and
# [4, 136, 120] at entry 3".
_STACK_SIZES = re.compile(
    r"stack expects each tensor to be equal size, but got \[([^\]]*)\] at entry \d+ and \[([^\]]*)\]"
)
# A value of a table that does not parse as a number, in numpy's, CPython's and pandas' words.
_NOT_A_NUMBER = re.compile(
    r"could not convert string to float|invalid literal for (?:int\(\) with base \d+|float\(\))"
    r"|Unable to parse string \""
)
# Libraries that turn a table of records into numbers: a value that does not parse there is in the data.
_TABLE_PACKAGES = frozenset({"numpy", "pandas", "sklearn"})
# An unpickler called by the job's own code (not torch.load, whose files are checkpoints, nor multiprocessing's
# start-up, where a Windows DataLoader worker that failed to start leaves its parent "Ran out of input").
_UNPICKLE = re.compile(r"\b(?:c?[Pp]ickle|pkl|joblib|dill|np|numpy)\.load\(")
_NOT_DATA_UNPICKLERS = ("multiprocessing/", "torch/serialization.py")
# The raising line divides (or takes a modulo) by a collection's size: `m / len(images)`, `x /= len(ds)`, `i % len(d)`.
_BY_LENGTH = re.compile(r"(?://|/|%)=?\s*len\(")
# Readers of binary formats that, handed a text-mode file, see its bytes decoded as text.
_DESERIALISER = re.compile(r"\b(?:pickle|cPickle|torch|np|numpy|joblib|dill)\.loads?\(")
# The names of the user's functions that turn data files into records.
_READS_RECORDS = re.compile(
    r"(?:load|read|get|build|prepare|parse|process)_?(?:data|dataset|split|samples?|examples?|records?|annotations?)"
    r"|data_?loaders?",
    re.IGNORECASE,
)


def is_worker_reraise(exc: RaisedException) -> bool:
    return bool(_WORKER_RERAISE.match(exc.message))


def _missing_field(exc: RaisedException) -> bool:
    frame = raiser(exc.frames)
    return (
        short_type(exc) == "KeyError"
        and frame is not None
        and is_user(frame)
        and bool(_READS_RECORDS.search(frame.function or ""))
    )


def _is_data_frame(frame: Frame) -> bool:
    """A frame that reads or decodes training data: DataLoader internals, decoders, dataset readers."""
    file = path(frame)
    if "torch/utils/data/" in file or frame.package in _DATA_PACKAGES:
        return True
    if is_stdlib(frame):
        return "/json/" in file
    return is_user(frame) and frame.function in ("__getitem__", "__getitems__")


def data_loading(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Exceptions while reading a record are the data's, except tensor-storage misuse in collate/getitem and
    stacking samples of different sizes in a collate function."""
    if _table_value(exc):
        return Finding("malformed_value", FailureClass.DATA_ERROR, LIKELY, "a value of the data is not a number")
    if _empty_pickle(exc):
        return Finding("empty_pickle", FailureClass.DATA_ERROR, LIKELY, "a pickled data file is empty or cut short")
    if _missing_field(exc):
        return Finding("missing_field", FailureClass.DATA_ERROR, LIKELY, "a data record lacks a field the code reads")
    if _divided_by_empty(exc):
        return Finding("empty_collection", FailureClass.DATA_ERROR, LIKELY, "divided by the size of an empty dataset")
    reading = tb.worker is not None or is_worker_reraise(exc) or any(map(_is_data_frame, exc.frames))
    if not reading and not _raised_by_library_dataset(exc):
        return None
    in_collate = any(_collates(f) for f in exc.frames)
    if _COLLATE_BUG.search(exc.message) or (in_collate and short_type(exc) == "TypeError"):
        return Finding("collate_bug", FailureClass.CODE_BUG, OWN_CODE, "tensor storage misused in collate/getitem")
    stacked = _STACK_SIZES.search(exc.message)
    if stacked and in_collate and _rank(stacked.group(1)) == _rank(stacked.group(2)):
        return Finding("collate_bug", FailureClass.CODE_BUG, OWN_CODE, "samples of different sizes stacked in collate")
    return Finding("data_loading", FailureClass.DATA_ERROR, LIKELY, "raised while reading data")


def _collates(frame: Frame) -> bool:
    """torch's collate.py, or a collate function of the project's (the DataLoader's collate_fn)."""
    return path(frame).endswith("collate.py") or "collate" in (frame.function or "").lower()


def _rank(shape: str) -> int:
    return len([d for d in shape.split(",") if d.strip()])


def _empty_pickle(exc: RaisedException) -> bool:
    """EOFError 'Ran out of input' from pickle.load (or np/joblib's) on a data file: it is empty or cut short."""
    if short_type(exc) != "EOFError" or "Ran out of input" not in exc.message:
        return False
    if any(marker in path(f) for f in exc.frames for marker in _NOT_DATA_UNPICKLERS):
        return False
    return any(_UNPICKLE.search(f.source or "") for f in exc.frames)


def _divided_by_empty(exc: RaisedException) -> bool:
    """A ZeroDivisionError whose raising line divides by a len(): the dataset or file list it measures is empty."""
    if short_type(exc) != "ZeroDivisionError":
        return False
    raised = raiser(exc.frames)
    return raised is not None and bool(_BY_LENGTH.search(raised.source or ""))


def _table_value(exc: RaisedException) -> bool:
    """A ValueError about a value that is not a number, raised where numpy/pandas/scikit-learn convert data."""
    if short_type(exc) != "ValueError" or not _NOT_A_NUMBER.search(exc.message):
        return False
    raised = raiser(exc.frames)
    return raised is not None and raised.package in _TABLE_PACKAGES


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
