"""Hosts named inside messages, the peer of a broken link, launcher summaries: raw lines beside what they name."""

from __future__ import annotations

import pytest

from crashcart.parsers.hosts import hosts_in_message, peer_host, summary_fields

REPORTS = [
    # Slurm reports the node it lost from the controller's side (nebius/soperator#854) and the node of a cancelled
    # step (chrisknewman/tusas#149, hafs-community/HAFS#101)
    ("salloc: error: Node failure on worker-1", ["worker-1"]),
    ("slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***", ["nid001277"]),
    ("slurmstepd: error: *** STEP 3495064.0 ON orion-01-01 CANCELLED AT 2021-10-27T19:35:36 ***", ["orion-01-01"]),
    ("srun: error: nid001277: tasks 1-3: Out Of Memory", ["nid001277"]),
    # Ray's GCS marks a node dead by ip (ray-project/ray#15128), inside its JSON event log (ray-project/ray#54035),
    # and behind a progress bar that lost its \r (ray-project/ray#18449)
    (
        "The node with node id: 75b2eec8a61cdafd37cc8072b1caf9abdeef9c4e74a4f24d5dfce28d and ip: 10.4.4.107 has been "
        "marked dead because the detector has missed too many heartbeats from it. This can happen when a raylet "
        "crashes unexpectedly or has lagging heartbeats.",
        ["10.4.4.107"],
    ),
    (
        '{"custom_fields":{"ip":"156.176.0.154","node_id":"ada3a3771fac751bd7c6b674e3b5e2df045b93550e6d31a410cad0be"},'
        '"event_id":"1820787c7179bb878444735ecb267c1bea04","host_name":"paas-controller-1","label":"RAY_NODE_REMOVED",'
        '"message":"The node with node id: ada3a3771fac751bd7c6b674e3b5e2df045b93550e6d31a410cad0be and address: '
        "156.176.0.154 and node name: 156.176.0.154 has been marked dead because the detector has missed too many "
        "heartbeats from it. This can happen when a \\t(1) raylet crashes unexpectedly (OOM, etc.) \\\\n\\t(2) raylet "
        'has lagging heartbeats due to slow network or busy workload.","pid":"65","severity":"ERROR",'
        '"source_type":"GCS","timestamp":1750669108}',
        ["156.176.0.154"],
    ),
    (
        "Reduce Progress.:  69%|██████▉   | 691/1000 [28:51<28:26,  5.52s/it]2021-09-05 05:42:38,294     WARNING "
        "worker.py:1228 -- The node with node id: 0fc14938add3345146c57e92449e77a584cace230879f50fd0813cc0 and ip: "
        "172.31.57.35 has been marked dead because the detector has missed too many heartbeats from it. This can "
        "happen when a raylet crashes unexpectedly or has lagging heartbeats.",
        ["172.31.57.35"],
    ),
    # Open MPI's mpirun names the node of the rank that died (as quoted on the Open MPI users list), and ORTE
    # the daemon it lost, not its own (PoonLab/covizu#408)
    (
        "mpirun noticed that process rank 14 with PID 4257 on node compute-0-2.local exited on signal 11 "
        "(Segmentation fault).",
        ["compute-0-2.local"],
    ),
    ("  Remote daemon: [[10831,0],1] on node n0", ["n0"]),
    ("  HNP daemon   : [[10831,0],0] on node BEVi", []),
    # pdsh on the first node about another (a Determined DeepSpeed trial): the printer is ip-172-31-36-1
    ("pdsh@ip-172-31-36-1: 172.31.42.141: ssh exited with exit code 247", ["172.31.42.141"]),
    # ssh from DeepSpeed's launcher (AIMLTOP/deepspeed-on-aws, README.md)
    ("ssh: connect to host algo-2 port 22: Connection refused", ["algo-2"]),
    # Horovod elastic blacklisting a local test host: 127.0.0.1 tells no node from another (horovod/horovod#1965)
    ("host 127.0.0.1 has been blacklisted, ignoring exit from local_rank=0", []),
    # the printer's own interface address is no report (facebookresearch/vissl#480)
    ("r29n2:27102:27102 [0] NCCL INFO Bootstrap : Using [0]admin0:145.101.32.23<0>", []),
    ("Traceback (most recent call last):", []),
]


@pytest.mark.parametrize(("line", "hosts"), REPORTS)
def test_hosts_in_message(line: str, hosts: list[str]) -> None:
    assert hosts_in_message(line) == hosts


