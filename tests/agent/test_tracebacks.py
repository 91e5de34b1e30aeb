"""judge picks the telling exception of a chain; traceback_events folds verdicts per rank and caps them; how
the verdicts score beside signatures in diagnose. Each judgement itself is tested in test_traceback_rules.py.
"""

from __future__ import annotations

from pathlib import Path

from real_tracebacks import HUB_REFUSED
from traceback_records import traceback_from

from crashcart.agent import exception_reading
from crashcart.agent.diagnose import diagnose
from crashcart.agent.events import FailureEvent
from crashcart.agent.exception_reading import features
from crashcart.agent.pipeline import triage
from crashcart.agent.tracebacks import MAX_EVENTS, Judged, SignatureLines, judge, role_of, traceback_events
from crashcart.knowledge.exception_prior import ExceptionPrior, learn
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import DEFAULT_ACTION, Action, FailureClass, Role
from crashcart.parsers.models import FileScan, TemplateStat, Traceback
from crashcart.parsers.tracebacks import read_structure

# fla-org/flame#43: transformers' KeyError of its config mapping, then, while handling it, the ValueError
# that says what it means.
UNKNOWN_ARCHITECTURE = """
Traceback (most recent call last):
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1309, in from_pretrained
    config_class = CONFIG_MAPPING[config_dict["model_type"]]
                   ~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1004, in __getitem__
    raise KeyError(key)
KeyError: 'transformer'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/home/xxx/miniconda3/envs/flame/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py", line 1311, in from_pretrained
    raise ValueError(
ValueError: The checkpoint you are trying to load has model type `transformer` but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of date.
"""  # noqa: E501

# Suanmd/TR-MISR#3: the main process re-raises what DataLoader worker 0 raised.
WORKER_RERAISE = r"""
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\worker.py", line 302, in _worker_loop
    data = fetcher.fetch(index)
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\fetch.py", line 52, in fetch
    return self.collate_fn(data)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 65, in __call__
    return self.collateFunction(batch)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 118, in collateFunction
    padded_lr_batch = torch.stack(lr_batch, dim=0)
RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 64] at entry 0 and [24, 64, 32] at entry 1
"""  # noqa: E501

# salesforce/CodeRL#61: a TypeError raised in transformers' frame that the user's train.py called.
API_MISMATCH = r"""
Traceback (most recent call last):
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 155, in <module>
    main(args)
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 149, in main
    run_training(args, train_data)
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 35, in run_training
    model = transformers.T5ForConditionalGeneration.from_pretrained(
  File "H:\Anaconda\envs\CodeRL_A3\lib\site-packages\transformers\modeling_utils.py", line 1489, in from_pretrained
    model = cls(config, *model_args, **model_kwargs)
TypeError: __init__() got an unexpected keyword argument 'tuning_mode'
"""

# YuanGongND/ast#30: torch.save on a full disk.
NO_SPACE = """
Traceback (most recent call last):
  File "/home/ubuntu/ast_conv/venvast/lib/python3.7/site-packages/torch/serialization.py", line 379, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol)
  File "/home/ubuntu/ast_conv/venvast/lib/python3.7/site-packages/torch/serialization.py", line 499, in _save
    zip_file.write_record(name, storage.data_ptr(), num_bytes)
OSError: [Errno 28] No space left on device
"""

# vllm-project/vllm#10453's all_reduce failing, as a per-rank log file shows it (without the [rankN]: prefix).
BACKEND_FAILED = """
Traceback (most recent call last):
  File "/vllm-workspace/test.py", line 8, in <module>
    dist.all_reduce(data, op=dist.ReduceOp.SUM)
  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py", line 83, in wrapper
    return func(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
    work = group.allreduce([tensor], opts)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
ncclInternalError: Internal check failed.
Last error:
"""  # noqa: E501


def _parsed(text: str, file: str = "job.log") -> Traceback:
    """The parser's record of a traceback whose first line is its header."""
    lines = text.strip("\n").split("\n")
    record, consumed = read_structure(lines, 1, lambda line, number: LineRef(file=file, line=number, text=line))
    assert isinstance(record, Traceback) and consumed == len(lines)
    return record


def _scan(file: str, tracebacks: list[Traceback], rank: int | None = None) -> FileScan:
    return FileScan(file=file, rank=rank, lines=40, bytes=4000, hits=[], templates=[], tracebacks=tracebacks)


def test_the_exception_that_says_what_it_means_decides_the_chain() -> None:
    for record in (traceback_from(UNKNOWN_ARCHITECTURE), _parsed(UNKNOWN_ARCHITECTURE)):
        assert [exc.relation for exc in record.chain] == [None, "context"]
        verdict = judge(record)
        assert (verdict.failure_class, verdict.rule_id) == (FailureClass.ENVIRONMENT, "traceback.version_check")
        assert verdict.ref.text.startswith("ValueError: The checkpoint you are trying to load")


