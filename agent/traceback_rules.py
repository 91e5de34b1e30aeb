"""The rules that judge one exception of a traceback's chain by where it was raised and what it went through.

Each rule looks at one RaisedException (its type, whole message, frames and asserted expression) and the
traceback around it (a DataLoader worker's re-raise, a launcher's summary), and returns a Finding or None;
the first that knows the exception decides, and a weak code_bug stands when none does.

How strongly each finding counts beside the signatures is traceback_findings.py's; the rules about how the job
was launched and distributed are traceback_launch.py's, those about reading training data traceback_data.py's,
the one about APIs that changed under the code (TypeError, AttributeError) traceback_api.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from crashcart.agent.traceback_api import api_drift, copied_internals
from crashcart.agent.traceback_data import data_loading, text_decoding
from crashcart.agent.traceback_findings import BARE, CONFIDENT, LIKELY, OWN_CODE, SUMMARY, WEAK, Finding
from crashcart.agent.traceback_frames import (
    basename,
    is_library,
    is_user,
    path,
    raiser,
    short_type,
    user_modules,
)
from crashcart.agent.traceback_launch import launch_settings, launcher_summary, remote_failure
from crashcart.knowledge.taxonomy import FailureClass
from crashcart.parsers.models import RaisedException, Traceback


def judge_exception(exc: RaisedException, tb: Traceback) -> Finding:
    """The first rule that knows this exception; a weak code_bug when none does."""
    for rule in _RULES:
        finding = rule(exc, tb)
        if finding is not None:
            return finding
    return _fallback(exc, tb)


# --- rules, in order: each returns a finding or None ---------------------------------------------------------

_GPU_OOM = re.compile(
    r"CUDA out of memory|HIP out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED"
    r"|RESOURCE_EXHAUSTED: Out of memory"  # XLA's device allocator (JAX, TensorFlow, PyTorch/XLA)
)
_HOST_OOM = re.compile(
    r"std::bad_alloc|Cannot allocate memory|\[Errno 12\]|can't allocate memory|memory allocation of \d+ bytes failed"
    r"|Unable to allocate [\d.]+ \w+ for an array|(?i:(?:could not|cannot|failed to|unable to) allocate)"
)
# cuDNN tried every convolution algorithm and none could run, nearly always because none's workspace fits in the
# memory left (marqo-ai/marqo#101: "This is due to OOM with the GPU"; a smaller batch or fewer processes fix it).
_CUDNN_NO_ALGO = re.compile(r"Unable to find a valid cuDNN algorithm to run convolution")
_DEVICE_WORDS = re.compile(r"CUDA|GPU|cuda|device")
_WORKER_OOM = re.compile(r"DataLoader worker \(pid \d+\) is killed by signal: (?:Killed|Bus error)")


def _memory(exc: RaisedException, tb: Traceback) -> Finding | None:
    text = f"{exc.exc_type}: {exc.message}"
    if _WORKER_OOM.search(exc.message):  # SIGKILL is the OOM killer's signal, SIGBUS a full /dev/shm
        return Finding("worker_killed", FailureClass.HOST_OOM, LIKELY, "a DataLoader worker was killed (host memory)")
    if exc.exc_type.startswith("ray.") and short_type(exc) == "OutOfMemoryError":  # Ray's memory monitor
        return Finding("host_oom", FailureClass.HOST_OOM, CONFIDENT, "the node ran low on memory (Ray)")
    if short_type(exc) == "OutOfMemoryError" or _GPU_OOM.search(text):
        return Finding("gpu_oom", FailureClass.GPU_OOM, CONFIDENT, "GPU out of memory")
    if _CUDNN_NO_ALGO.search(exc.message):
        return Finding("gpu_oom", FailureClass.GPU_OOM, LIKELY, "no cuDNN algorithm's workspace fits in GPU memory")
    host = short_type(exc) in ("MemoryError", "_ArrayMemoryError", "bad_alloc") or _HOST_OOM.search(text)
    if host and not _DEVICE_WORDS.search(exc.message):
        return Finding("host_oom", FailureClass.HOST_OOM, CONFIDENT, "host memory exhausted")
    return None


_SIGNAL = re.compile(r"got signal: (\d+)")
_HUMAN_SIGNALS = {"1": "SIGHUP", "2": "SIGINT"}


def _nonfinite(exc: RaisedException, tb: Traceback) -> Finding | None:
    """FloatingPointError: what numpy's error state, JAX's debug_nans and fairseq's loss scaler raise when a
    value of the run went NaN or Inf."""
    if short_type(exc) == "FloatingPointError":
        return Finding("nonfinite_value", FailureClass.LOSS_DIVERGENCE, LIKELY, "a non-finite value stopped the run")
    return None


def _cancelled(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Ctrl-C, a closed terminal (SIGHUP) or a SIGTERM reaching the launcher's wait loop."""
    if short_type(exc) == "KeyboardInterrupt":
        return Finding("keyboard_interrupt", FailureClass.CANCELLED, CONFIDENT, "interrupted (SIGINT)")
    signal = _SIGNAL.search(exc.message) if short_type(exc) == "SignalException" else None
    if signal is None:
        return None
    if signal.group(1) in _HUMAN_SIGNALS:
        name = _HUMAN_SIGNALS[signal.group(1)]
        return Finding("signal", FailureClass.CANCELLED, CONFIDENT, f"the launcher got {name}")
    if signal.group(1) == "15":  # a scheduler's stop, or the teardown after another rank failed
        return Finding("sigterm", FailureClass.CANCELLED, WEAK, "the launcher got SIGTERM")
    return None


