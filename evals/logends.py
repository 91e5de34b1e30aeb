"""The beginning and the end of a synthetic job: launch preambles, the fault, its symptoms, the teardown.

Both are small next to the body, so they favour clarity: each is a list of timed events (time, stream,
lines) that a file keeps for its own streams and writes in time order. That is what makes a single
`srun --label` file interleave correctly and puts the root cause first in time on every layout.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from crashcart.evals.logtext import (
    CKPT_DIR,
    PCI,
    FilePlan,
    JobPlan,
    agent_pid,
    agent_prefix,
    checkpoint_lines,
    ctx,
    date,
    emit,
    glog,
    ip,
    is_logger,
    pid,
    rank_prefix,
    syslog_prefix,
    validation_lines,
)

_ELASTIC = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
_SIGNALS = {6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV"}


class Event(NamedTuple):
    """Lines one stream prints at time t; kind is rank/agent/kernel/sched, who the rank or node index."""

    t: float
    kind: str
    who: int
    lines: list[str]
    raw: bool = False  # written without the stream's launcher prefix


def _args_dump(plan: JobPlan) -> list[str]:
    """Megatron's argument dump (`  adam_beta1 ...................................... 0.9` between the two dashed
    rules, hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md, bigscience-workshop/Megatron-DeepSpeed
    #356); a subset of the real argument names, in Megatron's sorted order."""
    tp, pp = min(8, plan.gpus_per_node), 4 if len(plan.hosts) % 4 == 0 else 1
    args = {
        "adam_beta1": 0.9,
        "adam_beta2": 0.95,
        "attention_dropout": 0.0,
        "bf16": True,
        "clip_grad": 1.0,
        "data_parallel_size": max(1, plan.world // (tp * pp)),
        "distributed_backend": "nccl",
        "distributed_timeout_minutes": 10,
        "eval_interval": plan.eval_interval,
        "eval_iters": 10,
        "ffn_hidden_size": 49152,
        "global_batch_size": 1024,
        "hidden_size": 12288,
        "log_interval": 1,
        "lr": 0.0003,
        "lr_decay_style": "cosine",
        "lr_warmup_iters": 2000,
        "micro_batch_size": 1,
        "min_lr": 3e-05,
        "num_attention_heads": 96,
        "num_layers": 96,
        "pipeline_model_parallel_size": pp,
        "save": CKPT_DIR,
        "save_interval": plan.save_interval,
        "seed": 1234,
        "seq_length": 4096,
        "sequence_parallel": True,
        "tensor_model_parallel_size": tp,
        "timing_log_level": 1,
        "tokenizer_type": "GPT2BPETokenizer",
        "train_iters": plan.train_iters,
        "use_distributed_optimizer": True,
        "use_flash_attn": True,
        "weight_decay": 0.1,
        "world_size": plan.world,
    }
    lines = ["------------------------ arguments ------------------------"]
    lines += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in sorted(args.items())]
    return lines + ["-------------------- end of arguments ---------------------"]


def _nccl_init(plan: JobPlan, rank: int) -> list[str]:
    node, local = divmod(rank, plan.gpus_per_node)
    p = pid(plan, rank)
    who = f"{plan.hosts[node]}:{p}:{p} [{local}] NCCL INFO "
    thr = f"{plan.hosts[node]}:{p}:{p + 164} [{local}] NCCL INFO "
    nxt = (rank + 1) % plan.world
    if (
        nxt // plan.gpus_per_node == node
    ):  # NCCL 2.19+: `Channel 15/0 : 34[2] -> 35[3] via P2P/CUMEM` (NVIDIA/nccl#1814)
        channel = f"Channel 00/0 : {rank}[{local}] -> {nxt}[{nxt % plan.gpus_per_node}] via P2P/CUMEM"
    else:  # to the next node: `Channel 01/0 : 3[1] -> 1[1] [send] via NET/IB/2/GDRDMA` (NVIDIA/nccl#1189)
        channel = (
            f"Channel 00/0 : {rank}[{local}] -> {nxt}[{nxt % plan.gpus_per_node}] [send] via NET/IB/{local}/GDRDMA"
        )
    ibs = " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(8))
    comm = f"comm 0x55d{p}0 rank {rank} nranks {plan.world} cudaDev {local} nvmlDev {local}"
    comm += f" busId {PCI[local % 8][:2]}000"
    # NCCL 2.21.5's start-up up to the version line as NVIDIA/nccl#1504 shows it (bootstrap, the three plugin
    # lines, cudaDriverVersion, the bare version line on rank 0); the IB and network lines as in NVIDIA/nccl#1066;
    # Init START/COMPLETE as in NVIDIA/nccl#1267 and NVIDIA/nccl#1814; `Connected all rings` / `trees` as in
    # NVIDIA/nccl#1814 and NVIDIA/nccl#629
    return [
        who + f"Bootstrap : Using ib0:{ip(node)}<0>",
        who + "NET/Plugin: No plugin found (libnccl-net.so)",
        who + "NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: No such file or"
        " directory : when loading libnccl-net.so",
        who + "NET/Plugin: Using internal network plugin.",
        who + "cudaDriverVersion 12040",
        *(["NCCL version 2.21.5+cuda12.4"] if rank == 0 else []),
        thr + f"NET/IB : Using {ibs} [RO]; OOB ib0:{ip(node)}<0>",
        thr + "Using network IB",
        thr + f"{comm} commId 0x7e1c94f2a - Init START",
        thr + channel,
        thr + "Connected all rings",
        thr + "Connected all trees",
        thr + f"{comm} commId 0x7e1c94f2a - Init COMPLETE",
    ]


