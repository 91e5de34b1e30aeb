"""Redaction before log text leaves the machine: every secret kind is caught in realistic lines, benign training logs
stay byte-identical, host/IP pseudonyms are consistent and restorable, secrets are not, and hostile input stays fast.

Fake tokens are assembled from pieces so that secret scanners (push protection) do not flag this file itself.
"""

from __future__ import annotations

import random
import re
import signal
import string
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fakes.secrets import LINES, SECRETS, leaks

from crashcart.agent.redact import Redactor
from crashcart.knowledge.healthy import healthy_corpus

ALNUM = string.ascii_letters + string.digits


def _rand(n: int, alphabet: str = ALNUM, seed: int = 0) -> str:
    rng = random.Random(seed)
    while True:  # a mixed-case, digit-bearing body, like real tokens
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if alphabet != ALNUM or (
            any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)
        ):
            return s
        seed += 1
        rng = random.Random(seed)


AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GCP_KEY = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
OPENAI = "sk-" + "proj-" + _rand(48, ALNUM + "_-", seed=1)
OPENAI_LEGACY = "sk-" + _rand(48, seed=2)
ANTHROPIC = "sk-" + "ant-api03-" + _rand(93, ALNUM + "_-", seed=3) + "AA"
HF = "hf" + "_" + _rand(34, string.ascii_letters, seed=4)
SLACK_BOT = "xo" + "xb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = "xo" + "xp-123456789012-123456789012-123456789012-" + _rand(32, "0123456789abcdef", seed=5)
SLACK_APP = "xa" + "pp-1-A0123456789-1234567890123-" + _rand(64, "0123456789abcdef", seed=6)
SLACK_HOOK = "https://hooks.slack" + ".com/services/T0ABCDEF1/B0ABCDEF2/" + _rand(24, seed=7)
GH_PAT = "gh" + "p_" + _rand(36, seed=8)
GH_APP = "gh" + "s_" + _rand(36, seed=9)
GH_FINE = "github" + "_pat_" + "11ABCDEFG0" + _rand(12, seed=10) + "_" + _rand(59, seed=11)
GITLAB = "gl" + "pat-" + _rand(20, ALNUM + "_-", seed=12)
STRIPE = "sk" + "_live_" + _rand(24, seed=13)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + "."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    + "."
    + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
WANDB = _rand(40, "0123456789abcdef", seed=14)
PASSWORD = "S3cr3t!Pa55"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
SSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDZ3p1Q"
SSH = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + SSH_BODY + "\n-----END OPENSSH " + "PRIVATE KEY-----"
SA_KEY_ID = _rand(40, "0123456789abcdef", seed=15)
SA_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + _rand(40, seed=16)

