"""A private single-node Slurm cluster for tests: munged, MariaDB, slurmdbd, slurmctld and slurmd under one folder.

Why real daemons: `sacct` output (states, exit codes, TRES, the `allocation` placeholder rows) is what
`crashcart batch --slurm` must parse, and only a real slurmdbd produces it. Everything is private (key, sockets,
ports, pid files, spool, job ids) so two test runs on one machine do not meet. Facts behind the choices are in
shared/spec/slurm-notes.md. Test infrastructure only: not shipped.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

GPUS = 8  # fake GPUs on the node: /dev/null-like character devices named in gres.conf
GPU_TYPE = "h100"  # typed, so AllocTRES shows both gres/gpu=N and gres/gpu:h100=N
CPUS = 16  # more than the machine has (config_overrides): every test job fits at once
MEMORY_MB = 8000
DAEMONS = ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged")  # stop order
# Read at import: tests/conftest.py clears CRASHCART_* before any fixture starts the cluster.
NO_CGROUP = bool(os.environ.get("CRASHCART_SLURM_NO_CGROUP"))

SLURM_CONF = """\
ClusterName={cluster}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={root}/run/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType={proctrack}
TaskPlugin={task_plugin}
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStoragePass={root}/run/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:{gpu_type}
AccountingStoreFlags=job_comment,job_script
GresTypes=gpu
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
DefMemPerCPU=256
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=300
KillWait=2
InactiveLimit=0
MpiDefault=none
FirstJobId={first_job_id}
NodeName={node} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} RealMemory={memory} State=UNKNOWN \
  Gres=gpu:{gpu_type}:{gpus}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""

SLURMDBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={root}/run/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
PidFile={root}/run/slurmdbd.pid
LogFile={root}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
"""

CGROUP_CONF = """\
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
ConstrainDevices=no
"""


class ClusterError(RuntimeError):
    """The cluster did not come up; the message names the daemon and the tail of its log."""


def free_port() -> int:
    """A TCP port nobody listens on now (another run could take it later; the window is small)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cgroup_v1_memory() -> bool:
    """task/cgroup (and so OUT_OF_MEMORY) works here only on a writable cgroup v1 memory hierarchy."""
    memory = Path("/sys/fs/cgroup/memory")
    return memory.is_dir() and os.access(memory, os.W_OK)