def _rank0_setup(plan: JobPlan, t: float) -> list[str]:
    """Rank 0's setup lines, each as Megatron-LM printed it in hwang2006/large-scale-lm-tutorials
    docs/06_tensor_parallelism.md (`using world size: 4, data-parallel size: 1, context-parallel size: 1
    tensor-model-parallel size: 4, pipeline-model-parallel size: 1`, no comma before `tensor`, the datetime lines,
    the dataset sizes, `done with setup ...`) and NVIDIA/Megatron-LM#51 (tokenizer, torch distributed, seeds);
    the `> initialized ... model parallel`, dataset index builder and `building GPT model ...` lines as in the same
    tutorial log."""
    return [
        f"using world size: {plan.world}, data-parallel size: {plan.world // 32 or 1}, context-parallel size: 1"
        " tensor-model-parallel size: 8, pipeline-model-parallel size: 4",
        *_args_dump(plan),
        "> building GPT2BPETokenizer tokenizer ...",
        "> initializing torch distributed ...",
        "> initialized tensor model parallel with size 8",
        "> initialized pipeline model parallel with size 4",
        "> setting random seeds to 1234 ...",
        "> compiling dataset index builder ...",
        ">>> done with dataset index builder. Compilation time: 0.052 seconds",
        f"[after megatron is initialized] datetime: {date(t + 25)} ",
        "building GPT model ...",
        " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 5539639296",
        "> learning rate decay style: cosine",
        f"[after model, optimizer, and learning rate scheduler are built] datetime: {date(t + 61)} ",
        "> building train, validation, and test datasets ...",
        " > datasets target sizes (minimum size):",
        f"    train:      {plan.train_iters * 1024}",
        "> finished creating GPT datasets ...",
        f"[after dataloaders are built] datetime: {date(t + 97)} ",
        "done with setup ...",
        "training ...",
    ]


