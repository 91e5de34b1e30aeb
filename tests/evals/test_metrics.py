"""Metrics against figures worked out by hand."""

from __future__ import annotations

import json

import pytest

from crashcart.evals.metrics import (
    ERROR_COLUMN,
    CaseResult,
    compute_metrics,
    evidence_hit,
    faulty_node_hit,
    node_matches,
    normalise_ws,
)
from crashcart.knowledge.records import rank_written
from crashcart.knowledge.taxonomy import Action, FailureClass

GH, NET, OOM, BUG, STO = (
    FailureClass.GPU_HARDWARE,
    FailureClass.NETWORK,
    FailureClass.GPU_OOM,
    FailureClass.CODE_BUG,
    FailureClass.STORAGE,
)
DRAIN, FIX, ESC = Action.DRAIN_NODE_AND_RETRY, Action.FIX_JOB, Action.ESCALATE_INFRA


def _r(
    i: int,
    exp: FailureClass,
    pred: FailureClass | None,
    exp_a: Action,
    pred_a: Action | None,
    seconds: float = 0.0,
    **kw: object,
) -> CaseResult:
    return CaseResult(
        id=f"c{i}",
        expected_class=exp,
        predicted_class=pred,
        expected_action=exp_a,
        predicted_action=pred_a,
        seconds=seconds,
        **kw,
    )


def five() -> list[CaseResult]:
    """Five cases.

    expected -> predicted      action expected/predicted
    c1 gpu_hardware -> gpu_hardware   drain/drain   ok
    c2 gpu_hardware -> network        drain/drain   ok   (class wrong, action right)
    c3 network      -> network        drain/drain   ok
    c4 gpu_oom      -> gpu_oom        fix/escalate  wrong
    c5 gpu_oom      -> code_bug       fix/fix       ok

    gpu_hardware: TP 1, predicted 1, support 2 -> P 1,   R 1/2, F1 2/3
    network:      TP 1, predicted 2, support 1 -> P 1/2, R 1,   F1 2/3
    gpu_oom:      TP 1, predicted 1, support 2 -> P 1,   R 1/2, F1 2/3
    code_bug:     TP 0, predicted 1, support 0 -> P 0,   R 0,   F1 0
    macro-F1 = (2/3 + 2/3 + 2/3 + 0) / 4 = 0.5; accuracy 3/5 = 0.6; action accuracy 4/5 = 0.8
    seconds 0.1 0.2 0.3 0.4 1.0 -> mean 0.4, p50 0.3, max 1.0
    """
    return [
        _r(1, GH, GH, DRAIN, DRAIN, 0.2),
        _r(2, GH, NET, DRAIN, DRAIN, 1.0),
        _r(3, NET, NET, DRAIN, DRAIN, 0.1),
        _r(4, OOM, OOM, FIX, ESC, 0.4),
        _r(5, OOM, BUG, FIX, FIX, 0.3),
    ]


def test_hand_computed_five_cases() -> None:
    rep = compute_metrics(five())
    assert rep.cases == 5 and rep.errors == 0
    assert rep.accuracy == pytest.approx(0.6)
    assert rep.action_accuracy == pytest.approx(0.8)
    assert rep.macro_f1 == pytest.approx(0.5)
    assert list(rep.per_class) == ["gpu_hardware", "network", "gpu_oom", "code_bug"]  # taxonomy order
    gh, net, oom, bug = (rep.per_class[k] for k in ("gpu_hardware", "network", "gpu_oom", "code_bug"))
    assert (gh.precision, gh.recall, gh.support) == (1.0, 0.5, 2)
    assert gh.f1 == pytest.approx(2 / 3)
    assert (net.precision, net.recall, net.support) == (0.5, 1.0, 1)
    assert net.f1 == pytest.approx(2 / 3)
    assert (oom.precision, oom.recall, oom.support) == (1.0, 0.5, 2)
    assert (bug.precision, bug.recall, bug.f1, bug.support) == (0.0, 0.0, 0.0, 0)
    assert rep.confusion == {
        "gpu_hardware": {"gpu_hardware": 1, "network": 1},
        "network": {"network": 1},
        "gpu_oom": {"gpu_oom": 1, "code_bug": 1},
    }
    assert rep.seconds_per_case == pytest.approx(0.4)
    assert rep.seconds_p50 == pytest.approx(0.3)
    assert rep.seconds_max == pytest.approx(1.0)
    assert rep.evidence_hit_rate is None and rep.evidence_cases == 0
    assert rep.faulty_node_hit_rate is None and rep.faulty_node_cases == 0
    assert [r.id for r in rep.results] == ["c1", "c2", "c3", "c4", "c5"]


