"""Tests for knowledge/embeddings.py: the hashing embedder, the optional backends and the spec parser."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from crashcart.knowledge.embeddings import (
    Embedder,
    HashingEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    tokens,
)

NCCL = "NCCL WARN NET/IB : Got completion from peer <IP> with status=<NUM> opcode=<NUM> vendor err <NUM> (Recv)"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            NCCL,
            [
                "nccl",
                "warn",
                "net",
                "ib",
                "got",
                "completion",
                "from",
                "peer",
                "with",
                "status",
                "opcode",
                "vendor",
                "err",
                "recv",
            ],
        ),
        ("rule:gpu.xid_79 rule:coll.watchdog_timeout", ["rule:gpu.xid_79", "rule:coll.watchdog_timeout"]),
        (
            "CUDA out of memory. Tried to allocate <NUM> (GPU <NUM>)",
            ["cuda", "out", "of", "memory", "tried", "to", "allocate", "gpu"],
        ),
        ("<NUM> <HEX> <PATH> <HOST>", []),
        ("slurm_job_id=<NUM> node_list", ["slurm", "job", "id", "node", "list"]),
    ],
)
def test_tokens_drop_placeholders_and_keep_rule_ids_whole(line: str, expected: list[str]) -> None:
    assert tokens(line) == expected


def test_rows_are_unit_float32_and_empty_texts_give_zero_rows() -> None:
    vectors = HashingEmbedder().embed([NCCL, "", "<NUM> <HEX>\n\n", "rule:gpu.xid_79\nXid <NUM>"])
    assert vectors.dtype == np.float32 and vectors.shape == (4, 512)
    norms = np.linalg.norm(vectors, axis=1)
    assert norms == pytest.approx([1.0, 0.0, 0.0, 1.0], abs=1e-6)
    assert HashingEmbedder().embed([]).shape == (0, 512)


def test_embedder_satisfies_the_protocol() -> None:
    assert isinstance(HashingEmbedder(), Embedder)


def test_sublinear_tf_weights_a_repeated_word_1_plus_log_count() -> None:
    # 2^20 buckets: no collision between the two words, so the weights show through the normalisation.
    row = HashingEmbedder(dim=1 << 20, ngrams=(1, 1)).embed(["alpha alpha alpha beta"])[0]
    weights = sorted(abs(row[row != 0]))
    assert len(weights) == 2
    assert weights[1] / weights[0] == pytest.approx(1 + math.log(3), rel=1e-5)


def test_bigrams_see_word_order_and_unigrams_do_not() -> None:
    texts = ["watchdog caught collective timeout", "collective timeout caught watchdog"]
    uni = HashingEmbedder(ngrams=(1, 1)).embed(texts)
    bi = HashingEmbedder(ngrams=(1, 2)).embed(texts)
    assert float(uni[0] @ uni[1]) == pytest.approx(1.0, abs=1e-6)
    assert float(bi[0] @ bi[1]) < 0.8


def test_bigrams_stay_within_a_line() -> None:
    one_line = HashingEmbedder(dim=1 << 20, ngrams=(1, 2)).embed(["alpha beta"])[0]
    two_lines = HashingEmbedder(dim=1 << 20, ngrams=(1, 2)).embed(["alpha\nbeta"])[0]
    assert np.count_nonzero(one_line) == 3 and np.count_nonzero(two_lines) == 2


def test_similar_fingerprints_are_close_and_unrelated_ones_far() -> None:
    base = ["rule:net.ib_completion", NCCL, "NCCL INFO transport/net.cc:<NUM> -> <NUM>", "proxy.cc:<NUM> -> <NUM>"]
    near = [*base, "NCCL INFO comm <HEX> rank <NUM> nranks <NUM> - Abort COMPLETE"]
    far = ["rule:memory.cuda_oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <NUM>"]
    a, b, c = HashingEmbedder().embed(["\n".join(t) for t in (base, near, far)])
    assert float(a @ b) > 0.85
    assert abs(float(a @ c)) < 0.3


def test_vectors_are_identical_across_processes_with_different_hash_seeds() -> None:
    script = (
        "import sys; from crashcart.knowledge.embeddings import HashingEmbedder; "
        "sys.stdout.write(HashingEmbedder().embed([sys.argv[1]]).tobytes().hex())"
    )
    outs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script, NCCL], capture_output=True, text=True, env=env, timeout=60, check=True
        )
        outs.add(run.stdout)
    assert outs == {HashingEmbedder().embed([NCCL]).tobytes().hex()}


def test_cached_and_uncached_lines_embed_the_same() -> None:
    texts = [f"{NCCL}\nline {i} of job\n{NCCL}" for i in range(50)]
    warm = HashingEmbedder()
    warm.embed(texts)
    assert np.array_equal(warm.embed(texts), HashingEmbedder().embed(texts))
    assert np.array_equal(warm.embed(texts[:1]), warm.embed(texts)[:1])


def test_batches_larger_than_a_chunk_embed_like_single_texts() -> None:
    e = HashingEmbedder()
    texts = [f"rule:r{i % 7}\nerror {i % 13} on device\n{NCCL}" for i in range(HashingEmbedder.CHUNK + 10)]
    batch = e.embed(texts)
    assert np.allclose(batch[-3:], np.vstack([e.embed([t]) for t in texts[-3:]]))


def test_throughput_is_well_above_what_triage_needs() -> None:
    """The target is 20k texts/s of ~30 lines; this asserts a quarter of it to stay robust on slow CI."""
    pool = [f"{NCCL} family{i} {i % 7}" for i in range(300)]
    rng = np.random.default_rng(0)
    texts = ["\n".join(pool[j] for j in rng.integers(0, len(pool), 30)) for _ in range(5000)]
    started = time.perf_counter()
    HashingEmbedder().embed(texts)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("spec", "name", "dim"),
    [
        ("hashing", "hashing:512:1-1", 512),
        ("hashing:256", "hashing:256:1-1", 256),
        ("hashing:1024:1-1", "hashing:1024:1-1", 1024),
        ("hashing:64:1-2", "hashing:64:1-2", 64),
    ],
)
def test_get_embedder_parses_hashing_specs_and_names_round_trip(spec: str, name: str, dim: int) -> None:
    e = get_embedder(spec)
    assert (e.name, e.dim) == (name, dim)
    assert get_embedder(e.name).name == e.name


@pytest.mark.parametrize("spec", ["tfidf", "hashing:big", "hashing:0", "hashing:256:2-1", "st:", "openai:", ""])
def test_get_embedder_rejects_unknown_specs_naming_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError, match=r"'hashing:DIM'.*'st:MODEL'.*'openai:MODEL\[@BASE_URL\]'"):
        get_embedder(spec)


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="sentence-transformers is installed"
)
def test_sentence_transformer_without_the_package_names_the_install() -> None:
    with pytest.raises(RuntimeError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    with pytest.raises(RuntimeError, match="pip install sentence-transformers"):
        get_embedder("st:all-MiniLM-L6-v2")


# -- OpenAIEmbedder against a local OpenAI-compatible server ----------------------------------------------------

requires_openai = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="openai not installed")


class _Embeddings(BaseHTTPRequestHandler):
    """Answers /v1/embeddings with a scripted vector per input ([len(text), 1, 0]), in reverse index order."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(inputs)
        ]
        payload = json.dumps(
            {
                "object": "list",
                "data": data[::-1],
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _Embeddings.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@requires_openai
def test_openai_embedder_orders_normalises_and_zeroes_empty_texts(embeddings_server: str) -> None:
    e = get_embedder(f"openai:test-embed@{embeddings_server}")
    assert isinstance(e, OpenAIEmbedder) and e.name == f"openai:test-embed@{embeddings_server}"
    rows = e.embed(["abc", "", "a"])
    expected = np.array([[3, 1, 0], [0, 0, 0], [1, 1, 0]], dtype=np.float32)
    expected[[0, 2]] /= np.linalg.norm(expected[[0, 2]], axis=1, keepdims=True)
    assert np.allclose(rows, expected, atol=1e-6) and rows.dtype == np.float32
    assert e.dim == 3
    sent = _Embeddings.requests[-1]
    assert (sent["path"], sent["model"], sent["input"], sent["encoding_format"]) == (
        "/v1/embeddings",
        "test-embed",
        ["abc", "a"],
        "float",
    )


@requires_openai
def test_openai_embedder_batches_large_inputs_and_probes_dim(embeddings_server: str) -> None:
    e = OpenAIEmbedder("test-embed", base_url=embeddings_server)
    assert e.dim == 3  # a probe request
    rows = e.embed([f"t{'x' * (i % 5)}" for i in range(OpenAIEmbedder.BATCH + 5)])
    assert rows.shape == (OpenAIEmbedder.BATCH + 5, 3)
    assert [len(r["input"]) for r in _Embeddings.requests[1:]] == [OpenAIEmbedder.BATCH, 5]


@requires_openai
def test_openai_embedder_without_a_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRASHCART_TEST_KEY", raising=False)
    with pytest.raises(RuntimeError, match="set CRASHCART_TEST_KEY"):
        OpenAIEmbedder("text-embedding-3-small", api_key_env="CRASHCART_TEST_KEY")