def head_events(plan: JobPlan) -> list[Event]:
    """Launch: the batch script, torchrun's banner, NCCL init on every rank, Megatron's setup on rank 0."""
    t0, gpn = plan.start, plan.gpus_per_node
    rng = random.Random(f"{plan.seed}:head")
    # the job output opens with pyxis starting the container (NVIDIA/pyxis#28: `pyxis: importing docker image ...`,
    # `pyxis: creating container filesystem ...`, `pyxis: starting container ...`)
    ev = [
        Event(
            t0,
            "sched",
            0,
            [
                "pyxis: importing docker image ...",
                "pyxis: creating container filesystem ...",
                "pyxis: starting container ...",
            ],
        )
    ]
    for n in range(len(plan.hosts)):
        t = t0 + 1 + n * 0.013
        # torchrun's OMP_NUM_THREADS banner in glog form (hwang2006/large-scale-lm-tutorials
        # docs/06_tensor_parallelism.md: `W0914 19:37:31.953000 47780312846272 torch/distributed/run.py:757] ****...`)
        run = f"W{glog(t)} {agent_pid(plan, n)} torch/distributed/run.py:793] "
        ev.append(
            Event(
                t,
                "agent",
                n,
                [
                    run,
                    run + "*" * 41,
                    run + "Setting OMP_NUM_THREADS environment variable"
                    " for each process to be 1 in default, to avoid your system being"
                    " overloaded, please further tune the variable for optimal performance in"
                    " your application as needed. ",
                    run + "*" * 41,
                ],
            )
        )
        # slurmd's step launch: the format string of Slurm's src/slurmd/slurmd/req.c (`launch task %ps request from
        # UID:%u GID:%u HOST:%pA PORT:%hu`); no pasted copy of this line was found in a public thread
        ev.append(
            Event(
                t0 - 2,
                "kernel",
                n,
                [
                    syslog_prefix(plan, n, t0 - 2, "slurmd[1834]") + "launch task"
                    f" StepId={plan.jobid}.0 request from UID:1000 GID:1000 HOST:"
                    f"{ip(0)} PORT:{51000 + n}"
                ],
            )
        )
        for local in range(gpn):
            r = n * gpn + local
            if (
                rng.random() < 0.15
            ):  # c10d's retry while the store comes up (pytorch/PiPPy#158, hpcaitech/Open-Sora#667)
                ev.append(
                    Event(
                        t0 + 6,
                        "rank",
                        r,
                        [
                            f"[W socket.cpp:697] [c10d] The client socket has failed to"
                            f" connect to [{plan.hosts[0]}]:29500 (errno: 99 - Cannot"
                            " assign requested address)."
                        ],
                    )
                )
            ev.append(Event(t0 + 40 + r * 0.002, "rank", r, _nccl_init(plan, r)))
            if is_logger(plan, r):
                ev.append(
                    Event(
                        t0 + 170,
                        "rank",
                        r,
                        [f"[before the start of training step] datetime: {date(plan.train_start)} "],
                    )
                )
    ev.append(Event(t0 + 20, "rank", 0, _rank0_setup(plan, t0)))
    return ev


def _agent_failed(plan: JobPlan, n: int, t: float, local: int, code: int) -> list[str]:
    """torchrun's teardown after a worker died: `Sending process 11158 closing signal SIGTERM`, `failed (exitcode:
    1) local_rank: 1 (pid: 11159) of binary: ...`, the ChildFailedError trace and the FAILED table
    (hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md); `  <NO_OTHER_FAILURES>` as in
    wuyike2000/MLDT#3. The `Signal 6 (SIGABRT) received by PID 123` traceback field of a signalled worker is the
    format string of torch/distributed/elastic/multiprocessing/errors/__init__.py (ProcessFailure); the pasted copy
    found (ZhehengJiangLancaster/AMVUR#2, `signal 9 (SIGKILL) received by PID 36071`) had lost its layout."""
    gpn, apid = plan.gpus_per_node, agent_pid(plan, n)
    r = n * gpn + local
    lines = [
        f"W{glog(t)} {apid} torch/distributed/elastic/multiprocessing/api.py:897] Sending process"
        f" {pid(plan, n * gpn + i)} closing signal SIGTERM"
        for i in range(gpn)
        if i != local
    ]
    lines += [
        f"E{glog(t + 1.2)} {apid} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {code})"
        f" local_rank: {local} (pid: {pid(plan, r)}) of binary: /usr/bin/python3",
        *_launcher_trace(
            [f'  File "{_ELASTIC}/launcher/api.py", line 269, in launch_agent', "    raise ChildFailedError("]
        ),
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60,
        "pretrain_gpt.py FAILED",
        "-" * 60,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "-" * 60,
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : " + date(t + 1.2).replace(" ", "_"),
        f"  host      : {plan.hosts[n]}",
        f"  rank      : {r} (local_rank: {local})",
        f"  exitcode  : {code} (pid: {pid(plan, r)})",
        "  error_file: <N/A>",
        "  traceback : "
        + (
            f"Signal {-code} ({_SIGNALS.get(-code, 'SIG?')}) received by PID {pid(plan, r)}"
            if code < 0
            else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        ),
        "=" * 60,
    ]
    return lines


def _launcher_trace(last: list[str]) -> list[str]:
    """torchrun's own traceback down to launch_agent, frame by frame as pytorch/pytorch#150916 shows it for a
    pip-installed torchrun (`sys.exit(main())`, the errors wrapper, main, run, `elastic_launch(`, __call__),
    without the `^^^` markers Python 3.11+ adds (this image is Python 3.10, as in pytorch/pytorch#114097)."""
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{_ELASTIC}/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        f'  File "{_ELASTIC}/run.py", line 919, in main',
        "    run(args)",
        f'  File "{_ELASTIC}/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{_ELASTIC}/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        *last,
    ]