def test_a_dataloader_reraise_stands_aside_for_the_worker_exception() -> None:
    for record in (traceback_from(WORKER_RERAISE), _parsed(WORKER_RERAISE)):
        assert record.worker == "DataLoader worker process 0"
        verdict = judge(record)
        assert verdict.ref.text.startswith("RuntimeError: stack expects each tensor to be equal size")
        assert verdict.failure_class is FailureClass.CODE_BUG


def test_a_traceback_without_its_exception_line_is_still_judged() -> None:
    # zhoubolei/TRN-pytorch#54's first two lines, as a log cut after them holds them
    tb = traceback_from('Traceback (most recent call last):\n  File "test_video.py", line 136, in <module>')
    verdict = judge(tb)
    assert verdict.failure_class is FailureClass.CODE_BUG and verdict.priority <= 30
    assert role_of(verdict) is Role.SYMPTOM and verdict.ref == tb.start


def test_events_of_the_parsers_records() -> None:
    scan = _scan("job.log", [_parsed(API_MISMATCH), _parsed(NO_SPACE), _parsed(API_MISMATCH)])
    events = traceback_events([scan])
    assert [(e.rule_id, e.count) for e in events] == [("traceback.api_mismatch", 2), ("traceback.errno_enospc", 1)]


def test_an_event_carries_the_verdict_and_its_exception_line() -> None:
    (event,) = traceback_events([_scan("train.log", [traceback_from(API_MISMATCH, file="train.log", rank=3)])])
    assert isinstance(event, FailureEvent)
    assert (event.rule_id, event.failure_class, event.action) == (
        "traceback.api_mismatch",
        FailureClass.ENVIRONMENT,
        Action.FIX_JOB,
    )
    assert (event.role, event.priority, event.count) == (Role.ROOT_CAUSE, 47, 1)
    assert (event.file, event.line, event.rank) == ("train.log", 10, 3)
    assert event.text == "TypeError: __init__() got an unexpected keyword argument 'tuning_mode'"


def test_one_event_per_rank_for_the_same_exception_and_a_cap_for_a_thousand_ranks() -> None:
    scans = [
        _scan(f"rank{r}.log", [traceback_from(BACKEND_FAILED, file=f"rank{r}.log", rank=r)], r) for r in range(1000)
    ]
    scans[7].tracebacks.append(traceback_from(BACKEND_FAILED, file="r7.log", rank=7))  # printed twice
    scans[999].tracebacks.append(traceback_from(NO_SPACE, file="r999.log", rank=999))
    events = traceback_events(scans)
    assert len(events) == MAX_EVENTS
    assert len({(e.rank, e.rule_id) for e in events}) == MAX_EVENTS
    assert [e.count for e in events if e.rank == 7] == [2]
    # the one distinct exception is kept ahead of the repeats that fill the cap
    assert [e.rank for e in events if e.rule_id == "traceback.errno_enospc"] == [999]
    backend = [e for e in events if e.rule_id == "traceback.dist_backend"]
    assert {e.role for e in backend} == {Role.SYMPTOM}


def _line(event: FailureEvent) -> LineRef:
    return LineRef(**{field: getattr(event, field) for field in LineRef.model_fields})


def _signature(rule: str, cls: FailureClass, priority: int, event: FailureEvent) -> FailureEvent:
    """A signature's event on the same line as the traceback's event."""
    return FailureEvent(
        **dict(_line(event)),
        rule_id=rule,
        failure_class=cls,
        action=DEFAULT_ACTION[cls],
        role=Role.ROOT_CAUSE,
        priority=priority,
    )


def _one_template_scan(event: FailureEvent) -> FileScan:
    ref = _line(event)
    stat = TemplateStat(template_id="t", template=ref.text, count=1, first=ref, last=ref)
    return FileScan(file=ref.file, lines=11, bytes=900, hits=[], templates=[stat])


def test_a_structural_verdict_outranks_the_generic_exception_rule_of_its_line() -> None:
    (verdict,) = traceback_events([_scan("job.log", [traceback_from(API_MISMATCH)])])
    generic = _signature("python.type_error", FailureClass.CODE_BUG, 33, verdict)  # python.yaml, same line
    diagnosis = diagnose([generic, verdict], [_one_template_scan(verdict)])
    assert diagnosis.failure_class is FailureClass.ENVIRONMENT


def test_a_specific_signature_outranks_a_structural_verdict() -> None:
    (verdict,) = traceback_events([_scan("job.log", [traceback_from(API_MISMATCH)])])
    specific = _signature("config.file_not_found", FailureClass.CONFIG_ERROR, 50, verdict)
    diagnosis = diagnose([verdict, specific], [_one_template_scan(verdict)])
    assert diagnosis.failure_class is FailureClass.CONFIG_ERROR