# An f-string literal (f'...', rf"..."): syntax Python 3.6 introduced. A SyntaxError on a line that uses one was raised
# by an interpreter older than the code (3.5, or Python 2), not by a typo: the code parses under the Python it needs.
_FSTRING = re.compile(r"(?<![\w'\"])(?:[fF][rR]?|[rR][fF])['\"]")
# CPython 3's own words for Python 2's print and exec statements: the code was written for Python 2.
_PY2_STATEMENT = re.compile(r"^Missing parentheses in call to '(?:print|exec)'")


def _interpreter(exc: RaisedException, tb: Traceback) -> Finding | None:
    """A SyntaxError on a line written for another Python: f-strings before 3.6, Python 2's print under Python 3."""
    if short_type(exc) != "SyntaxError":
        return None
    if exc.frames and _FSTRING.search(exc.frames[-1].source or ""):
        return Finding("syntax_too_new", FailureClass.ENVIRONMENT, LIKELY, "the Python is older than the code's syntax")
    if _PY2_STATEMENT.search(exc.message.strip()):
        return Finding("python2_code", FailureClass.ENVIRONMENT, LIKELY, "Python 2 code run by Python 3")
    return None


_SHARED_OBJECT = re.compile(
    r"undefined symbol|cannot open shared object file|DLL load failed|Symbol not found|Library not loaded"
    r'|Error loading "[^"]+\.dll" or one of its dependencies'
)
# A version pin in the message of an import or of a version-checking frame ("tokenizers>=0.22.0,<=0.23.0").
_VERSION_PIN = re.compile(r"(?:>=|<=|==|~=|!=)\s*\d+(?:\.\d+)+")
# Wordings that say "your version" wherever they are raised.
_VERSION_WORDS = re.compile(
    r"is required for a normal functioning|version mismatch|[Ii]nvalid version|version of \w+ is out of date"
    r"|requires? (?:a )?(?:newer|older|higher|lower) version|does not recognize this architecture"
    r"|pip install (?:-U|--upgrade)\b|generated code is out of date|modules must be compiled with NumPy"
    r"|was removed in the NumPy [\d.]+ release|Tokenizer class \w+ does not exist or is not currently imported"
    r"|driver on your system is too old"
)
# A toolchain the job builds with at start-up (torch.utils.cpp_extension), or a framework build lacking a backend.
# ... or a torch that cannot use the installed NumPy (built without it, or against NumPy 1.x under NumPy 2): torch's
# tensor_numpy.cpp raises "Numpy is not available" on .numpy() and from_numpy (Atcold/NYU-DLSP20#810,
# securefederatedai/openfederatedlearning#999).
_BUILD_MISSING = re.compile(
    r"CUDA_HOME environment variable is not set|Distributed package doesn't have NCCL built in"
    r"|^Numpy is not available|PyTorch was compiled without NumPy support"
)
# torch.utils.cpp_extension's JIT and setup.py builds (DeepSpeed's ops, apex, custom kernels) run ninja/nvcc.
_EXTENSION_BUILDERS = ("cpp_extension.py", "build_ext.py")
_EXTENSION_BUILD = re.compile(r"Error building extension '")
_VERSION_FRAMES = re.compile(r"dependency_versions_check|/utils/versions\.py|importlib/metadata|/packaging/")
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '[^']+' from '([^']+)'(?: \(([^)]*)\))?")
_IMPORT_TYPES = frozenset({"ImportError", "ModuleNotFoundError", "PackageNotFoundError", "InvalidVersion"})


def _builds(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Compiled libraries that do not load, builds that lack a part, extensions that fail to compile."""
    env = FailureClass.ENVIRONMENT
    if _SHARED_OBJECT.search(exc.message):
        return Finding("undefined_symbol", env, CONFIDENT, "a compiled library does not fit (undefined symbol)")
    if _BUILD_MISSING.search(exc.message):
        return Finding("build_missing", env, CONFIDENT, "the build or its toolchain lacks a part")
    compiling = any(path(f).endswith(_EXTENSION_BUILDERS) for f in exc.frames)
    if _EXTENSION_BUILD.search(exc.message) or (compiling and short_type(exc) == "CalledProcessError"):
        return Finding("extension_build", env, LIKELY, "compiling an extension failed (its compiler's lines say why)")
    return None


def _imports(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Missing modules and version checks: the environment, unless the module is the project's."""
    env = FailureClass.ENVIRONMENT
    importing = short_type(exc) in _IMPORT_TYPES
    checked = any(_VERSION_FRAMES.search(path(f)) for f in exc.frames)
    pinned = (importing or checked) and _VERSION_PIN.search(exc.message)
    if short_type(exc) == "InvalidVersion" or pinned or _VERSION_WORDS.search(exc.message):
        return Finding("version_check", env, CONFIDENT, "a version check failed")
    missing = _NO_MODULE.search(exc.message)
    if missing:
        if missing.group(1).split(".")[0] in user_modules(exc.frames):
            return Finding("project_module", FailureClass.CODE_BUG, OWN_CODE, "a module of the project is missing")
        return Finding("missing_module", env, CONFIDENT, f"module {missing.group(1)!r} is not installed")
    named = _CANNOT_IMPORT.search(exc.message)
    if named:
        return _cannot_import(named, exc)
    if importing:
        return Finding("import_failed", env, LIKELY, "an import failed")
    return None


def _cannot_import(named: re.Match[str], exc: RaisedException) -> Finding:
    """'cannot import name X from Y (path)': an installed Y lacks X (a version mismatch), or the project's Y does."""
    module, location = named.group(1), named.group(2) or ""
    installed = "site-packages" in location or "dist-packages" in location or location == "unknown location"
    if not installed and (location or module.split(".")[0] in user_modules(exc.frames)):
        return Finding("project_import", FailureClass.CODE_BUG, OWN_CODE, f"the project's {module} lacks a name")
    return Finding("import_from_installed", FailureClass.ENVIRONMENT, CONFIDENT, f"installed {module} lacks a name")


_ERRNO = re.compile(r"\[Errno (\d+)\]|\bcode: (\d+), kind:")
# multiprocessing's recvfds (Lib/multiprocessing/reduction.py) when a descriptor a DataLoader worker sent was dropped:
# the process is at its open-files limit (ulimit -n) under torch's file_descriptor sharing strategy (lzccccc/SMOKE#21).
_ANCDATA = re.compile(r"received \d+ items of ancdata")
_STRERROR = {
    "No space left on device": "28",
    "StorageFull": "28",
    "Disk quota exceeded": "122",
    "Stale file handle": "116",
    "Input/output error": "5",
    "Read-only file system": "30",
}
_STORAGE_ERRNO = {
    "28": ("errno_enospc", "no space left on device"),
    "122": ("errno_edquot", "disk quota exceeded"),
    "116": ("errno_estale", "stale file handle"),
    "5": ("errno_eio", "input/output error"),
    "30": ("errno_erofs", "read-only file system"),
}


def _errno(exc: RaisedException, tb: Traceback) -> Finding | None:
    """OSError by errno (or its strerror text in any message): storage, or a wrong path or permission."""
    found = _ERRNO.search(exc.message)
    code = next((g for g in found.groups() if g), None) if found else None
    code = code or next((num for text, num in _STRERROR.items() if text in exc.message), None)
    if code in _STORAGE_ERRNO:
        reason, label = _STORAGE_ERRNO[code]
        return Finding(reason, FailureClass.STORAGE, CONFIDENT, label)
    if code == "24" or _ANCDATA.search(exc.message):
        return Finding("open_files_limit", FailureClass.ENVIRONMENT, LIKELY, "the process ran out of file descriptors")
    kind = short_type(exc)
    if kind == "FileNotFoundError" or code == "2" or "No such file or directory" in exc.message:
        return Finding("missing_path", FailureClass.CONFIG_ERROR, OWN_CODE, "a path does not exist")
    if kind == "PermissionError" or code == "13" or "Permission denied" in exc.message:
        return Finding("permission_denied", FailureClass.CONFIG_ERROR, OWN_CODE, "permission denied")
    return None


_CONFIG_WORDS = re.compile(
    r"(?i)batch|world_?size|gpus?\b|devices|nproc|heads|hidden|seq(?:uence)?_?len|max_len|parallel|micro"
    r"|\b[tpdce]p_?size|accum|experts?"
)
_TENSOR_SHAPE = re.compile(r"\.shape\b|\.size\(|\.dim\(|\.ndim\b")
# Config libraries, and PyYAML: a YAML document a training job parses is its configuration.
_CONFIG_PACKAGES = frozenset({"pydantic", "pydantic_core", "omegaconf", "hydra", "jsonschema", "marshmallow", "yaml"})
_CONFIG_FILE = re.compile(r"(?i)conf|arg|option|param|setting")
_ARG_PARSERS = ("argparse.py", "hf_argparser.py")  # the standard library's, transformers' and trl's copy


def _config(exc: RaisedException, tb: Traceback) -> Finding | None:
    """Size and divisibility asserts over batch, world size, heads, parallel degrees; config validators; a model
    path that does not exist."""
    cfg = FailureClass.CONFIG_ERROR
    if short_type(exc) == "HFValidationError":  # huggingface_hub refusing the repo id or revision it was given
        path = _REPO_ID.search(exc.message)
        reason = "the model path does not exist (read as a Hub repo id)" if path else "a Hub argument is invalid"
        return Finding("model_path_missing" if path else "hub_argument", cfg, LIKELY, reason)
    if short_type(exc) == "AssertionError":
        said = f"{exc.assertion or ''} {exc.message}"
        if _CONFIG_WORDS.search(said) and not _TENSOR_SHAPE.search(said):
            return Finding("config_assertion", cfg, LIKELY, "a size/divisibility check of the settings failed")
    if _is_validator(exc):
        return Finding("config_validator", cfg, LIKELY, "the configuration was rejected")
    checks = [f for f in exc.frames if f.function == "__post_init__" and _CONFIG_FILE.search(basename(f))]
    if checks and short_type(exc) in ("ValueError", "AssertionError"):
        return Finding("config_validator", cfg, LIKELY, "the configuration was rejected")
    if short_type(exc) == "ValueError" and _PARALLEL_WORDS.search(exc.message):
        return Finding("config_assertion", cfg, LIKELY, "the parallel layout does not fit the world size")
    return None


# huggingface_hub's validate_repo_id: from_pretrained found no local directory at the path it was given and took the
# path for a Hub repo id, which a path is not (PRIME-RL/TTRL#25's '~/models/...', hpcaitech/Open-Sora#146's './...').
_REPO_ID = re.compile(r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '(?:[/.~]|[A-Za-z]:\\)")


# Parallel degrees and the world size, as frameworks word them when they refuse a layout ("The number of process
# requires to run all replicas (8) must be equal to the world size (4)", huggingface/nanotron#250).
_PARALLEL_WORDS = re.compile(
    r"(?i)\bworld[ _]size\b|\b(?:tensor|pipeline|data|context|expert|sequence)[ _-]?(?:model[ _-]?)?parallel"
    r"(?:ism)?[ _](?:size|degree)|\b[tpdce]p[ _]size\b"
)


def _is_validator(exc: RaisedException) -> bool:
    """Raised by a config library (pydantic, omegaconf, hydra ...), an argument parser, or as Lightning's
    MisconfigurationException (its Trainer's and Fabric's settings checks)."""
    if exc.exc_type.split(".")[0] in _CONFIG_PACKAGES or short_type(exc) == "MisconfigurationException":
        return True
    raised = raiser(exc.frames)
    parsing = bool(exc.frames) and path(exc.frames[-1]).endswith(_ARG_PARSERS)
    return parsing or (raised is not None and raised.package in _CONFIG_PACKAGES)


_CUDA_BUILD = re.compile(
    r"no kernel image is available|is not compatible with the current PyTorch installation"
    r"|CUDA driver version is insufficient|not compiled for|provided PTX was compiled with an unsupported toolchain"
)
_CUDA = re.compile(
    r"CUDA error|CUDA driver error|cuDNN error|CUDNN_STATUS|CUBLAS_STATUS|cudaError|illegal memory access"
    r"|misaligned address|unspecified launch failure"
)
# The assert itself, not CUDA's hint that follows every CUDA error ("... to enable device-side assertions.")
_DEVICE_ASSERT = re.compile(r"device-side assert(?:ion)? triggered")
# CUDA's own names for faults of the GPU itself (cudaErrorECCUncorrectable, cudaErrorNvlinkUncorrectable).
_GPU_FAULT = re.compile(r"uncorrectable ECC error encountered|cudaErrorECCUncorrectable|uncorrectable NVLink error")
_DIST = re.compile(r"NCCL error|ProcessGroupNCCL|ProcessGroupGloo|Gloo|Watchdog caught collective operation timeout")


def _device(exc: RaisedException, tb: Traceback) -> Finding | None:
    """CUDA runtime errors, builds that do not fit the GPU, and collective backends failing (a symptom)."""
    text = f"{exc.exc_type}: {exc.message}"
    if _CUDA_BUILD.search(text):
        return Finding("cuda_build_mismatch", FailureClass.ENVIRONMENT, CONFIDENT, "the CUDA build does not fit")
    if "invalid device ordinal" in text:  # more ranks on the node than GPUs, or a wrong device mapping
        return Finding("device_ordinal", FailureClass.CONFIG_ERROR, LIKELY, "a GPU index that does not exist")
    if _DEVICE_ASSERT.search(text):
        return Finding("device_assert", FailureClass.CODE_BUG, LIKELY, "a device-side assert fired")
    if _GPU_FAULT.search(text):
        return Finding("gpu_fault", FailureClass.GPU_HARDWARE, LIKELY, "the GPU reported a hardware fault")
    if _CUDA.search(text) or short_type(exc) == "AcceleratorError":
        return Finding("cuda_error", FailureClass.CUDA_ERROR, LIKELY, "a CUDA error")
    if short_type(exc) in ("DistBackendError", "DistNetworkError", "DistStoreError") or _DIST.search(text):
        return Finding("dist_backend", FailureClass.COLLECTIVE_TIMEOUT, WEAK, "the collective backend failed")
    return None


# What _fallback concludes: nothing telling was found, so the learned prior may be asked (agent/tracebacks.py).
FALLBACK_REASONS = frozenset(
    {"bare_runtime_error", "terminate_without_what", "native_exception", "os_error", "assertion"}
    | {"library_exception", "user_code_exception"}
)


def _fallback(exc: RaisedException, tb: Traceback) -> Finding:
    """Nothing telling: a bare RuntimeError, or a C++ terminate whose what() never came, is a weak symptom;
    anything else a weak bug, I/O errors storage."""
    if exc.exc_type == "RuntimeError":
        return Finding("bare_runtime_error", FailureClass.CODE_BUG, BARE, "an unexplained RuntimeError")
    if tb.kind == "cpp_terminate" and not exc.message:  # the log shows only which C++ type was thrown
        return Finding("terminate_without_what", FailureClass.CODE_BUG, SUMMARY, "a C++ exception, unexplained")
    if tb.kind == "cpp_terminate":
        return Finding("native_exception", FailureClass.CODE_BUG, WEAK, "an exception of native code")
    if short_type(exc) in ("OSError", "IOError"):
        return Finding("os_error", FailureClass.STORAGE, WEAK, "an I/O error")
    raised = raiser(exc.frames)
    if raised is not None and is_user(raised) and short_type(exc) == "AssertionError":
        return Finding("assertion", FailureClass.CODE_BUG, OWN_CODE, "an assertion of the user's code failed")
    if raised is not None and is_library(raised):
        return Finding("library_exception", FailureClass.CODE_BUG, WEAK, "an exception of a library")
    return Finding("user_code_exception", FailureClass.CODE_BUG, WEAK, "an exception of the user's code")


_RULES: tuple[Callable[[RaisedException, Traceback], Finding | None], ...] = (
    launcher_summary,
    _memory,
    remote_failure,
    _nonfinite,
    _cancelled,
    launch_settings,
    _interpreter,
    _builds,
    _imports,
    _errno,
    copied_internals,  # before the data rules: a copy of webdataset's loop raises under webdataset's own frames
    text_decoding,
    data_loading,
    _config,
    api_drift,
    _device,
)