def _agent_killed(plan: JobPlan, n: int, t: float) -> list[str]:
    """An agent killed by Slurm: `Received Signals.SIGTERM death signal, shutting down workers` and the SIGTERMs
    to its workers (torch 2.4, pytorch/pytorch#114097), the signal-handler frames under agent.run() (torch's
    elastic agent; the thread pytorch/pytorch#150916 shows the same path) and the final SignalException
    (`... SignalException: Process 2920830 got signal: 1`, GanjinZero/RRHF#35)."""
    apid = agent_pid(plan, n)
    gpn = plan.gpus_per_node
    return [
        f"W{glog(t)} {apid} torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death"
        " signal, shutting down workers",
        *[
            f"W{glog(t)} {apid} torch/distributed/elastic/multiprocessing/api.py:897] Sending process"
            f" {pid(plan, n * gpn + i)} closing signal SIGTERM"
            for i in range(gpn)
        ],
        *_launcher_trace(
            [
                f'  File "{_ELASTIC}/launcher/api.py", line 260, in launch_agent',
                "    result = agent.run()",
                f'  File "{_ELASTIC}/elastic/metrics/api.py", line 137, in wrapper',
                "    result = f(*args, **kwargs)",
                f'  File "{_ELASTIC}/elastic/agent/server/api.py", line 711, in run',
                "    result = self._invoke_run(role)",
                f'  File "{_ELASTIC}/elastic/agent/server/api.py", line 870, in _invoke_run',
                "    time.sleep(monitor_interval)",
                f'  File "{_ELASTIC}/elastic/multiprocessing/api.py", line 84, in _terminate_process_handler',
                '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
            ]
        ),
        f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {apid} got signal: 15",
    ]


def _healthy_end(plan: JobPlan, t: float) -> list[Event]:
    """A run that finishes: Megatron's `[after training is done]`, the final save (no timer) and the final
    evaluation `on validation set` (hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md), then each
    agent's SUCCEEDED lines. Those three are torch 2.x's format strings in torch/distributed/elastic/agent/server/
    api.py, in the glog form the rest of the agent prints: the one pasted copy found (ultralytics/yolov5#5160) is
    torch 1.9 in Python-logging form, `Local worker group finished (SUCCEEDED). Waiting 300 seconds for other
    agents to finish` and `Done waiting for other agents. Elapsed: 0.0004150867462158203 seconds`."""
    k = plan.n_iters
    ev = []
    for n in range(len(plan.hosts)):
        r = n * plan.gpus_per_node + plan.gpus_per_node - 1
        ev.append(
            Event(
                t + n * 0.01,
                "rank",
                r,
                [
                    f"[after training is done] datetime: {date(t)} ",
                    *checkpoint_lines(k, None),
                    *validation_lines(k, 2.04, final=True),
                ],
            )
        )
        a = f"I{glog(t + 60)} {agent_pid(plan, n)} torch/distributed/elastic/agent/server/api.py:"
        ev.append(
            Event(
                t + 60,
                "agent",
                n,
                [
                    a + "879] [default] worker group successfully finished. Waiting 300"
                    " seconds for other agents to finish.",
                    a + "932] Local worker group finished (WorkerState.SUCCEEDED)."
                    " Waiting 300 seconds for other agents to finish",
                    a + "946] Done waiting for other agents. Elapsed: 0.41 seconds",
                ],
            )
        )
    return ev


def _render(plan: JobPlan, lines: list[str], t: float, rank: int | None = None, node: int | None = None) -> list[str]:
    c = ctx(plan, t, rank=rank, node=node)
    return [line.format_map(c) for line in lines]


def tail_events(plan: JobPlan) -> list[Event]:
    """The fault at its time, the symptoms later on the other nodes, then each launcher's teardown."""
    s = plan.scenario
    tf = plan.iter_time(plan.n_iters) + 0.37 * plan.iter_s
    if s.failure_class is None:
        return _healthy_end(plan, tf)
    fault = plan.fault_node if s.scope == "node" else None
    ev = _fault(plan, tf, fault) + _symptoms(plan, tf + s.symptom_delay_s, fault)
    ev += _teardown(plan, tf, fault)
    if s.scheduler_lines:
        t = tf + s.scheduler_delay_s if s.scheduler_delay_s is not None else tf + s.symptom_delay_s + 8
        ev.append(Event(t, "sched", 0, _render(plan, s.scheduler_lines, t, node=fault or 0)))
    ev.append(Event(tf + s.symptom_delay_s + 9, "sched", 0, _srun_exits(plan, fault if s.node_dies else None)))
    return ev


