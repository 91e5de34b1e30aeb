"""The traceback rules about launching and distribution, on real tracebacks: the text as the thread shows it,
beside the verdict and the role it must get (a wrapper of a remote failure is a symptom, a launcher variable
nobody set or a refused process count is the job's configuration)."""

from __future__ import annotations

import pytest
from traceback_records import traceback_from

from crashcart.agent.traceback_launch import judge_unfinished
from crashcart.agent.tracebacks import judge, role_of
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.models import Frame, Traceback
from crashcart.parsers.tracebacks import read_structure

CONFIG = FailureClass.CONFIG_ERROR

# (source thread, traceback as printed, expected class, expected rule, expected role)
CASES = [
    (
        "microsoft/vscode-python#436",  # os.environ[...] of a variable the shell never exported
        """
Traceback (most recent call last):
  File "orgAssociate/MpAssociation.py", line 9, in <module>
    mpip=os.environ["MP_IP"]
  File "/usr/local/lib/python3.6/os.py", line 669, in __getitem__
    raise KeyError(key) from None
KeyError: 'MP_IP'
""",
        CONFIG,
        "traceback.missing_env_var",
        Role.ROOT_CAUSE,
    ),
    (
        "hqucv/siamban#31",  # "The parameter `--num` in eval.py is set to at least 1."
        """
Traceback (most recent call last):
  File "eval.py", line 148, in <module>
    main()
  File "eval.py", line 52, in main
    with Pool(processes=args.num) as pool:
  File "/home/xiaobai/anaconda3/envs/torch/lib/python3.6/multiprocessing/context.py", line 119, in Pool
    context=self.get_context())
  File "/home/xiaobai/anaconda3/envs/torch/lib/python3.6/multiprocessing/pool.py", line 167, in __init__
    raise ValueError("Number of processes must be at least 1")
ValueError: Number of processes must be at least 1
""",
        CONFIG,
        "traceback.process_count",
        Role.ROOT_CAUSE,
    ),
    (
        "ray-project/ray#3628",  # the driver's view of a remote function that failed on a node marked dead
        """
Traceback (most recent call last):
  File "mnist_main.py", line 154, in <module>
    train()
  File "mnist_main.py", line 138, in train
    for actor in train_actors])
  File "/home/anurag/.local/lib/python2.7/site-packages/ray/worker.py", line 2358, in get
    raise RayGetError(object_ids[i], value)
ray.worker.RayGetError: Could not get objectid ObjectID(0100000008623a3fd1946a9132866d6f6113876e). It was created by remote function <unknown> which failed with:
""",  # noqa: E501
        FailureClass.CODE_BUG,
        "traceback.remote_failure",
        Role.SYMPTOM,
    ),
    (
        "abhishekkrthakur/mlframework#6",  # int() of os.environ.get's None: run.sh never exported FOLD
        """
Traceback (most recent call last):
 File "../src/train.py", line 12, in <module>
    FOLD = int(os.environ.get("FOLD"))
TypeError: int() argument must be a string, a bytes-like object or a number, not 'NoneType'
""",
        CONFIG,
        "traceback.missing_env_var",
        Role.ROOT_CAUSE,
    ),
]


@pytest.mark.parametrize(("source", "text", "cls", "rule", "role"), CASES, ids=[c[0] for c in CASES])
def test_a_real_traceback_gets_its_class_and_role(source: str, text: str, cls: FailureClass, rule: str, role: Role):
    for record in (traceback_from(text), _parsed(text)):
        verdict = judge(record)
        assert (verdict.failure_class, verdict.rule_id, role_of(verdict)) == (cls, rule, role), verdict.reason


def test_only_a_refusal_outside_the_users_code_is_a_refused_setting() -> None:
    # hqucv/siamban#31's record without multiprocessing's frames: the same ValueError, as if eval.py raised it
    record = traceback_from(CASES[1][1])
    exc = record.chain[-1]
    own = exc.model_copy(update={"frames": [f for f in exc.frames if f.package is None]})
    verdict = judge(record.model_copy(update={"chain": [own]}))
    assert verdict.rule_id != "traceback.process_count"


