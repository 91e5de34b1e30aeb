"""Incident memory in a diagnosis: recall, the neighbours' vote, novelty, and when memory may decide."""

from __future__ import annotations

from datetime import datetime, timedelta

from crashcart.agent.memory import NOVELTY_THRESHOLD, recall, vote, with_memory
from crashcart.agent.models import Diagnosis, SimilarIncident
from crashcart.knowledge.incident_store import MemoryIncidentStore
from crashcart.knowledge.incidents import Fingerprint, Incident, Provenance, utcnow
from crashcart.knowledge.taxonomy import Action, FailureClass

NOW = utcnow()


def _similar(cls: FailureClass, sim: float, days_old: float = 0, id_: str = "") -> SimilarIncident:
    return SimilarIncident(
        id=id_ or f"inc-{cls.value}-{sim}",
        similarity=sim,
        failure_class=cls,
        action=Action.FIX_JOB,
        job="j",
        created_at=NOW - timedelta(days=days_old),
    )


def _diag(cls: FailureClass = FailureClass.UNKNOWN, confidence: float = 0.2) -> Diagnosis:
    return Diagnosis(failure_class=cls, action=Action.ESCALATE_INFRA, confidence=confidence, summary="s")


def test_vote_weighs_similarity_and_recency_and_ignores_neighbours_below_threshold() -> None:
    near = [
        _similar(FailureClass.STORAGE, 0.9),
        _similar(FailureClass.DATA_ERROR, 0.8, days_old=400),
        _similar(FailureClass.DATA_ERROR, 0.3),
    ]
    cls, _, share, best = vote(near, threshold=0.5, now=NOW)
    assert cls is FailureClass.STORAGE and best.similarity == 0.9
    assert abs(share - 0.9 / (0.9 + 0.8 * 0.5)) < 1e-6  # the 400-day-old one counts at the recency floor
    assert vote([_similar(FailureClass.STORAGE, 0.2)], threshold=0.5) is None


def test_memory_decides_when_rules_are_silent() -> None:
    d = with_memory(
        _diag(), [_similar(FailureClass.NODE_FAILURE, 0.92, id_="inc-a"), _similar(FailureClass.NODE_FAILURE, 0.7)]
    )
    assert d.failure_class is FailureClass.NODE_FAILURE and d.decided_by == "memory"
    assert d.novel is False and "inc-a" in d.summary
    assert d.mitigation  # the class's runbook


def test_confident_rules_keep_their_class_and_list_the_neighbours() -> None:
    rules = _diag(FailureClass.GPU_OOM, confidence=0.9)
    d = with_memory(rules, [_similar(FailureClass.HOST_OOM, 0.95)])
    assert d.failure_class is FailureClass.GPU_OOM and d.decided_by == "rules"
    assert [s.failure_class for s in d.similar] == [FailureClass.HOST_OOM]


def test_weak_rules_give_way_only_to_a_close_neighbour() -> None:
    weak = _diag(FailureClass.CANCELLED, confidence=0.4)
    assert with_memory(weak, [_similar(FailureClass.HOST_OOM, 0.7)]).failure_class is FailureClass.CANCELLED
    assert with_memory(weak, [_similar(FailureClass.HOST_OOM, 0.95)]).failure_class is FailureClass.HOST_OOM


def test_nothing_similar_is_new_and_empty_memory_says_nothing() -> None:
    d = with_memory(_diag(), [_similar(FailureClass.STORAGE, NOVELTY_THRESHOLD - 0.1)])
    assert d.novel is True and d.failure_class is FailureClass.UNKNOWN and "new failure" in d.summary
    assert with_memory(_diag(), []).novel is None


def test_recall_reads_a_store_best_first() -> None:
    store = MemoryIncidentStore()
    for cls, line in [
        (FailureClass.STORAGE, "OSError: [Errno 28] No space left on device"),
        (FailureClass.DATA_ERROR, "PIL.UnidentifiedImageError: cannot identify image file"),
    ]:
        store.add(
            Incident(
                fingerprint=Fingerprint(templates=[line]),
                failure_class=cls,
                action=Action.FIX_JOB,
                provenance=Provenance(job="j", created_at=datetime(2026, 1, 1)),
            )
        )
    got = recall(store, Fingerprint(templates=["OSError: [Errno 28] No space left on device"]), k=2)
    assert [s.failure_class for s in got] == [FailureClass.STORAGE, FailureClass.DATA_ERROR]
    assert got[0].similarity > 0.99 > got[1].similarity
    assert recall(store, Fingerprint(), k=2) == []


def _drain(sim: float, id_: str) -> SimilarIncident:
    return _similar(FailureClass.GPU_HARDWARE, sim, id_=id_).model_copy(update={"action": Action.DRAIN_NODE_AND_RETRY})


def test_one_close_match_never_drains_a_node_on_its_own() -> None:
    generic = _diag(FailureClass.CUDA_ERROR, confidence=0.6).model_copy(update={"action": Action.RETRY})
    one = with_memory(generic, [_drain(0.95, "inc-a"), _similar(FailureClass.CUDA_ERROR, 0.5)])
    assert one.failure_class is FailureClass.CUDA_ERROR and one.action is Action.RETRY and one.decided_by == "rules"
    two = with_memory(generic, [_drain(0.95, "inc-a"), _drain(0.9, "inc-b")])
    assert two.action is Action.DRAIN_NODE_AND_RETRY and two.decided_by == "memory"
    # where the rules drain already, one close match may say which incident it was
    draining = generic.model_copy(update={"failure_class": FailureClass.NETWORK, "action": Action.DRAIN_NODE_AND_RETRY})
    assert with_memory(draining, [_drain(0.95, "inc-a")]).failure_class is FailureClass.GPU_HARDWARE


def test_a_weak_match_is_listed_and_labelled_but_decides_nothing() -> None:
    store = MemoryIncidentStore()
    # NCCL's IB transport (NVIDIA/nccl:src/transport/net_ib.cc, its format with values filled in), then a line of
    # torch elastic's teardown (torch/distributed/elastic/multiprocessing/api.py)
    ib = "NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129"
    fp = Fingerprint(templates=[ib], rule_ids=["net.ib"])
    store.add(
        Incident(
            fingerprint=fp,
            failure_class=FailureClass.NETWORK,
            action=Action.DRAIN_NODE_AND_RETRY,
            provenance=Provenance(job="j"),
        )
    )
    query = Fingerprint(
        templates=[
            ib,
            "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 4242 closing signal SIGTERM",
        ]
    )
    near = recall(store, query, k=1, threshold=0.3, close=0.99)
    assert [s.match for s in near] == ["weak"]
    d = with_memory(_diag(), near, threshold=0.3, close=0.99)
    assert d.failure_class is FailureClass.UNKNOWN and "weak match" in d.summary and d.similar[0].match == "weak"


def test_a_sure_root_cause_verdict_stands_against_a_close_match() -> None:
    sure = _diag(FailureClass.STORAGE, confidence=0.85)
    assert with_memory(sure, [_similar(FailureClass.CODE_BUG, 0.99)]).failure_class is FailureClass.STORAGE