def _root_rank(plan: JobPlan, n: int, fault: int | None) -> int:
    """The rank that shows the fault on node n: the drawn GPU, or the logging rank for job-wide faults."""
    gpn = plan.gpus_per_node
    return n * gpn + (plan.fault_local if fault is not None else gpn - 1)


def _fault(plan: JobPlan, tf: float, fault: int | None) -> list[Event]:
    s, ev = plan.scenario, []
    for n in [fault] if fault is not None else range(len(plan.hosts)):
        r = _root_rank(plan, n, fault)
        if s.kernel_lines:
            pre = syslog_prefix(plan, n, tf - 0.4)
            ev.append(Event(tf - 0.4, "kernel", n, [pre + ln for ln in _render(plan, s.kernel_lines, tf - 0.4, r)]))
        if s.root_lines:
            ev.append(Event(tf + n * 0.003, "rank", r, _render(plan, s.root_lines, tf, r), raw=s.verbatim))
        if s.agent_lines:
            ev.append(Event(tf + 1, "agent", n, _render(plan, s.agent_lines, tf + 1, r)))
    return ev


def _symptoms(plan: JobPlan, t_sym: float, fault: int | None) -> list[Event]:
    s, gpn = plan.scenario, plan.gpus_per_node
    ev: list[Event] = []
    if not s.symptom_lines:
        return ev
    for n in range(len(plan.hosts)):
        if n == fault:
            continue
        for r in range(n * gpn, (n + 1) * gpn):
            t = t_sym + ((r * 37) % 90) / 1000
            ev.append(Event(t, "rank", r, _render(plan, s.symptom_lines, t, r)))
    return ev


def _teardown(plan: JobPlan, tf: float, fault: int | None) -> list[Event]:
    """Each node's torchrun agent: the faulty one reports its rank's exit, the rest abort or are killed."""
    s, ev = plan.scenario, []
    t_sym = tf + s.symptom_delay_s
    loud = bool(s.root_lines or s.kernel_lines or s.agent_lines)
    for n in range(len(plan.hosts)):
        if n == fault and s.node_dies:
            continue
        if fault is None or n == fault:
            t = tf + 2 if loud else t_sym + 3
            local = _root_rank(plan, n, fault) % plan.gpus_per_node
            ev.append(Event(t, "agent", n, _agent_failed(plan, n, t, local, s.exitcode)))
        elif s.node_dies:
            ev.append(Event(t_sym + 1, "agent", n, _agent_killed(plan, n, t_sym + 1)))
        else:
            ev.append(Event(t_sym + 3, "agent", n, _agent_failed(plan, n, t_sym + 3, 0, -6)))
    return ev


def _srun_exits(plan: JobPlan, dead: int | None) -> list[str]:
    """srun's per-node exit lines (`srun: error: taurusi2031: tasks 10-11: Exited with exit code 1`,
    ComputationalRadiationPhysics/picongpu#198; `task 1:` for a single task)."""
    gpn, out = plan.gpus_per_node, []
    for n, host in enumerate(plan.hosts):
        if n == dead:
            continue
        task = str(n) if plan.torchrun_prefix else f"{n * gpn}-{n * gpn + gpn - 1}"
        out.append(f"srun: error: {host}: task{'' if plan.torchrun_prefix else 's'} {task}: Exited with exit code 1")
    return out


def events_text(plan: JobPlan, fp: FilePlan, events: list[Event]) -> str:
    """The events that belong to file fp, in time order, each line with its stream's prefix."""
    mine = []
    for e in events:
        if e.kind == "rank" and e.who in fp.ranks:
            pre = "" if e.raw else rank_prefix(plan, e.who)
        elif e.kind == "agent" and e.who in fp.agents:
            pre = agent_prefix(plan, e.who)
        elif (e.kind == "sched" and fp.sched) or (
            e.kind == "kernel" and (e.who in fp.kernels or (e.who in fp.dmesg and e.t > plan.train_start))
        ):
            pre = ""
        else:
            continue
        mine.append((e.t, emit(pre, e.lines)))
    mine.sort(key=lambda item: item[0])
    return "".join(text for _, text in mine)