# satojkovic/DeepLogo2#4: DETR started from a notebook with env:// and no launcher; the excerpt ends at the
# frame that raises, before the ValueError's own line.
ENV_RENDEZVOUS_CUT_OFF = """
| distributed init (rank 0): env://
Traceback (most recent call last):
  File "/blue/egn4951/manuel.cortes/data/testing_grounds/DeepLogo2/detr/main.py", line 250, in <module>
    main(args)
  File "/blue/egn4951/manuel.cortes/data/testing_grounds/DeepLogo2/detr/main.py", line 108, in main
    utils.init_distributed_mode(args)
  File "/blue/egn4951/manuel.cortes/data/testing_grounds/DeepLogo2/detr/util/misc.py", line 427, in init_distributed_mode
    torch.distributed.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
  File "/home/manuel.cortes/.local/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py", line 595, in init_process_group
    store, rank, world_size = next(rendezvous_iterator)
  File "/home/manuel.cortes/.local/lib/python3.9/site-packages/torch/distributed/rendezvous.py", line 255, in _env_rendezvous_handler
    master_addr = _get_env_or_raise("MASTER_ADDR")
  File "/home/manuel.cortes/.local/lib/python3.9/site-packages/torch/distributed/rendezvous.py", line 232, in _get_env_or_raise
    raise _env_error(env_var)
"""  # noqa: E501


def test_a_traceback_cut_off_in_the_env_rendezvous_reader_is_a_launcher_variable_not_set() -> None:
    record = _parsed(ENV_RENDEZVOUS_CUT_OFF)
    assert not record.chain and record.unfinished[-1].function == "_get_env_or_raise"
    verdict = judge(record)
    assert (verdict.failure_class, verdict.rule_id) == (CONFIG, "traceback.missing_env_var")
    assert role_of(verdict) is Role.ROOT_CAUSE and verdict.ref.text == "Traceback (most recent call last):"


def test_frames_that_tell_nothing_leave_a_cut_off_traceback_unjudged() -> None:
    record = _parsed(ENV_RENDEZVOUS_CUT_OFF)
    assert judge_unfinished(record.unfinished[:-2]) is None  # cut off in init_process_group: anything could follow
    assert judge(record.model_copy(update={"unfinished": record.unfinished[:-2]})).rule_id == (
        "traceback.no_exception_line"
    )


def _parsed(text: str) -> Traceback:
    """read_structure's record of the traceback in `text`, read from its header line."""
    lines = text.strip("\n").split("\n")
    at = next(i for i, line in enumerate(lines) if line.endswith("Traceback (most recent call last):"))
    record, _ = read_structure(lines[at:], at + 1, lambda line, number: LineRef(file="job.log", line=number, text=line))
    assert isinstance(record, Traceback)
    return record


def test_int_of_none_that_no_environment_read_returned_is_no_unset_variable() -> None:
    # Janspiry/Image-Super-Resolution-via-Iterative-Refinement#150: an LMDB key that is missing, not a variable
    record = traceback_from(
        """
Traceback (most recent call last):
  File "sr.py", line 56, in <module>
    train_set = Data.create_dataset(dataset_opt, phase)
  File "/home/htt/Documents/Image-Super-Resolution-via-Iterative-Refinement-master/Image-Super-Resolution-via-Iterative-Refinement-master/data/LRHR_dataset.py", line 23, in __init__
    self.dataset_len = int(txn.get("length".encode("utf-8")))#源码
TypeError: int() argument must be a string, a bytes-like object or a number, not 'NoneType'
"""  # noqa: E501
    )
    assert judge(record).rule_id != "traceback.missing_env_var"


# Theodore-PKU/MC-DDPM#1: the frames pasted innermost first under the bare KeyError message, no header, no
# exception line; the innermost frame indexes os.environ for LOCAL_RANK (started with plain python)
MC_DDPM_FRAMES = [
    Frame(
        file="/hdd1/MC_DDPM/utils/dist_util.py",
        line=22,
        function="setup_dist",
        source='th.cuda.set_device(int(os.environ["LOCAL_RANK"]))',
    ),
    Frame(
        file="/hdd1/MC_DDPM/kspace_train.py",
        line=26,
        function="main",
        source="is_distributed, rank = dist_util.setup_dist()",
    ),
    Frame(file="/hdd1/MC_DDPM/kspace_train.py", line=98, function="<module>", source="main()"),
]


def test_a_cut_traceback_whose_innermost_frame_indexes_a_launcher_variable_is_it_not_set() -> None:
    verdict = judge_unfinished(MC_DDPM_FRAMES)
    assert verdict is not None and (verdict.failure_class, verdict.reason) == (CONFIG, "missing_env_var")
    assert judge_unfinished(list(reversed(MC_DDPM_FRAMES))) is not None  # as Python prints them, outermost first


def test_a_launcher_variable_read_on_the_way_to_a_deeper_frame_tells_nothing() -> None:
    # the same frames as Python prints them, with a deeper frame after the read: the failure may be anywhere below
    deeper = Frame(file="/hdd1/MC_DDPM/utils/dist_util.py", line=30, function="setup_dist", source="dist.barrier()")
    assert judge_unfinished([*reversed(MC_DDPM_FRAMES), deeper]) is None
