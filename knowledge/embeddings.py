"""Text embedders for the incident memory: a fast offline hashing default and two optional model backends.

Every embedder returns float32 rows, L2-normalised, so an inner product is a cosine similarity; a text with
no features gives a zero row (similar to nothing). An embedder's `name` is its identity in a store (vectors of
different names are not comparable) and is also a spec `get_embedder` accepts, so a store can reopen it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

SPEC_FORMS = "'hashing', 'hashing:DIM', 'hashing:DIM:NMIN-NMAX', 'st:MODEL' or 'openai:MODEL[@BASE_URL]'"

# Placeholders left by parsers.masking (<NUM>, <HEX>, ...) say nothing about the failure: dropped.
# Measured on the dev set (benchmarks/bench_memory.py --compare-embedders, leave-one-out): 512 dims of
# unigrams gave the best top-1/top-3 neighbour recall; bigrams added nothing but collisions.
DEFAULT_DIM = 512
DEFAULT_NGRAMS = (1, 1)
_PLACEHOLDER = re.compile(r"<[A-Z_]+>")
_TOKEN = re.compile(r"rule:[\w.:-]+|[a-z0-9]+")
# A chunk of texts is sorted by one uint64 key: 12 bits of text index above a 52-bit feature hash.
_ROW_BITS = 12
_FEATURE_BITS = np.uint64(64 - _ROW_BITS)
_FEATURE_MASK = np.uint64((1 << (64 - _ROW_BITS)) - 1)
_SIGN_BIT = np.uint64(1 << (64 - _ROW_BITS - 1))


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 rows of width `dim`."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalise(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm as float32; all-zero rows stay zero (no division by zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return unit


def stable_hash(token: str) -> int:
    """A 64-bit hash that is the same in every process (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")


def tokens(line: str) -> list[str]:
    """The lower-cased words of a line, placeholders dropped, `rule:...` ids kept whole."""
    return _TOKEN.findall(_PLACEHOLDER.sub(" ", line).lower())


class HashingEmbedder:
    """Signed feature hashing of words and word n-grams with sublinear tf: offline, no download, deterministic.

    Fingerprints repeat the same masked templates across incidents, so each distinct line's hashes are cached
    and a batch is weighted and bucketed in a few numpy calls rather than token by token.
    """

    CACHE_LINES = 200_000
    CHUNK = 1 << _ROW_BITS

    def __init__(self, dim: int = 512, ngrams: tuple[int, int] = (1, 1)) -> None:
        lo, hi = ngrams
        if dim < 1 or lo < 1 or hi < lo:
            raise ValueError(f"HashingEmbedder needs dim >= 1 and 1 <= nmin <= nmax, got dim={dim} ngrams={ngrams}")
        self.dim = dim
        self.ngrams = (lo, hi)
        self.name = f"hashing:{dim}:{lo}-{hi}"
        self._cache: dict[str, np.ndarray] = {}

    def _line_hashes(self, line: str) -> np.ndarray:
        cached = self._cache.get(line)
        if cached is not None:
            return cached
        words = tokens(line)
        lo, hi = self.ngrams
        grams = [" ".join(words[i : i + n]) for n in range(lo, hi + 1) for i in range(len(words) - n + 1)]
        hashes = np.fromiter((stable_hash(g) for g in grams), dtype=np.uint64, count=len(grams))
        if len(self._cache) >= self.CACHE_LINES:
            self._cache.clear()
        self._cache[line] = hashes
        return hashes

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit row per text: sum over its distinct features of sign * (1 + log tf), hashed into `dim`."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.CHUNK):
            out[start : start + self.CHUNK] = self._embed_chunk(texts[start : start + self.CHUNK])
        return normalise(out)

    def _embed_chunk(self, texts: Sequence[str]) -> np.ndarray:
        flat: list[np.ndarray] = []
        lengths: list[int] = []
        for text in texts:
            hashes = [self._line_hashes(line) for line in text.splitlines()]
            flat.extend(hashes)
            lengths.append(sum(map(len, hashes)))
        if not flat or not sum(lengths):
            return np.zeros((len(texts), self.dim), dtype=np.float32)
        # One sortable key per occurrence: the text's index in the top bits, the feature's hash below it.
        rows = np.repeat(np.arange(len(texts), dtype=np.uint64), lengths)
        keys = np.sort((rows << _FEATURE_BITS) | (np.concatenate(flat) >> _ROW_BITS))
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        counts = np.diff(np.r_[starts, keys.size])
        keys = keys[starts]
        features = keys & _FEATURE_MASK
        weights = (1.0 + np.log(counts)) * np.where(features & _SIGN_BIT, -1.0, 1.0)
        cells = (keys >> _FEATURE_BITS).astype(np.int64) * self.dim + (features % np.uint64(self.dim)).astype(np.int64)
        return np.bincount(cells, weights=weights, minlength=len(texts) * self.dim).reshape(len(texts), self.dim)


class SentenceTransformerEmbedder:
    """A sentence-transformers model (downloaded by that library on first use); optional dependency."""

    def __init__(self, model_name: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError as exc:
            raise RuntimeError(
                f"embedder 'st:{model_name}' needs sentence-transformers: pip install sentence-transformers"
            ) from exc
        self._model = SentenceTransformer(model_name)
        self.name = f"st:{model_name}"
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._model.encode(list(texts), convert_to_numpy=True))


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint through the `openai` SDK; `dim` is probed on first use."""

    BATCH = 256

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY") -> None:
        try:
            import openai
        except ImportError as exc:
            raise RuntimeError(f"embedder 'openai:{model}' needs the openai SDK: pip install openai") from exc
        key = os.environ.get(api_key_env)
        if not key and base_url is None:
            raise RuntimeError(f"embedder 'openai:{model}' needs an API key: set {api_key_env}")
        # Local OpenAI-compatible servers usually ignore the key, but the SDK insists on one.
        self._client: Any = openai.OpenAI(api_key=key or "unused", base_url=base_url)
        self.model = model
        self.name = f"openai:{model}" + (f"@{base_url}" if base_url else "")
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        # "float" explicitly: the SDK otherwise asks for base64, which not every compatible server speaks.
        resp = self._client.embeddings.create(model=self.model, input=list(texts), encoding_format="float")
        data = sorted(resp.data, key=lambda d: d.index)
        return np.asarray([d.embedding for d in data], dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # An empty string is an API error on some servers; it has no features anyway, so it gets a zero row.
        keep = [i for i, t in enumerate(texts) if t.strip()]
        chunks = [self._request([texts[i] for i in keep[s : s + self.BATCH]]) for s in range(0, len(keep), self.BATCH)]
        width = chunks[0].shape[1] if chunks else self.dim
        self._dim = width
        out = np.zeros((len(texts), width), dtype=np.float32)
        if keep:
            out[keep] = np.concatenate(chunks)
        return normalise(out)


def _hashing(spec: str) -> HashingEmbedder:
    parts = spec.split(":")
    try:
        dim = int(parts[1]) if len(parts) > 1 else DEFAULT_DIM
        lo, hi = (int(x) for x in parts[2].split("-")) if len(parts) > 2 else DEFAULT_NGRAMS
        if len(parts) > 3:
            raise ValueError(spec)
        return HashingEmbedder(dim=dim, ngrams=(lo, hi))
    except ValueError as exc:
        raise ValueError(f"bad embedder spec {spec!r}: use {SPEC_FORMS}") from exc


def get_embedder(spec: str) -> Embedder:
    """The embedder a spec names (as given to --embedder or stored in an incident store's meta)."""
    kind, _, rest = spec.partition(":")
    if kind == "hashing":
        return _hashing(spec)
    if kind == "st" and rest:
        return SentenceTransformerEmbedder(rest)
    if kind == "openai" and rest:
        model, _, base_url = rest.partition("@")
        if model:
            return OpenAIEmbedder(model, base_url=base_url or None)
    raise ValueError(f"unknown embedder spec {spec!r}: use {SPEC_FORMS}")
