"""IPython's (Jupyter's, Colab's) traceback, read as the same record as Python's own: real pastes, as printed."""

from __future__ import annotations

from crashcart.knowledge.records import LineRef
from crashcart.parsers.headers import Header, find_header
from crashcart.parsers.models import Traceback
from crashcart.parsers.tracebacks import read_structure

# rinongal/textual_inversion#75: IPython 8, a cell's frame and a library's (`File path:line, in function(args)`)
IPYTHON_8 = r"""
---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In [93], line 2
      1 import accelerate
----> 2 accelerate.notebook_launcher(training_function, args=(text_encoder, vae, unet))

File ~\AppData\Local\Programs\Python\Python310\lib\site-packages\accelerate\launchers.py:87, in notebook_launcher(function, args, num_processes, use_fp16, mixed_precision, use_port)
     85 else:
     86     if num_processes is None:
---> 87         raise ValueError(
     88             "You have to specify the number of GPUs you would like to use, add `num_processes=...` to your call."
     89         )
     91     if num_processes > 1:
     92         # Multi-GPU launch
     93         if is_torch_version("<", "1.5.0"):

ValueError: You have to specify the number of GPUs you would like to use, add `num_processes=...` to your call.
"""  # noqa: E501
# chsasank/ATIS.keras#4: IPython 7 (`path in function(args)`, the line number only at the arrow)
IPYTHON_7 = """
UnpicklingError                           Traceback (most recent call last)
<ipython-input-13-d6cdf9258128> in <module>()
      2 import data.load
      3 
----> 4 train_set, valid_set, dicts = data.load.atisfull()
      5 w2idx, labels2idx = dicts['words2idx'], dicts['labels2idx']
      6 

/home/ec2-user/tf-notebook/query_intent_detection/slotfilling/data/load.pyc in atisfull()
     49 
     50     try:
---> 51         train_set, test_set, dicts = pickle.load(f)
     52     except UnicodeDecodeError:
     53         train_set, test_set, dicts = pickle.load(f, encoding='latin1')

UnpicklingError: invalid load key, '<'.
"""  # noqa: W291
# MIT-LCP/physionet-build#2190: Colab links the path and folds the library frames; the excerpt ends there
COLAB = """
---------------------------------------------------------------------------
CastError                                 Traceback (most recent call last)
[/usr/local/lib/python3.10/dist-packages/datasets/builder.py](https://localhost:8080/#) in _prepare_split_single(self, gen_kwargs, fpath, file_format, max_shard_size, job_id)
   1988                     try:
-> 1989                         writer.write_table(table)
   1990                     except CastError as cast_error:

8 frames
"""  # noqa: E501


def ref(text: str, line: int) -> LineRef:
    return LineRef(file="notebook.log", line=line, text=text)


def traceback_of(log: str) -> tuple[Traceback, int, list[str]]:
    lines = log.strip("\n").split("\n")
    at = next(i for i, line in enumerate(lines) if find_header(line) is not None)
    record, used = read_structure(lines[at:], at + 1, ref)
    assert isinstance(record, Traceback)
    return record, used, lines[at:]


def test_ipythons_header_is_a_python_header() -> None:
    assert find_header("ValueError                                Traceback (most recent call last)") == (
        Header.PYTHON,
        0,
    )
    assert find_header("---------------------------------------------------------------------------") is None


def test_an_ipython_8_traceback_gives_the_frames_and_the_exception() -> None:
    record, used, lines = traceback_of(IPYTHON_8)
    assert record.kind == "python" and used == len(lines)
    (exc,) = record.chain
    assert exc.exc_type == "ValueError" and exc.message.startswith("You have to specify the number of GPUs")
    assert [(f.file.rsplit("\\", 1)[-1], f.line, f.function, f.package) for f in exc.frames] == [
        ("Cell In [93]", 2, "<module>", None),
        ("launchers.py", 87, "notebook_launcher", "accelerate"),
    ]
    assert [f.source for f in exc.frames] == [
        "accelerate.notebook_launcher(training_function, args=(text_encoder, vae, unet))",
        "raise ValueError(",
    ]


def test_an_ipython_7_traceback_takes_each_frames_line_from_its_arrow() -> None:
    record, _, _ = traceback_of(IPYTHON_7)
    (exc,) = record.chain
    assert (exc.exc_type, exc.message, exc.ref.line) == ("UnpicklingError", "invalid load key, '<'.", 16)
    assert [(f.file, f.line, f.function, f.source) for f in exc.frames] == [
        ("<ipython-input-13-d6cdf9258128>", 4, "<module>", "train_set, valid_set, dicts = data.load.atisfull()"),
        (
            "/home/ec2-user/tf-notebook/query_intent_detection/slotfilling/data/load.pyc",
            51,
            "atisfull",
            "train_set, test_set, dicts = pickle.load(f)",
        ),
    ]


def test_colabs_linked_path_is_the_frames_file_and_a_cut_excerpt_keeps_its_frames() -> None:
    record, _, _ = traceback_of(COLAB)
    assert record.chain == []
    (frame,) = record.unfinished
    assert (frame.file, frame.line, frame.function, frame.source, frame.package) == (
        "/usr/local/lib/python3.10/dist-packages/datasets/builder.py",
        1989,
        "_prepare_split_single",
        "writer.write_table(table)",
        "datasets",
    )


# python-pillow/Pillow#5141: TensorFlow's py_func error carries the Python traceback with a blank line under its
# header; the excerpt ends in the first frame
BLANK_UNDER_THE_HEADER = """
UnknownError:  UnidentifiedImageError: cannot identify image file <_io.BytesIO object at 0x7f9c489460a0>
Traceback (most recent call last):

  File "/usr/local/lib/python3.6/dist-packages/tensorflow/python/ops/script_ops.py", line 249, in __call__
    ret = func(*args)
"""


def test_a_blank_line_under_the_header_does_not_hide_the_frames() -> None:
    record, _, _ = traceback_of(BLANK_UNDER_THE_HEADER)
    (frame,) = record.unfinished
    assert (frame.function, frame.source, frame.package) == ("__call__", "ret = func(*args)", "tensorflow")