def test_an_unexplained_exception_of_a_library_is_a_symptom_its_cause_outranks() -> None:
    # huggingface/autotrain-advanced#365: requests' HTTPError under huggingface_hub says only that the Hub refused;
    # why (a gated repo without access) is config.model_path's, and a collective or network failure would be theirs
    verdict = judge(traceback_from(HUB_REFUSED))
    # no rule knows it; the prior learned from real threads reads it as a setting (the gated repo) and names
    # that class, but a class is not a cause: it stays a symptom
    assert (verdict.rule_id, verdict.failure_class) == ("traceback.learned_symptom", FailureClass.CONFIG_ERROR)
    assert role_of(verdict) is Role.SYMPTOM


def test_a_line_a_specific_signature_read_keeps_the_rules_finding_not_the_priors() -> None:
    tb = traceback_from(HUB_REFUSED)
    line = tb.chain[-1].ref.line
    assert judge(tb, lines=SignatureLines(specific=frozenset({line}))).rule_id == "traceback.library_exception"


def test_a_line_only_a_type_signature_called_a_root_cause_is_read_as_a_root_cause_of_the_priors_class() -> None:
    # python.yaml's per-exception rules know only the type: the prior's reading of the whole line replaces
    # theirs, and like theirs it is a root cause
    tb = traceback_from(HUB_REFUSED)
    verdict = judge(tb, lines=SignatureLines(generic=frozenset({tb.chain[-1].ref.line})))
    assert (verdict.rule_id, role_of(verdict)) == ("traceback.learned_reading", Role.ROOT_CAUSE)
    assert verdict.failure_class is FailureClass.CONFIG_ERROR


def test_every_rank_printing_one_traceback_is_judged_once_wherever_the_signatures_read() -> None:
    seen: dict[tuple[object, ...], Judged] = {}
    tb = traceback_from(HUB_REFUSED)
    line = frozenset({tb.chain[-1].ref.line})
    first = judge(tb, seen)
    assert judge(tb, seen, SignatureLines(specific=line)).rule_id == "traceback.library_exception"
    assert judge(tb, seen).rule_id == first.rule_id == "traceback.learned_symptom"
    assert len(seen) == 1


def _sure_prior(cls: FailureClass, tb: Traceback) -> ExceptionPrior:
    other = (FailureClass.CODE_BUG, [frozenset({"type:NameError"})])
    return learn([(cls, [features(tb.chain[-1], tb)])] * 20 + [other])


def test_a_bare_line_is_read_only_over_a_type_signature_and_never_for_an_api_type(monkeypatch) -> None:
    # hqucv/siamban#31: a settings check printed as a bare line, which python.value_error reads by its type
    bare = traceback_from("ValueError: Number of processes must be at least 1\n")
    line = frozenset({bare.chain[-1].ref.line})
    monkeypatch.setattr(exception_reading, "load_prior", lambda: _sure_prior(FailureClass.CONFIG_ERROR, bare))
    assert judge(bare, lines=SignatureLines(generic=line)).rule_id == "traceback.learned_reading"
    assert judge(bare).rule_id == "traceback.user_code_exception"  # no signature read it: too little to go on
    # cychai1995/DDPGfD#3: the project's own class or a library's API? a line alone cannot tell
    api = traceback_from("AttributeError: 'RLTrainer' object has no attribute 'device'\n")
    monkeypatch.setattr(exception_reading, "load_prior", lambda: _sure_prior(FailureClass.ENVIRONMENT, api))
    verdict = judge(api, lines=SignatureLines(generic=frozenset({api.chain[-1].ref.line})))
    assert verdict.failure_class is FailureClass.CODE_BUG


def _lone(tmp_path: Path, line: str) -> FailureClass:
    log = tmp_path / "excerpt.log"
    log.write_text(line + "\n")
    return triage(log).diagnosis.failure_class


def test_an_exception_line_alone_is_judged_by_its_type_and_message(tmp_path: Path) -> None:
    # hpcaitech/Open-Sora#146: a local model path that does not exist, read as a Hub repo id
    line = (
        "huggingface_hub.utils._validators.HFValidationError: Repo id must be in the form 'repo_name' or"
        " 'namespace/repo_name': './pretrained_models/t5_ckpts/t5-v1_1-xxl'. Use `repo_type` argument if needed."
    )
    assert _lone(tmp_path, line) is FailureClass.CONFIG_ERROR


def test_an_exception_line_alone_that_a_signature_reads_is_left_to_it(tmp_path: Path) -> None:
    # tensorflow/tensorflow#45901: the signature calls it a CUDA fault (a symptom); the type alone says nothing more
    line = "tensorflow.python.framework.errors_impl.InternalError: GPU sync failed"
    assert _lone(tmp_path, line) is FailureClass.CUDA_ERROR