class SlurmCluster:
    """One running cluster: `.env` for clients, `.run(...)` a client command, `.sbatch(...)` a job, `.stop()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        tag = random.randrange(10_000, 99_999)
        self.cluster = f"cc{tag}"
        self.node = self.host  # sbatch's %N is the host name: keep NodeName equal to it, as real clusters do
        self.first_job_id = random.randrange(1_000_000, 60_000_000)  # cgroup v1 paths are per job id: keep apart
        self.ports = {
            "ctld_port": free_port(),
            "slurmd_port": free_port(),
            "dbd_port": free_port(),
            "db_port": free_port(),
        }
        self.oom_enforced = cgroup_v1_memory() and not NO_CGROUP
        path = os.environ.get("PATH", "/usr/bin:/bin")
        self.env = {**os.environ, "SLURM_CONF": str(root / "etc" / "slurm.conf"), "PATH": f"{path}:/usr/sbin:/sbin"}
        self.timings: dict[str, float] = {}
        self._scripts = 0
        self._mariadb: subprocess.Popen[bytes] | None = None

    # -- start -----------------------------------------------------------------------------------------------

    def start(self) -> SlurmCluster:
        """Write the config and start every daemon in dependency order; raise ClusterError naming what failed."""
        t0 = time.perf_counter()
        self._write_config()
        steps = (
            ("munged", self._start_munge),
            ("mariadbd", self._start_mariadb),
            ("slurmdbd", self._start_dbd),
            ("slurmctld", self._start_ctld),
            ("slurmd", self._start_slurmd),
        )
        for name, step in steps:
            began = time.perf_counter()
            step()
            self.timings[name] = round(time.perf_counter() - began, 2)
        self.timings["total"] = round(time.perf_counter() - t0, 2)
        return self

    def _write_config(self) -> None:
        for sub in ("etc", "run", "log", "state", "spool", "db", "dev", "jobs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for i in range(GPUS):
            dev = self.root / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a character device like /dev/null
        values = {
            **self.ports,
            "root": self.root,
            "cluster": self.cluster,
            "host": self.host,
            "node": self.node,
            "cpus": CPUS,
            "gpu_type": GPU_TYPE,
            "memory": MEMORY_MB,
            "gpus": GPUS,
            "first_job_id": self.first_job_id,
            # cgroup v1 (writable here): memory limits and OUT_OF_MEMORY; otherwise no cgroup plugin at all
            "proctrack": "proctrack/cgroup" if self.oom_enforced else "proctrack/linuxproc",
            "task_plugin": "task/cgroup" if self.oom_enforced else "task/none",
        }
        etc = self.root / "etc"
        (etc / "slurm.conf").write_text(SLURM_CONF.format(**values))
        (etc / "cgroup.conf").write_text(CGROUP_CONF)
        (etc / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={self.node} Name=gpu Type={GPU_TYPE} File={self.root}/dev/nvidia[0-{GPUS - 1}]\n"
        )
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(SLURMDBD_CONF.format(**values))
        dbd.chmod(0o600)  # slurmdbd refuses a config others can read

    def _start_munge(self) -> None:
        key = self.root / "etc" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        run = self.root / "run"
        run.chmod(0o755)
        self._daemon(
            "munged",
            [
                "munged",
                "--force",
                f"--key-file={key}",
                f"--socket={run}/munge.socket",
                f"--pid-file={run}/munged.pid",
                f"--seed-file={run}/munged.seed",
                f"--log-file={self.root}/log/munged.log",
            ],
        )
        self._wait("munged", lambda: (run / "munge.socket").exists())

    def _start_mariadb(self) -> None:
        data = self.root / "db"
        common = ["--no-defaults", f"--datadir={data}", "--user=root"]
        if not (data / "mysql").is_dir():
            self._daemon(
                "mariadb-install-db",
                [
                    "mariadb-install-db",
                    *common,
                    "--skip-test-db",
                    "--auth-root-authentication-method=normal",
                    "--skip-name-resolve",
                    "--innodb-log-file-size=4M",
                ],
            )
        with open(self.root / "log" / "mariadbd.log", "ab") as log:  # mariadbd does not fork: keep its Popen
            self._mariadb = subprocess.Popen(
                [
                    "mariadbd",
                    *common,
                    f"--socket={self.root}/run/mysqld.sock",
                    f"--port={self.ports['db_port']}",
                    "--bind-address=127.0.0.1",
                    f"--pid-file={self.root}/run/mariadbd.pid",
                    "--skip-grant-tables",
                    "--innodb-buffer-pool-size=16M",
                    "--innodb-log-file-size=4M",
                    "--skip-log-bin",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.env,
            )
        self._wait("mariadbd", lambda: _listening(self.ports["db_port"]))

    def _start_dbd(self) -> None:
        self._daemon("slurmdbd", ["slurmdbd"])
        self._wait("slurmdbd", lambda: _listening(self.ports["dbd_port"]), timeout=30)
        self._wait(
            "slurmdbd", lambda: self.run("sacctmgr", "-i", "add", "cluster", self.cluster, check=False).returncode == 0
        )

    def _start_ctld(self) -> None:
        self._daemon("slurmctld", ["slurmctld", "-i"])
        self._wait("slurmctld", lambda: self.run("scontrol", "ping", check=False).returncode == 0)

    def _start_slurmd(self) -> None:
        self._daemon("slurmd", ["slurmd", "-N", self.node])
        self._wait("slurmd", lambda: self.node_state() in {"idle", "mixed", "allocated"})

    def _daemon(self, name: str, argv: list[str]) -> None:
        """Run a command that forks into the background (or finishes); its own output goes to log/NAME.out."""
        with open(self.root / "log" / f"{name}.out", "ab") as out:
            proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, timeout=60)
        if proc.returncode != 0:
            raise ClusterError(f"{name} exited {proc.returncode}: {self._tail(name)}")

    def _wait(self, name: str, ready, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise ClusterError(f"{name} not ready after {timeout:.0f}s: {self._tail(name)}")
            time.sleep(0.1)

    def _tail(self, name: str) -> str:
        lines: list[str] = []
        for log in sorted((self.root / "log").glob(f"{name}*")):
            lines += log.read_text(errors="replace").splitlines()[-8:]
        return " | ".join(lines) or "(no log)"

    # -- use -------------------------------------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def sbatch(self, script: str, *args: str, cwd: Path | None = None) -> str:
        """Write the script beside the job (as users do) and submit it; return the job id."""
        cwd = cwd or self.root / "jobs"
        cwd.mkdir(parents=True, exist_ok=True)
        self._scripts += 1
        path = cwd / f"job{self._scripts}.sh"
        path.write_text(script)
        proc = subprocess.run(
            ["sbatch", "--parsable", *args, path.name],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=cwd,
            timeout=30,
        )
        if proc.returncode != 0:
            raise ClusterError(f"sbatch {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout.strip().split(";")[0]

    def node_state(self) -> str:
        proc = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%T", check=False)
        return proc.stdout.strip()

    # -- stop ------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Cancel this cluster's jobs, then stop each daemon by its pid file (TERM, then KILL after 10 s)."""
        if (self.root / "run" / "slurmctld.pid").exists():
            self.run("scancel", "--full", f"--user={os.getuid()}", check=False)
        for name in DAEMONS:
            _stop_pid(self.root / "run" / f"{name}.pid")
        if self._mariadb is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._mariadb.wait(timeout=5)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop_pid(pidfile: Path, grace: float = 10.0) -> None:
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child (mariadbd): reap it
                return
        except ChildProcessError:
            pass
        if not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running and not a zombie (PID 1 here may not reap the daemons' exits)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def missing_binaries() -> list[str]:
    """The Slurm, munge and MariaDB programs this cluster needs that are not installed."""
    need = (
        "slurmctld",
        "slurmd",
        "slurmdbd",
        "sacct",
        "sacctmgr",
        "sbatch",
        "scontrol",
        "munged",
        "mariadbd",
        "mariadb-install-db",
    )
    return [b for b in need if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