def test_failed_triage_counts_against_every_figure() -> None:
    """Add c6 storage whose triage failed.

    storage: TP 0, predicted 0, support 1 -> P 0, R 0, F1 0
    macro-F1 = 2 / 5 = 0.4; accuracy 3/6 = 0.5; action accuracy 4/6
    """
    results = [
        *five(),
        _r(
            6,
            STO,
            None,
            ESC,
            None,
            0.0,
            error="InputError: empty file",
            expected_evidence=["Stale file handle"],
            expected_faulty_nodes=["node1"],
        ),
    ]
    rep = compute_metrics(results)
    assert rep.errors == 1 and rep.cases == 6
    assert rep.accuracy == pytest.approx(0.5)
    assert rep.action_accuracy == pytest.approx(4 / 6)
    assert rep.macro_f1 == pytest.approx(0.4)
    assert rep.per_class["storage"].support == 1 and rep.per_class["storage"].f1 == 0.0
    assert rep.confusion["storage"] == {ERROR_COLUMN: 1}
    assert rep.evidence_hit_rate == 0.0 and rep.evidence_cases == 1
    assert rep.faulty_node_hit_rate == 0.0 and rep.faulty_node_cases == 1


def test_report_json_has_top_level_scalars() -> None:
    data = json.loads(compute_metrics(five()).model_dump_json())
    for key in (
        "accuracy",
        "macro_f1",
        "action_accuracy",
        "evidence_hit_rate",
        "faulty_node_hit_rate",
        "seconds_per_case",
        "cases",
        "errors",
    ):
        assert key in data and not isinstance(data[key], (dict, list)), key
    assert isinstance(data["results"], list) and data["per_class"]["network"]["precision"] == 0.5


def test_empty_results_give_zeros() -> None:
    rep = compute_metrics([])
    assert (rep.cases, rep.accuracy, rep.macro_f1, rep.seconds_per_case, rep.seconds_max) == (0, 0, 0, 0, 0)
    assert rep.per_class == {} and rep.confusion == {}


def test_all_correct_is_one() -> None:
    rep = compute_metrics([_r(1, GH, GH, DRAIN, DRAIN), _r(2, NET, NET, DRAIN, DRAIN)])
    assert rep.accuracy == rep.macro_f1 == rep.action_accuracy == 1.0


# --- evidence ---------------------------------------------------------------------------------------


def test_normalise_ws() -> None:
    assert normalise_ws("  a \t b\n\nc  ") == "a b c"


@pytest.mark.parametrize(
    ("labeled", "predicted", "hit"),
    [
        (["CUDA out of memory"], ["torch.OutOfMemoryError: CUDA out of memory. Tried"], True),
        (["CUDA  out\tof memory"], ["x: CUDA out of memory"], True),  # label whitespace
        (["CUDA out of memory"], ["x: CUDA   out\n of  memory"], True),  # prediction whitespace
        (["CUDA out of memory"], ["something else", "CUDA out of"], False),
        (["a", "CUDA out of memory"], ["CUDA out of memory!"], True),  # any label
        (["CUDA out of memory"], [], False),
        (["cuda out of memory"], ["CUDA out of memory"], False),  # case is kept: labels are exact quotes
        (["   "], ["anything"], False),  # a blank label proves nothing
    ],
)
def test_evidence_hit(labeled: list[str], predicted: list[str], hit: bool) -> None:
    r = _r(1, OOM, OOM, FIX, FIX, expected_evidence=labeled, predicted_evidence=predicted)
    assert evidence_hit(r) is hit


def test_evidence_rate_is_over_labeled_cases_only() -> None:
    results = [
        _r(
            1,
            OOM,
            OOM,
            FIX,
            FIX,
            expected_evidence=["out of memory"],
            predicted_evidence=["CUDA out of memory"],
        ),
        _r(2, OOM, OOM, FIX, FIX, expected_evidence=["out of memory"], predicted_evidence=["nope"]),
        _r(3, OOM, OOM, FIX, FIX, predicted_evidence=["CUDA out of memory"]),  # no label: not counted
    ]
    rep = compute_metrics(results)
    assert rep.evidence_cases == 2 and rep.evidence_hit_rate == pytest.approx(0.5)