# (kind, the secret, a realistic line around it)
CORPUS: list[tuple[str, str, str]] = [
    ("aws_access_key", AWS_ID, f"+ export AWS_ACCESS_KEY_ID={AWS_ID}"),
    ("aws_access_key", AWS_ID, f"botocore.credentials: Found credentials in environment variables. key={AWS_ID}"),
    ("aws_secret_key", AWS_SECRET, f"aws_secret_access_key = {AWS_SECRET}"),
    ("aws_secret_key", AWS_SECRET, f'declare -x AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"'),
    ("aws_secret_key", AWS_SECRET, f'{{"Credentials": {{"AccessKeyId": "{AWS_ID}", "SecretAccessKey": "{AWS_SECRET}"'),
    ("gcp_api_key", GCP_KEY, f"GOOGLE_API_KEY={GCP_KEY} python eval.py"),
    ("openai_key", OPENAI, f"OPENAI_API_KEY={OPENAI}"),
    ("openai_key", OPENAI, f"curl https://api.openai.com/v1/models -H 'Authorization: Bearer {OPENAI}'"),
    ("openai_key", OPENAI_LEGACY, f"openai.api_key = '{OPENAI_LEGACY}'"),
    ("anthropic_key", ANTHROPIC, f"[rank0]: ANTHROPIC_API_KEY={ANTHROPIC} judge=claude"),
    ("hf_token", HF, f"+ huggingface-cli login --token {HF}"),
    ("hf_token", HF, f"HUGGING_FACE_HUB_TOKEN={HF}"),
    ("slack_token", SLACK_BOT, f"notify.py: posting with token {SLACK_BOT}"),
    ("slack_token", SLACK_USER, f"SLACK_USER_TOKEN={SLACK_USER}"),
    ("slack_token", SLACK_APP, f"socket mode app token: {SLACK_APP}"),
    ("slack_webhook", SLACK_HOOK, f"curl -X POST -d @msg.json {SLACK_HOOK}"),
    ("github_token", GH_PAT, f"git clone https://{GH_PAT}@github.com/org/megatron-fork.git"),
    ("github_token", GH_APP, f"GITHUB_TOKEN={GH_APP}"),
    ("github_token", GH_FINE, f"pip install git+https://x-access-token:{GH_FINE}@github.com/org/lib.git"),
    ("gitlab_token", GITLAB, f"git clone https://oauth2:{GITLAB}@gitlab.example.com/ml/train.git"),
    ("gitlab_token", GITLAB, f'curl --header "PRIVATE-TOKEN: {GITLAB}" https://gitlab.example.com/api/v4/projects'),
    ("stripe_key", STRIPE, f"billing hook configured with {STRIPE}"),
    ("jwt", JWT, f"requests: GET /v1/jobs Authorization=Bearer {JWT}"),
    ("wandb_api_key", WANDB, f"wandb: WANDB_API_KEY={WANDB}"),
    ("wandb_api_key", WANDB, f"+ wandb login --relogin {WANDB}"),
    ("password", PASSWORD, f"mlflow: tracking uri ok, password={PASSWORD} user=trainer"),
    ("password", PASSWORD, f"db:\n  user: trainer\n  passwd: {PASSWORD}\n"),
    ("password", PASSWORD, f"{{'host': 'db', 'password': '{PASSWORD}'}}"),
    ("password", PASSWORD, f"python launch.py --password {PASSWORD} --nodes 4"),
    ("password", "$ecret(1)", "db.connect(host='db', password=$ecret(1))"),
    ("password", PASSWORD, f"curl -u admin:{PASSWORD} https://registry.example.com/v2/_catalog"),
    ("password", WANDB, f"machine api.wandb.ai\n  login user\n  password {WANDB}\n"),
    ("url_password", PASSWORD, f"sqlalchemy: connecting to postgresql://trainer:{PASSWORD}@db.internal:5432/runs"),
    ("secret", "k8s-" + _rand(20, seed=17), "CLIENT_SECRET=k8s-" + _rand(20, seed=17)),
    (
        "token",
        "tok" + _rand(20, seed=18),
        "https://storage.example.com/ckpt.tar?token=tok" + _rand(20, seed=18) + "&x=1",
    ),
    ("token", _rand(30, seed=19), "MY_SERVICE_TOKEN=" + _rand(30, seed=19)),
    ("api_key", _rand(30, seed=20), "DATADOG_API_KEY=" + _rand(30, seed=20)),
    ("auth_header", "dXNlcjpwYXNzd29yZA==", "> Authorization: Basic dXNlcjpwYXNzd29yZA=="),
    ("private_key", PEM_BODY.split("\n")[0], f"cat ~/.ssl/key.pem\n{PEM}\ndone"),
    ("ssh_private_key", SSH_BODY.split("\n")[1], f"id_ed25519:\n{SSH}\n"),
    (
        "gcp_private_key_id",
        SA_KEY_ID,
        f'{{"type": "service_account", "project_id": "p", "private_key_id": "{SA_KEY_ID}",',
    ),
    (
        "private_key",
        SA_BODY,
        '"private_key": "-----BEGIN '
        + "PRIVATE KEY-----\\n"
        + SA_BODY
        + "\\n-----END "
        + 'PRIVATE KEY-----\\n", "client_email": "sa@proj.iam.gserviceaccount.com"',
    ),
    ("email", "alice.smith@example.com", "Job 4812 submitted by alice.smith@example.com on partition gpu"),
]