PEERS = [
    # NCCL's IB transport names the peer of the failed completion (NVIDIA/nccl#1814), with an IPv6 link-local
    # address and its zone (NVIDIA/nccl#928), behind a timestamp (scitix/sichek#44)
    (
        "hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> "
        "with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:29.87.88.182 remoteGids::ffff:"
        "29.87.4.221",
        "172.36.143.59",
    ),
    (
        "H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
        "fe80::966d:ae03:8b:df78%ib0<53249> with error 4, opcode 32564, len 32564, vendor err 81 (Send)",
        "fe80::966d:ae03:8b:df78",
    ),
    (
        "[2026-01-04 21:33:04] test-ys-512-scaling-test-0104-1504-a7de2925-master-0:617:2799 [3] "
        "transport/net_ib.cc:2360 NCCL WARN NET/IB: Got completion from peer 172.16.234.184<53393> with status=12 "
        "opcode=1 len=5222 vendor err 129 (Send) localGid ::ffff:100.123.200.87 remoteGids::ffff:100.123.200.74 "
        "hca mlx5_26",
        "172.16.234.184",
    ),
    # NCCL's socket layer, by address (NVIDIA/nccl#1612) or by name (NVIDIA/nccl#1232)
    ("[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer 10.10.1.3<36138>", "10.10.1.3"),
    ("NCCL WARN socketProgress: Connection closed by remote peer node2<42830>", "node2"),
    # gloo under horovodrun (horovod/horovod#2652)
    (
        "[0]<stderr>:[2021-02-08 09:24:59.555830: E /tmp/pip-install-7tlcippf/horovod_015e4deaf97a4b33908ab119077a4f9c"
        "/horovod/common/operations.cc:548] Horovod background loop uncaught exception: [/tmp/pip-install-7tlcippf/"
        "horovod_015e4deaf97a4b33908ab119077a4f9c/third_party/compatible_gloo/gloo/transport/tcp/pair.cc:566] Read "
        "error [10.0.1.246]:63386: Connection reset by peer",
        "10.0.1.246",
    ),
    # no address printed (NVIDIA/nccl#1052's title), and the printer's own address (facebookresearch/vissl#480)
    (
        "transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer with error 4, opcode 0, len 0, "
        "vendor err 81 (Send) localGid ::ffff: remoteGid ::ffff:",
        None,
    ),
    ("r29n2:27102:27102 [0] NCCL INFO Bootstrap : Using [0]admin0:145.101.32.23<0>", None),
]


@pytest.mark.parametrize(("line", "peer"), PEERS)
def test_peer_host(line: str, peer: str | None) -> None:
    assert peer_host(line) == peer


# torchrun's failure summary, two failures and the root cause, as vllm-project/speculators#1115 shows it
SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/root/speculators/scripts/train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-09-07_13:02:58
  host      : localhost
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 14692)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-09-07_13:03:29
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14689)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14689
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-09-07_13:02:58
  host      : localhost
  rank      : 1 (local_rank: 1)""".splitlines()

# a multi-node one, its host a real node (huggingface/accelerate#3206)
MULTI_NODE = """\
Root Cause (first observed failure):
[0]:
  time      : 2024-11-02_21:03:02
  host      : as01r1b03.bsc.mn
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 2414397)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================""".splitlines()


def test_summary_fields_reads_the_root_cause_block() -> None:
    assert summary_fields(SUMMARY) == {
        "time": "2026-09-07_13:02:58",
        "host": "localhost",
        "rank": "1",
        "local_rank": "1",
    }


def test_summary_fields_reads_the_first_block_without_a_root_cause_heading() -> None:
    assert summary_fields(SUMMARY[:13]) == {
        "time": "2026-09-07_13:02:58",
        "host": "localhost",
        "rank": "3",
        "local_rank": "3",
        "exitcode": "1",
        "pid": "14692",
        "error_file": "<N/A>",
        "traceback": "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    }


def test_summary_fields_of_a_multi_node_job() -> None:
    assert summary_fields(MULTI_NODE) == {
        "time": "2024-11-02_21:03:02",
        "host": "as01r1b03.bsc.mn",
        "rank": "0",
        "local_rank": "0",
        "exitcode": "1",
        "pid": "2414397",
        "error_file": "<N/A>",
        "traceback": "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    }


def test_summary_fields_of_lines_without_a_summary_is_empty() -> None:
    # the launcher's own traceback above its summary (dhcode-cpp/X-R1#23)
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/dist-packages/torch/distributed/run.py", line 910, in run',
    ]
    assert summary_fields(lines) == {}
