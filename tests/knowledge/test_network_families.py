"""Fabric families of knowledge/signatures/network.yaml in the wordings of other versions and transports (NCCL
before it named the peer, UCX, Open MPI's openib BTL, libmlx5, gRPC, the c10d store), read in a whole log.

Every line is one a real program printed, with the thread it was seen in.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import triage_lines

from crashcart.knowledge.taxonomy import FailureClass, Role


def test_nccl_2_8s_completion_error_without_a_peer_is_the_ib_retry_family(tmp_path: Path) -> None:
    # NVIDIA/nccl#426 (NCCL 2.8.3): the WARN before NCCL named the peer
    report = triage_lines(tmp_path, "NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129")
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.retry_exceeded"


def test_a_ucx_endpoint_timeout_is_the_fabric(tmp_path: Path) -> None:
    # rapidsai/ucx-py#131: Dask over UCX on a DGX, the endpoint times out and the transport retries run out
    report = triage_lines(
        tmp_path,
        "[1564069506.097666] [dgx15:34226:0]     ucp_worker.c:505  UCX  ERROR error 'Endpoint timeout' will not be "
        "handled for ep 0x7fb7fd48f120 - rc_mlx5/mlx5_3:1",
        "[dgx15:34226:0:34226] ib_mlx5_log.c:139  RC QP 0x92c5 wqe[101]: SEND --e [va 0x7fb6cb1b1440 len 36 lkey "
        "0x41d73]",
        "==== backtrace ====",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ucx_endpoint_timeout"
    # openucx/ucx#9736: UCX's debug log of a retransmission that got through is no failure
    resent = (
        "[1710151844.504437] [m051:6032 :0]           ud_ep.c:1433 UCX  DEBUG ep(0x5617c4514aa0): resending completed"
    )
    assert triage_lines(tmp_path, resent).diagnosis.failure_class is not FailureClass.NETWORK


def test_open_mpis_openib_retry_exhaustion_is_the_ib_retry_family(tmp_path: Path) -> None:
    # Open MPI users list: handle_wc's line and the help text mpirun prints under it
    report = triage_lines(
        tmp_path,
        "[[1176,1],0][btl_openib_component.c:2905:handle_wc] from tango092.vpac.org to: tango090 error polling LP CQ "
        "with status RETRY EXCEEDED ERROR status number 12 for wr_id 38996224 opcode 0 qp_idx 0",
        "--------------------------------------------------------------------------",
        "The InfiniBand retry count between two MPI processes has been",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.transport_retry_text"


def test_libmlx5s_cqe_dump_is_a_fabric_completion_error(tmp_path: Path) -> None:
    # ofiwg/libfabric#4283: an MPI benchmark over verbs;ofi_rxm, libmlx5 dumps the failed CQE
    report = triage_lines(
        tmp_path,
        "524288               2695.39           2672.63           2712.05         100",
        "mlx5: cn10: got completion with error:",
        "00000000 00000000 00000000 00000000",
        "00000000 00008813 10012abe 0dd0c1d3",
        "libfabric:ofi_rxm:cq:rxm_cq_read_write_error():819<warn> fi_cq_readerr: err: 5, prov_err: remote access "
        "error (10)",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.completion_error"


def test_a_tpu_worker_gone_from_grpc_is_a_network_symptom(tmp_path: Path) -> None:
    # tensorflow/tensorflow#46007: the coordinator's RPCs to a TPU v3-8 fail, retried
    report = triage_lines(
        tmp_path,
        "2020-12-28 01:56:05.252251: W    1465 tensorflow/core/distributed_runtime/rpc/grpc_remote_master.cc:160] RPC "
        'failed with status = "Unavailable: Socket closed" and grpc_error_string = "{"created":"@1609120565.252143973"'
        ',"description":"Error received from peer ipv4:10.180.83.2:8470","file":"external/com_github_grpc_grpc/src/'
        'core/lib/surface/call.cc","file_line":1056,"grpc_message":"Socket closed","grpc_status":14}", maybe retrying'
        " the RPC",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].role is Role.SYMPTOM


def test_a_store_whose_host_closed_the_socket_is_a_network_symptom(tmp_path: Path) -> None:
    # pytorch/pytorch#153586: a rank waiting on a key when the TCPStore's host shut down
    report = triage_lines(
        tmp_path,
        "[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
        "addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was likely "
        "closed. Did the remote server shutdown or crash?",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.dist_network_error"


# NCCL 2.25's IB async thread on a fatal QP event, as an nccl-tests run printed it (NVIDIA/nccl#1919)
NCCL_2_2X_ASYNC_FATAL = (
    "node-0:139577:139678 [0] transport/net_ib.cc:154 NCCL WARN NET/IB : mlx5_1:1 async fatal event on QP"
    " (0x7309dc3bb338): invalid request local work queue error"
)
# NCCL 2.2x's resiliency, as libnccl.so 2.32.3 (the nvidia-nccl-cu12 wheel) formats it; plausible values filled in
# (no run that printed it is at hand)
NCCL_2_2X_NOT_FATAL = "gpu-node-07:1234:1290 [3] NCCL WARN NET/IB: send: The error is not fatal. Trying to continue..."


def test_nccl_2_2xs_fatal_async_event_is_the_nic(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, NCCL_2_2X_ASYNC_FATAL)
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.device_fatal"


def test_nccl_2_2xs_resiliency_failing_over_is_not_a_fault(tmp_path: Path) -> None:
    report = triage_lines(tmp_path, NCCL_2_2X_NOT_FATAL)
    assert not any(getattr(e, "rule_id", "").startswith("net.ib.") for e in report.events)


def test_nccl_2_2xs_completion_with_a_status_name_keeps_the_status_family(tmp_path: Path) -> None:
    report = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] NCCL WARN NET/IB: recv: Got completion with error (devIndex=1, wc->status=(remote "
        "access error)10, wc->opcode=(RDMA_WRITE)0, wc->wr_id=77, wc->qp_num=4522, wc->byte_len=0)",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.completion_error"


def test_nccl_2_2xs_verbs_retry_is_not_the_failed_call(tmp_path: Path) -> None:
    # misc/ibvwrap.cc in libnccl.so 2.32.3 retries ibv_modify_qp before its final 'failed with %d %s, %s'
    retry = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection "
        "timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.7, "
        "remote GID ::ffff:10.0.0.8, retrying 1/7 after 250 msec of sleep",
    )
    assert not any(getattr(e, "rule_id", "") == "net.ib.verbs_call_failed" for e in retry.events)
    final = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection "
        "timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.7, "
        "remote GID ::ffff:10.0.0.8",
    )
    assert final.diagnosis.evidence[0].rule_id == "net.ib.verbs_call_failed"


def test_nccl_2_2xs_os_socket_layer_failing_to_connect_is_the_network_but_its_retry_is_not(tmp_path: Path) -> None:
    # libnccl.so 2.32.3's connect loop: the source's format strings, values filled in
    given_up = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] NCCL WARN ncclOsSocketPollConnect: connect to 10.0.0.8<41312> returned Connection "
        "timed out, exceeded error retry count after 35 attempts",
    )
    assert given_up.diagnosis.failure_class is FailureClass.NETWORK
    assert given_up.diagnosis.evidence[0].rule_id == "net.socket.nccl_connect_failed"
    retry = triage_lines(
        tmp_path,
        "gpu-node-07:1234:1290 [3] NCCL INFO ncclOsSocketPollConnect: connect to 10.0.0.8<41312> returned Connection "
        "refused, retrying (1/34) after sleep for 100 msec",
    )
    assert not any(getattr(e, "rule_id", "") == "net.socket.nccl_connect_failed" for e in retry.events)


def test_nccls_connect_with_no_route_to_the_peer_is_the_network(tmp_path: Path) -> None:
    # sgl-project/sglang#3820: NCCL's bootstrap on node5 cannot reach its peer, then the Python stack unwinds
    report = triage_lines(
        tmp_path,
        "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No"
        " route to host) errno 115(Operation now in progress)",
        "node5:240:240 [6] NCCL INFO misc/socket.cc:570 -> 2",
        "[2025-02-24 14:09:34 TP14] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1816, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.socket.nccl_connect_failed"


def test_an_rdma_port_down_is_the_fabric_but_the_same_port_active_is_not(tmp_path: Path) -> None:
    # ROCm/rccl#1423: `rdma link` while RCCL hung with a port error, then once the port came back
    down = "link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING"
    assert triage_lines(tmp_path, down).diagnosis.failure_class is FailureClass.NETWORK
    up = "link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP"
    assert not any(getattr(e, "rule_id", "") == "net.rdma_link_state_down" for e in triage_lines(tmp_path, up).events)


def test_a_nic_whose_firmware_stopped_answering_is_the_fabric(tmp_path: Path) -> None:
    # the mlx5 driver's health poller (torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/health.c): its formats
    report = triage_lines(
        tmp_path,
        "kernel: [   17.982092] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached "
        "miss count",
        "kernel: [   17.982217] mlx5_core 0000:41:00.0: print_health_info:458:(pid 0): synd 0x8: unrecoverable hardware"
        " error",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.nic_fatal_health"
    boot = triage_lines(tmp_path, "kernel: [    4.112842] mlx5_core 0000:41:00.0: firmware version: 20.31.1014")
    assert not any(getattr(e, "rule_id", "") == "net.nic_fatal_health" for e in boot.events)


def test_the_kernels_transmit_watchdog_is_a_hung_nic(tmp_path: Path) -> None:
    # net/sched/sch_generic.c's dev_watchdog (the pre-6.x format, an interface filled in)
    report = triage_lines(tmp_path, "kernel: NETDEV WATCHDOG: enp94s0f0 (mlx5_core): transmit queue 3 timed out")
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.netdev_tx_timeout"


def test_nccl_2_1xs_last_error_of_a_refused_recv_is_the_socket_path(tmp_path: Path) -> None:
    # EleutherAI/gpt-neox#1147: torch's 'Last error:' under an internal error, NCCL 2.14's socket WARN text
    report = triage_lines(
        tmp_path,
        "NCCL error in: ProcessGroupNCCL.cpp:1269, internal error, NCCL version 2.14.3",
        "node2: Last error:",
        "node2: Net : Call to recv from NODE2_IP<56843> failed : Connection refused",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.socket.nccl_connect_failed"


def test_nccl_2_1xs_closed_peer_as_a_last_error_is_a_lost_peer(tmp_path: Path) -> None:
    # NCCL 2.1x's WARN 'Net : Connection closed by remote peer %s' (NVIDIA/nccl:src/misc/socket.cc), address filled in
    report = triage_lines(tmp_path, "Net : Connection closed by remote peer 10.0.0.2<42830>")
    assert any(getattr(e, "rule_id", "") == "net.peer_closed" for e in report.events)


def test_open_mpis_tcp_readv_failure_is_a_weak_network_symptom_under_a_peers_crash(tmp_path: Path) -> None:
    # Open MPI users list: the other ranks of a job whose one rank segfaulted (btl_tcp_frag.c)
    alone = triage_lines(
        tmp_path,
        "[cstone-00612][[21785,1],35][btl_tcp_frag.c:216:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: "
        "Connection reset by peer (104)",
    )
    assert alone.diagnosis.failure_class is FailureClass.NETWORK
    readv = next(e for e in alone.events if getattr(e, "rule_id", "") == "net.ompi_tcp_readv_failed")
    assert readv.role is Role.SYMPTOM


def test_an_ib_retry_error_whose_peer_the_user_masked_is_still_the_retry_family(tmp_path: Path) -> None:
    # sgl-project/sglang#4857: the peer's address (and its <port>) replaced by a placeholder before posting
    report = triage_lines(
        tmp_path,
        "[Node-A]:[PID]:[Thread] [0] NCCL WARN NET/IB : Got completion from peer [PRIVATE_IP] with error 12, opcode 0, "
        "len 0, vendor err 129 (Recv)  ",
        "localGid ::ffff:[MASKED_IP] remoteGid ::ffff:[MASKED_IP]  ",
        "[Node-A]:[PID]:[Thread] [0] NCCL INFO transport/net.cc:1302 -> 6  ",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.ib.retry_exceeded"


def test_a_queue_pair_that_never_reached_rtr_is_the_fabric(tmp_path: Path) -> None:
    # uccl-project/uccl#641: UCCL's own words when the RoCE queue pairs of some nodes time out bringing up
    report = triage_lines(
        tmp_path,
        "RoCE detected (Ethernet)",
        "  port_state: ACTIVE",
        "Failed to modify QP to RTR: Connection timed out",
        "errno: 110",
    )
    assert report.diagnosis.failure_class is FailureClass.NETWORK
    assert report.diagnosis.evidence[0].rule_id == "net.qp_transition_failed"


def test_ibstats_disabled_port_is_a_down_link_but_a_linkup_one_is_not(tmp_path: Path) -> None:
    # NVIDIA/nccl#622: ibstat of an E810 RoCE port next to NCCL's failed ibv_modify_qp
    down = triage_lines(tmp_path, "CA 'rocep216s0f0'", "\tPort 1:", "\t\tState: Down", "\t\tPhysical state: Disabled")
    assert any(getattr(e, "rule_id", "") == "net.rdma_link_state_down" for e in down.events)
    up = triage_lines(tmp_path, "CA 'rocep216s0f0'", "\tPort 1:", "\t\tState: Active", "\t\tPhysical state: LinkUp")
    assert not any(getattr(e, "rule_id", "") == "net.rdma_link_state_down" for e in up.events)