# --- faulty nodes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "number"),
    [
        ("rank12", 12),
        ("Rank 1", 1),
        ("[rank3]", 3),
        ("290", 290),
        (" RANK 7 ", 7),
        ("[ rank 4 ]", 4),
        ("hostname-test", None),
        ("node12", None),
        ("gpu-node-3", None),
        ("rank", None),
        ("12a", None),
        ("rank" + "9" * 5000, None),  # a label past int()'s 4,300 digits names no rank
    ],
)
def test_rank_written(label: str, number: int | None) -> None:
    assert rank_written(label) == number


@pytest.mark.parametrize(
    ("label", "nodes", "ranks", "hit"),
    [
        ("hostname-test", ["hostname-test"], [], True),
        ("hostname-test", ["HOSTNAME-TEST"], [], True),  # hostnames compare case-insensitively
        ("hostname-test", ["hostname-test2"], [], False),
        ("hostname-test", [], [0], False),
        ("rank12", [], [12], True),
        ("rank12", [], [1, 2], False),
        ("Rank 1", [], [1], True),
        ("[rank3]", [], [3], True),
        ("290", [], [290], True),
        ("290", [], [29], False),
        ("rank12", ["rank12"], [], True),  # the node string itself
        ("Rank 1", ["rank1"], [], True),  # same rank written another way
        ("rank4", ["node4"], [], False),  # a hostname's digits are not a rank
        ("node4", [], [4], False),
        ("rank12", ["node-a"], [3], False),
    ],
)
def test_node_matches(label: str, nodes: list[str], ranks: list[int], hit: bool) -> None:
    assert node_matches(label, nodes, ranks) is hit


def test_faulty_node_hit_any_label_and_rate() -> None:
    results = [
        _r(1, GH, GH, DRAIN, DRAIN, expected_faulty_nodes=["node-a", "rank12"], predicted_faulty_ranks=[12]),
        _r(2, GH, GH, DRAIN, DRAIN, expected_faulty_nodes=["node-b"], predicted_faulty_nodes=["node-c"]),
        _r(3, GH, GH, DRAIN, DRAIN, expected_faulty_nodes=["Rank 1"], predicted_faulty_nodes=["1"]),
        _r(4, GH, GH, DRAIN, DRAIN, predicted_faulty_nodes=["node-z"]),  # unlabeled: not counted
    ]
    assert [faulty_node_hit(r) for r in results] == [True, False, True, False]
    rep = compute_metrics(results)
    assert rep.faulty_node_cases == 3 and rep.faulty_node_hit_rate == pytest.approx(2 / 3)


def test_an_errored_case_misses_even_with_stale_predictions() -> None:
    r = _r(
        1,
        OOM,
        None,
        FIX,
        None,
        error="InputError: x",
        expected_evidence=["CUDA out of memory"],
        predicted_evidence=["CUDA out of memory"],
        expected_faulty_nodes=["rank1"],
        predicted_faulty_ranks=[1],
    )
    rep = compute_metrics([r])
    assert rep.evidence_hit_rate == 0.0 and rep.faulty_node_hit_rate == 0.0


def test_calibration_counts_the_wrong_verdicts_of_each_path_and_confidence_band() -> None:
    results = [
        _r(1, GH, GH, DRAIN, DRAIN, predicted_confidence=0.93, decided_by="rules"),
        _r(2, GH, NET, DRAIN, DRAIN, predicted_confidence=0.95, decided_by="rules"),
        _r(3, OOM, BUG, FIX, FIX, predicted_confidence=0.65, decided_by="structure"),
        _r(4, OOM, OOM, FIX, FIX, predicted_confidence=0.62, decided_by="structure"),
        _r(5, BUG, BUG, FIX, FIX),  # no confidence reported: left out
    ]
    rows = [(r.decided_by, r.band, r.cases, r.wrong, r.error_rate) for r in compute_metrics(results).calibration]
    assert rows == [("rules", "0.9-1.0", 2, 1, 0.5), ("structure", "0.6-0.7", 2, 1, 0.5)]
