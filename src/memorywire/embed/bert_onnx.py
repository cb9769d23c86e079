"""Build an ONNX graph of a BERT sentence encoder straight from its safetensors weights.

Exporting through torch would make torch a run-time dependency; the encoder is small and
regular enough to write out op by op. The graph takes ``input_ids`` and ``attention_mask``
(int64, ``[batch, seq]``) and returns ``sentence_embedding`` (float32, ``[batch, hidden]``):
mean pooling over the mask followed by L2 normalisation, as sentence-transformers does for
all-MiniLM-L6-v2. Token type ids are always zero for single sentences, so their embedding
is folded into the position table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BUILDER_VERSION", "BertShape", "build_bert_model"]

# Bump whenever the emitted graph changes, so cached models built by older code are not reused.
BUILDER_VERSION = 1

_OPSET = 17  # first opset with LayerNormalization
_IR_VERSION = 8
# onnxruntime's contrib ops (Attention, SkipLayerNormalization, BiasGelu) are several times
# faster than the same maths spelled in standard ops, and every onnxruntime build has them.
_MS = "com.microsoft"

_F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class BertShape:
    hidden: int
    heads: int
    layers: int
    intermediate: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BertShape:
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported activation {config.get('hidden_act')!r}")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        return cls(
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            intermediate=int(config["intermediate_size"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._counter = 0

    def const(self, name: str, array: npt.NDArray[Any]) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        self._counter += 1
        out = f"{op_type.lower()}_{self._counter}"
        node = self._helper.make_node(
            op_type, inputs, [out], name=f"n{self._counter}", domain=domain, **attrs
        )
        self.nodes.append(node)
        return out


def _dense_weight(weights: dict[str, _F32], prefix: str) -> _F32:
    # torch Linear stores [out, in]; MatMul wants [in, out].
    return np.ascontiguousarray(weights[f"{prefix}.weight"].T)


def _layer_norm(g: _Graph, x: str, prefix: str, weights: dict[str, _F32], eps: float) -> str:
    gamma = g.const(f"{prefix}.gamma", weights[f"{prefix}.weight"])
    beta = g.const(f"{prefix}.beta", weights[f"{prefix}.bias"])
    return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


def _encoder_layer(
    g: _Graph, x: str, mask: str, i: int, weights: dict[str, _F32], shape: BertShape
) -> str:
    p = f"encoder.layer.{i}"
    qkv_w = np.concatenate(
        [weights[f"{p}.attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1
    )
    qkv_b = np.concatenate(
        [weights[f"{p}.attention.self.{n}.bias"] for n in ("query", "key", "value")]
    )
    ctx = g.op(
        "Attention",
        [x, g.const(f"{p}.qkv.w", qkv_w), g.const(f"{p}.qkv.b", qkv_b), mask],
        domain=_MS,
        num_heads=shape.heads,
    )
    attn = g.op(
        "MatMul",
        [ctx, g.const(f"{p}.attn_out.w", _dense_weight(weights, f"{p}.attention.output.dense"))],
    )
    x = _skip_layer_norm(g, attn, x, f"{p}.attention.output", weights, shape.layer_norm_eps)
    h = g.op(
        "MatMul", [x, g.const(f"{p}.ffn_in.w", _dense_weight(weights, f"{p}.intermediate.dense"))]
    )
    # BiasGelu is the exact (erf) GELU BERT was trained with.
    h = g.op(
        "BiasGelu",
        [h, g.const(f"{p}.ffn_in.b", weights[f"{p}.intermediate.dense.bias"])],
        domain=_MS,
    )
    out = g.op(
        "MatMul", [h, g.const(f"{p}.ffn_out.w", _dense_weight(weights, f"{p}.output.dense"))]
    )
    return _skip_layer_norm(g, out, x, f"{p}.output", weights, shape.layer_norm_eps)


def _skip_layer_norm(
    g: _Graph, x: str, skip: str, prefix: str, weights: dict[str, _F32], eps: float
) -> str:
    """LayerNorm(x + bias + skip) in one kernel; ``bias`` is the preceding dense layer's."""
    return g.op(
        "SkipLayerNormalization",
        [
            x,
            skip,
            g.const(f"{prefix}.ln.gamma", weights[f"{prefix}.LayerNorm.weight"]),
            g.const(f"{prefix}.ln.beta", weights[f"{prefix}.LayerNorm.bias"]),
            g.const(f"{prefix}.dense.b", weights[f"{prefix}.dense.bias"]),
        ],
        domain=_MS,
        epsilon=eps,
    )


def build_bert_model(weights_path: Path, config: dict[str, Any]) -> Any:
    """Return an ``onnx.ModelProto`` for the encoder plus mean pooling and normalisation."""
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    shape = BertShape.from_config(config)
    if shape.hidden % shape.heads:
        raise ValueError("hidden size must be a multiple of the number of heads")
    raw = load_file(str(weights_path))
    weights: dict[str, _F32] = {
        k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items() if v.dtype.kind == "f"
    }
    g = _Graph()

    ids, mask = "input_ids", "attention_mask"
    word = g.op(
        "Gather", [g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), ids]
    )
    position = (
        weights["embeddings.position_embeddings.weight"]
        + weights["embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float32)
    seq_len = g.op(
        "Slice",
        [
            g.op("Shape", [ids]),
            g.const("one_i", np.array([1], dtype=np.int64)),
            g.const("two_i", np.array([2], dtype=np.int64)),
        ],
    )
    pos = g.op(
        "Slice",
        [
            g.const("position_embeddings", position),
            g.const("zero_i", np.array([0], dtype=np.int64)),
            seq_len,
            g.const("axis0", np.array([0], dtype=np.int64)),
        ],
    )
    x = _layer_norm(
        g, g.op("Add", [word, pos]), "embeddings.LayerNorm", weights, shape.layer_norm_eps
    )

    # The contrib Attention op takes the raw 0/1 mask as int32, shape [batch, seq].
    mask_i32 = g.op("Cast", [mask], to=TensorProto.INT32)
    mask_f = g.op("Cast", [mask], to=TensorProto.FLOAT)

    for i in range(shape.layers):
        x = _encoder_layer(g, x, mask_i32, i, weights, shape)

    mask_3d = g.op("Unsqueeze", [mask_f, g.const("axes2", np.array([2], dtype=np.int64))])
    axis1 = g.const("axis1", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask_3d]), axis1], keepdims=0)
    count = g.op("ReduceSum", [mask_3d, axis1], keepdims=0)
    count = g.op("Max", [count, g.const("tiny_f", np.array(1e-9, dtype=np.float32))])
    mean = g.op("Div", [summed, count])
    g.nodes.append(
        helper.make_node(
            "LpNormalization", [mean], ["sentence_embedding"], name="normalize", axis=-1, p=2
        )
    )

    graph = helper.make_graph(
        g.nodes,
        "bert_sentence_encoder",
        [
            helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info(
                "sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden]
            )
        ],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)],
        producer_name="memorywire",
        producer_version=str(BUILDER_VERSION),
    )
    model.ir_version = _IR_VERSION
    # onnx.checker would double the build time; the test suite runs it on the cached file.
    return model