BENIGN = """\
 iteration     1200/  500000 | consumed samples:      2457600 | elapsed time per iteration (ms): 8123.4 | \
learning rate: 2.999E-04 | global batch size:  2048 | lm loss: 2.153921E+00 | loss scale: 1.0 | grad norm: 0.412 | \
number of skipped iterations:   0 | number of nan iterations:   0 |
node17:28411:28590 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.12.3.17<0>
node17:28411:28590 [3] NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/1/GDRDMA
dgx-042:9912:10040 [0] NCCL WARN NET/IB : Got completion from peer 10.12.3.18<41233> with error 12, opcode 0
RuntimeError: CUDA error: an illegal memory access was encountered (0x7f3a2c01b200)
[rank5]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a total capacity \
of 79.10 GiB of which 1.25 GiB is free.
PyTorch version: 2.3.0+cu121 git abc123def4567890 / NCCL version 2.18.5+cuda12.2 / cuDNN version 8.9.2.26
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5c1f2a3b-4d5e-6f70-8192-a3b4c5d6e7f8)
MIG-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9 ready
saved checkpoint sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 to /ckpt/iter_0001200
commit 3f9a1c2b7e4d5f6a8b9c0d1e2f3a4b5c6d7e8f90 (HEAD -> main, origin/main)
  tokenizer_type .................................. GPT2BPETokenizer
  num_tokens ...................................... 4096
  vocab_file ...................................... /data/gpt2-vocab.json
tokenizer: pad_token: <pad> eos_token: </s> bos_token=<s> max_tokens: 2048 token_count=3
Missing key(s) in state_dict: "model.layers.10.self_attn.q_proj.weight".
KeyError: 'model.layers.10.self_attn.q_proj.weight'
forward pass: 12ms, backward pass: 30ms, sort_key=length
c10::cuda::CUDAError terminate called after throwing std::runtime_error in at::native::copy_
dtype float16 arch sm_80 toolkit cuda12 Rank 3 script train.py device cuda:0 GPU0 gpu_0
python -u -m torch.distributed.run --nnodes=2 --node_rank=0 --master_port=29500 train.py --bf16
git clone git@github.com:NVIDIA/Megatron-LM.git && pip install sk-learn-extra transformers==4.41.2
sk-some-hyphenated-package-name-that-is-long, hf_transformer_layer_spec, xoxo-party, eyJunk
Password:\x20
password authentication failed for user "trainer"
token=None password=**** api_key=${WANDB_API_KEY} secret: <redacted>
HF_TOKEN_PATH=/root/.cache/huggingface/token TOKENIZERS_PARALLELISM=false SSH_KEY=/home/u/.ssh/id_ed25519
GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa.json NCCL_IB_HCA=mlx5_0,mlx5_1 CUDA_VISIBLE_DEVICES=0,1,2,3
{"step": 3, "token": 1012, "logprob": -0.1, "key": "input_ids"} --tokenizer-model /data/tok.model --seed 1234
"""


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail (not hang) when a regex goes quadratic: sre checks for signals while it matches."""

    def _boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"redaction took longer than {seconds}s")

    old = signal.signal(signal.SIGALRM, _boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize(("kind", "secret", "line"), CORPUS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CORPUS)])
def test_every_secret_kind_is_redacted_in_context(kind: str, secret: str, line: str) -> None:
    r = Redactor()
    out = r.redact(line)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out
    assert r.count.get(kind, 0) >= 1


def test_no_secret_substring_survives_the_whole_corpus_at_once() -> None:
    text = "\n".join(line for _, _, line in CORPUS)
    out = Redactor(hosts=True, ips=True).redact(text)
    for _, secret, _ in CORPUS:
        assert secret not in out
        for chunk in (secret[i : i + 12] for i in range(0, max(1, len(secret) - 12), 6)):  # nor a piece of one
            assert len(chunk) < 12 or chunk not in out, chunk


@pytest.mark.parametrize("seed", range(20))
def test_random_tokens_of_each_shape(seed: int) -> None:
    tokens = [
        "gh" + "o_" + _rand(36, seed=seed),
        "hf" + "_" + _rand(34, string.ascii_letters, seed=seed),
        "sk-" + _rand(48, seed=seed),
        "AKIA" + _rand(16, string.ascii_uppercase + string.digits, seed=seed),
        "gl" + "pat-" + _rand(20, seed=seed),
        "AIza" + _rand(35, ALNUM + "_-", seed=seed),
    ]
    out = Redactor().redact(" | ".join(f"v{i}: {t}" for i, t in enumerate(tokens)))
    assert not any(t in out for t in tokens), out


def test_only_the_value_goes_keys_schemes_users_and_hosts_stay() -> None:
    r = Redactor()
    assert (
        r.redact(f"postgres://trainer:{PASSWORD}@db.internal:5432/x")
        == "postgres://trainer:[REDACTED:url_password]@db.internal:5432/x"
    )
    assert r.redact(f"HF_TOKEN={HF} WANDB_MODE=online") == "HF_TOKEN=[REDACTED:hf_token] WANDB_MODE=online"
    assert r.redact(f'"password": "{PASSWORD}", "user": "bob"') == '"password": "[REDACTED:password]", "user": "bob"'
    assert r.redact(f"-H 'Authorization: Bearer {_rand(40)}'") == "-H 'Authorization: Bearer [REDACTED:auth_header]'"
    assert r.redact(f"{PEM}\nnext line") == "[REDACTED:private_key]\nnext line"


def test_a_private_key_cut_off_before_its_end_line_is_still_redacted() -> None:
    out = Redactor().redact("-----BEGIN " + "PRIVATE KEY-----\n" + PEM_BODY + "\n[truncated by log rotation]")
    assert PEM_BODY.split("\n")[0] not in out and PEM_BODY.split("\n")[1] not in out
    assert out.endswith("[REDACTED:private_key][truncated by log rotation]")


@pytest.mark.parametrize("line", LINES, ids=[f"{i}-{line.family}" for i, line in enumerate(LINES)])
def test_every_secret_of_the_corpus_goes_whole_and_in_pieces_line_by_line(line) -> None:
    """Each line alone, as evidence and context lines are shown (a PEM body line without its BEGIN line too)."""
    out = Redactor().redact(line.text)
    assert leaks(out, {n: SECRETS[n] for n in line.names}) == {}, out
    assert "[REDACTED:" in out or not line.names, out


def test_the_whole_corpus_at_once_leaks_nothing_with_or_without_pseudonyms() -> None:
    text = "\n".join(line.text for line in LINES)
    for redactor in (Redactor(), Redactor(hosts=True, ips=True)):
        assert leaks(redactor.redact(text)) == {}


def test_secrets_after_escaped_newlines_go_and_the_escapes_stay() -> None:
    hf = "hf" + "_" + _rand(34, string.ascii_letters, seed=30)
    line = f'{{"msg": "env:\\nHF_TOKEN={hf}\\r\\npassword={PASSWORD}\\n"}}'
    assert (
        Redactor().redact(line) == '{"msg": "env:\\nHF_TOKEN=[REDACTED:hf_token]\\r\\npassword=[REDACTED:password]\\n"}'
    )


def test_healthy_training_logs_pass_unchanged() -> None:
    """Every line of knowledge/healthy/ (1,968 lines of Megatron, DeepSpeed, HF Trainer, torchrun, NCCL, Slurm and
    kernel logs): none is changed, so the false-positive rate on them is 0."""
    lines = healthy_corpus()
    changed = [line for line in lines if Redactor().redact(line) != line]
    assert len(lines) > 1900 and changed == []  # 1,968 since the generated job prints only real timer lines


def test_benign_training_logs_stay_byte_identical() -> None:
    r = Redactor()
    assert r.redact(BENIGN) == BENIGN
    assert r.count == {}


def test_hosts_and_ips_spare_benign_words() -> None:
    r = Redactor(hosts=True, ips=True)
    out = r.redact(BENIGN)
    for word in (
        "float16",
        "sm_80",
        "cuda12",
        "Rank 3",
        "train.py",
        "cuda:0",
        "GPU0",
        "gpu_0",
        "mlx5_0",
        "ib0",
        "GPU-5c1f2a3b-4d5e-6f70-8192-a3b4c5d6e7f8",
        "MIG-0a1b2c3d-4e5f",
        "8.9.2.26",
        "2.18.5+cuda12.2",
        "0x7f3a2c01b200",
        "github.com",
        "--node_rank=0",
    ):
        assert word in out, word
    assert "node17" not in out and "dgx-042" not in out and "10.12.3.17" not in out
    assert r.restore(out) == BENIGN


def test_pseudonyms_are_consistent_across_lines_and_calls_and_restore_inverts_them() -> None:
    r = Redactor(hosts=True, ips=True)
    a = "node17:2841:2859 [3] NCCL INFO OOB ib0:10.12.3.17<0>\nsrun: error: Node failure on gpu-a100-017\n"
    b = (
        "rank 9 on node17 lost peer 10.12.3.17:29500; gpu-a100-017 drained; node17.cluster.internal unreachable; "
        "ip-10-0-0-12 fe80::1a2b:3c4d:5e6f:7a8b node17-ib0 /logs/node17/rank3.log\n"
    )
    out_a, out_b = r.redact(a), r.redact(b)
    host = out_a.split(":", 1)[0]
    assert re.fullmatch(r"host-\d+", host)
    assert out_b.count(host) == 4 and "node17" not in out_b
    ip = r.redact("10.12.3.17")
    assert re.fullmatch(r"240\.\d+\.\d+\.\d+", ip) and out_a.count(ip) == 1 and out_b.count(ip) == 1
    assert r.mapping[host] == "node17" and r.mapping[ip] == "10.12.3.17"
    assert len({v for v in r.mapping.values()}) == len(r.mapping)  # one pseudonym per original
    assert r.restore(out_a) == a and r.restore(out_b) == b
    assert r.count["host"] >= 7 and r.count["ip"] >= 3


def test_restore_maps_the_models_answer_back_and_leaves_unknown_pseudonyms() -> None:
    r = Redactor(hosts=True)
    r.redact("node03 ok\nnode07 XID 79\n")
    answer = '{"faulty_nodes": ["host-2"], "summary": "host-2 fell off the bus, host-99 is unknown"}'
    assert r.restore(answer) == '{"faulty_nodes": ["node07"], "summary": "node07 fell off the bus, host-99 is unknown"}'


def test_secrets_and_emails_are_never_restorable() -> None:
    r = Redactor(hosts=True, ips=True)
    text = f"node17: HF_TOKEN={HF} mail alice.smith@example.com pw postgres://u:{PASSWORD}@10.0.0.5/db"
    back = r.restore(r.redact(text))
    assert HF not in back and PASSWORD not in back and "alice.smith@example.com" not in back
    assert "[REDACTED:hf_token]" in back and "[REDACTED:email]" in back and "node17" in back and "10.0.0.5" in back
    assert all("REDACTED" not in k and HF not in v for k, v in r.mapping.items())


def test_known_hosts_are_pseudonymised_on_word_boundaries_only() -> None:
    r = Redactor(known_hosts=["trainbox", "node07.cluster.internal"])  # hosts=False: only these names
    text = (
        "trainbox:1:2 [0] NCCL INFO x; node07 failed; node070 and mynode07 and node07_x are others; node08 ok; "
        "trainbox.log rank3-node07 node07.cluster.internal"
    )
    out = r.redact(text)
    assert "trainbox" not in out and re.search(r"(?<![\w-])node07(?![\w-])", out) is None
    for other in ("node070", "mynode07", "node07_x", "node08"):
        assert other in out
    assert r.restore(out) == text
    assert set(r.mapping.values()) == {"trainbox", "node07", "cluster.internal"}


def test_hosts_named_only_by_context_are_learned_and_replaced_everywhere() -> None:
    r = Redactor(hosts=True)
    out = r.redact(
        "a100box:311:311 [0] NCCL INFO Bootstrap\nMASTER_ADDR=trainer3 ...\nlater: a100box and trainer3 hang"
    )
    assert "a100box" not in out and "trainer3" not in out
    assert (
        r.redact("Host: api.openai.com host=s3.us-west-2.amazonaws.com; s3://bucket")
        == "Host: api.openai.com host=s3.us-west-2.amazonaws.com; s3://bucket"
    )
    assert r.restore(out).endswith("later: a100box and trainer3 hang")


def test_loopback_and_version_numbers_are_not_ips() -> None:
    r = Redactor(ips=True)
    text = "bind 0.0.0.0:29500 via 127.0.0.1, cuDNN version 8.9.2.26, driver 535.104.05, lib.so.1.2.3.4"
    assert r.redact(text) == text


def test_emails_are_redacted_but_git_remotes_and_url_users_are_not() -> None:
    r = Redactor()
    assert r.redact("owner bob@corp.example.com") == "owner [REDACTED:email]"
    assert (
        r.redact("git@github.com:org/repo.git https://alice@git.example.com/r")
        == "git@github.com:org/repo.git https://alice@git.example.com/r"
    )


def test_extra_patterns_redact_the_match_or_its_first_group() -> None:
    r = Redactor(extra_patterns=[r"ACME-[0-9]{6}", r"tenant=(\w+)"])
    assert r.redact("ticket ACME-123456 tenant=bluebird") == "ticket [REDACTED:custom] tenant=[REDACTED:custom]"
    assert r.count == {"custom": 2}
    with pytest.raises(re.error):
        Redactor(extra_patterns=["(unclosed"])


HOSTILE = {
    "a-run": "a" * 10_000_000,
    "upper-run": "A" * 10_000_000,
    "password=": "password=" * 1_200_000,
    "eyJ": "eyJ" * 3_400_000,
    "pem-begin-without-end": ("-----BEGIN RSA " + "PRIVATE KEY-----") * 320_000,
    "at-signs": "a@" * 5_000_000,
    "dotted": "1." * 5_000_000,
    "url-scheme": "http://" * 1_500_000,
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_10mb_single_lines_stay_linear(name: str) -> None:
    text = HOSTILE[name]
    with _deadline(20):
        start = time.process_time()  # this process's CPU time: other load on the machine does not count
        Redactor(hosts=True, ips=True).redact(text)
        elapsed = time.process_time() - start
    assert elapsed < 15, f"{name}: {elapsed:.1f}s for {len(text) / 1e6:.0f} MB"


# The passes this issue added, on hostile 10 MiB lines that match at every few characters: linear means 4x the
# text costs about 4x the time (quadratic would be 16x); the deadline makes a hang a failure, not a stuck run.
HOSTILE_NEW = {
    "env-keyword": "PGPASSWORD=",
    "escaped-keys": "\\nHF_TOKEN=",
    "base64-run": "Ab3/",
    "base64-words": "Ab3/" * 16 + " ",
    "mysql": "mysql -p",
    "sshpass": "sshpass -p ",
    "cookie": "-b a=b ",
    "docker-auth": '"auth": "',
    "sas-sig": "&sig=",
    "account-key": "AccountName=a;AccountKey=",
}


@pytest.mark.parametrize("name", list(HOSTILE_NEW))
def test_the_new_passes_stay_linear_on_hostile_10mib_lines(name: str) -> None:
    unit = HOSTILE_NEW[name]
    seconds = []
    with _deadline(120):
        for size in (2_621_440, 10_485_760):
            text = unit * (size // len(unit))
            start = time.process_time()  # this process's CPU time: other load on the machine does not count
            Redactor(hosts=True, ips=True).redact(text)
            seconds.append(time.process_time() - start)
    assert seconds[1] < 8 * max(seconds[0], 0.05), f"{name}: {seconds[0]:.2f}s for 2.5 MiB, {seconds[1]:.2f}s for 10"
