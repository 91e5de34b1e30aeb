"""A frame's package from its path, and a failing assert's expression, beside the frames they come from."""

from __future__ import annotations

import pytest

from crashcart.parsers.frames import asserted, package_of

PATHS = [
    # installed packages: the first component after site-/dist-packages
    (
        "/home/ml/radishevskii/anaconda3/envs/inga_vlad/lib/python3.8/site-packages/torch/serialization.py",
        "torch",
    ),  # hhj1897/face_parsing#3  # noqa: E501
    ("/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/worker.py", "torch"),  # dbolya/yolact#644
    (r"C:\Miniconda\envs\mescore\lib\site-packages\tqdm\_monitor.py", "tqdm"),  # nel-lab/mesmerize-core#337
    ("/usr/local/lib/python3.7/site-packages/sentry_sdk/integrations/threading.py", "sentry_sdk"),  # h4/lywsd02#18
    # eggs: the package inside the egg
    (
        "/data0/zhouxiang/miniconda3/envs/direct/lib/python3.9/site-packages/direct-2.1.0-py3.9-linux-x86_64.egg/direct/cli/__init__.py",
        "direct",
    ),  # NKI-AI/direct#291  # noqa: E501
    (
        "/home/duguangxing/anaconda3/lib/python3.8/site-packages/mmcv-1.3.7-py3.8.egg/mmcv/runner/iter_based_runner.py",
        "mmcv",
    ),  # lhoyer/DAFormer#30  # noqa: E501
    # a single-file module (the path form, not a log line): its name without .py
    ("/usr/lib/python3/dist-packages/six.py", "six"),
    # the standard library
    ("/usr/lib64/python2.7/threading.py", "python"),  # pychess/pychess#899
    ("/usr/local/lib/python3.12/concurrent/futures/thread.py", "python"),  # home-assistant/core#110538
    ("/home/ubuntu/anaconda3/envs/genesis/lib/python3.10/queue.py", "python"),  # ziyanx02/Genesis-backflip#2
    (
        "/Library/Frameworks/PythonT.framework/Versions/3.13/lib/python3.13t/threading.py",
        "python",
    ),  # tonybaloney/pytest-freethreaded#9  # noqa: E501
    (r"C:\Users\MSI 1\anaconda3\envs\pose\lib\runpy.py", "python"),  # Bigtuo/YOLOv7-Pose-Bytetrack-STGCN#6
    (r"D:\Anaconda3\envs\chatglm6b\lib\json\__init__.py", "python"),  # zai-org/ChatGLM-6B#1196
    ("<frozen importlib._bootstrap>", "python"),  # deepspeedai/DeepSpeed#4532
    ("<frozen runpy>", "python"),  # bmaltais/kohya_ss#3433
    # the user's own code
    ("train_matching.py", None),  # maszhongming/MatchSum#11
    ("/home/user/LLaMA-Factory/src/llamafactory/launcher.py", None),  # hiyouga/LlamaFactory#5769
    ("/usr/local/bin/torchrun", None),  # hpcaitech/ColossalAI#3571: an entry-point script
    ("<string>", None),  # fla-org/flame#43
]


@pytest.mark.parametrize(("path", "package"), PATHS)
def test_a_frames_package_is_read_off_its_path(path: str, package: str | None) -> None:
    assert package_of(path) == package


SHORTENED = [  # py-spy prints paths relative to sys.path: sgl-project/sglang#31178
    ("threading.py", "python"),
    ("multiprocessing/spawn.py", "python"),
    ("tqdm/_monitor.py", None),
    ("<string>", None),
    ("libc.so.6", None),
]


@pytest.mark.parametrize(("path", "package"), SHORTENED)
def test_a_shortened_path_names_the_standard_library_by_its_first_module(path: str, package: str | None) -> None:
    assert package_of(path, shortened=True) == package


def test_a_relative_path_in_a_traceback_is_the_users_even_when_named_like_a_standard_module() -> None:
    assert package_of("threading.py") is None


ASSERTS = [
    ("assert args.batch_size % len(devices) == 0", "args.batch_size % len(devices) == 0"),  # maszhongming/MatchSum#11
    (
        "assert isinstance(groups, int) and (groups >= 1)",
        "isinstance(groups, int) and (groups >= 1)",
    ),  # fenglinglwb/MAT#38  # noqa: E501
    # bigcode-project/starcoder#77: rich cut the line; the message after the comma is left out
    ('assert (grad_acc > 0), f"Gradient accumulation steps', "(grad_acc > 0)"),
    # saforem2/mmm docs/torch-on-aurora.md: an explicit raise is no assert
    ('raise AssertionError("Torch not compiled with CUDA enabled")', None),
    (None, None),
]


@pytest.mark.parametrize(("source", "expression"), ASSERTS)
def test_the_asserted_expression_is_the_assert_without_its_message(source: str | None, expression: str | None) -> None:
    assert asserted(source) == expression


@pytest.mark.parametrize(
    ("path", "package"),
    [("pyarrow/error.pxi", "pyarrow"), ("pandas/_libs/parsers.pyx", "pandas"), ("train.py", None), ("/u/x.pyx", None)],
)
def test_cython_sources_belong_to_the_package_they_are_relative_to(path: str, package: str | None) -> None:
    assert package_of(path) == package
