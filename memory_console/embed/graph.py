"""Rewrites of an ONNX sentence-embedding graph that onnxruntime runs faster on a CPU.

Models shipped with int8 weights often store each weight as Cast(int8) * scale, which
onnxruntime folds back into float32 weights at load: the file is small but every matrix
product is a float32 one, and one query reads 40 MB of weights. The rewrite keeps the int8
weights and multiplies with onnxruntime's DynamicQuantizeMatMul instead, which quantizes the
activations to 8 bits per call (VNNI on x86, dot-product instructions on ARM). The bias of each
product and the erf form of GELU are folded into single operators on the way, and the
attention that torch exports as some twenty reshapes, transposes, products and masks becomes
one MultiHeadAttention operator, masked by the model's attention_mask input.

Only exact matches are rewritten and everything else is left as it is, so a model without
these patterns loads unchanged. Without the int8 products (int8_products=False) the vectors
agree with the file's own within 5e-7 in cosine. With them they differ by up to 0.05, move
with their batch and depend on the CPU's 8-bit kernel, so calibration.py refuses them wherever
it checks them (benchmarks/bench_embed_agreement.py prints what they would change).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

# Part of the cache key of a graph rewritten with int8 products; bump it when the rewrite
# changes what it computes.
REWRITE_TAG = "int8mm1"
_MS_DOMAIN = "com.microsoft"


@dataclass(frozen=True)
class Rewrite:
    """The rewritten model and what was changed in it."""

    model: bytes
    matmuls: int
    biases: int
    gelus: int
    attentions: int = 0

    @property
    def tag(self) -> str:
        return REWRITE_TAG


class _Graph:
    """Producer, consumer and initializer lookups over an onnx GraphProto being edited."""

    def __init__(self, graph: Any, numpy_helper: Any) -> None:
        self.graph = graph
        self.numpy_helper = numpy_helper
        self.producer = {output: node for node in graph.node for output in node.output}
        self.consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.outputs = {value.name for value in graph.output}
        self.taken = {name for node in graph.node for name in (node.name, *node.output)}
        self.taken |= self.initializers.keys() | {value.name for value in graph.input}

    def fresh(self, name: str) -> str:
        """A node, value or initializer name not used anywhere in the graph yet."""
        candidate, number = name, 1
        while candidate in self.taken:
            number += 1
            candidate = f"{name}_{number}"
        self.taken.add(candidate)
        return candidate

    def only_consumer(self, name: str) -> Any | None:
        """The single node reading name, or None if several nodes or a graph output read it."""
        readers = self.consumers.get(name, [])
        if len(readers) != 1 or name in self.outputs:
            return None
        return readers[0]

    def produced_by(self, name: str, op_type: str) -> Any | None:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def constant(self, name: str) -> np.ndarray | None:
        tensor = self.initializers.get(name)
        return None if tensor is None else self.numpy_helper.to_array(tensor)


def rewrite(
    model_bytes: bytes, attention_mask: str = "attention_mask", int8_products: bool = True
) -> Rewrite | None:
    """The model with int8 products and folded biases (unless int8_products is False: float32
    products as shipped), fused GELU and fused attention (masked by the graph input named
    attention_mask); None if nothing matched."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_model_from_string(model_bytes)
    graph = _Graph(model.graph, numpy_helper)
    removed: set[int] = set()
    replacements: dict[int, Any] = {}
    new_initializers: list[Any] = []
    matmuls = biases = 0

    for node in model.graph.node if int8_products else ():
        if node.op_type != "MatMul" or len(node.input) != 2:
            continue
        match = _int8_weight(graph, node.input[1])
        if match is None:
            continue
        scale_node, cast_node, weight, scale = match
        columns = weight.shape[1]
        weight_name = cast_node.input[0]
        scale_name = graph.fresh(f"{weight_name}_int8mm_scale")
        zero_name = graph.fresh(f"{weight_name}_int8mm_zero")
        new_initializers.append(
            numpy_helper.from_array(scale.reshape(columns).astype(np.float32), scale_name)
        )
        new_initializers.append(numpy_helper.from_array(np.zeros(columns, np.int8), zero_name))
        inputs = [node.input[0], cast_node.input[0], scale_name, zero_name]
        output = node.output[0]
        bias_node = _bias_add(graph, output, columns)
        if bias_node is not None:
            bias_name = next(name for name in bias_node.input if name != output)
            inputs.append(bias_name)
            output = bias_node.output[0]
            removed.add(id(bias_node))
            biases += 1
        replacements[id(node)] = helper.make_node(
            "DynamicQuantizeMatMul",
            inputs,
            [output],
            name=graph.fresh(f"{weight_name}_int8mm"),
            domain=_MS_DOMAIN,
        )
        removed.update((id(scale_node), id(cast_node)))
        matmuls += 1

    gelus = 0
    for node in model.graph.node:
        chain = _erf_gelu(graph, node) if node.op_type == "Erf" else None
        if chain is not None:
            first, *rest = chain
            replacements[id(first)] = helper.make_node(
                "Gelu",
                [first.input[0]],
                [rest[-1].output[0]],
                name=graph.fresh(f"{node.output[0]}_gelu"),
                domain=_MS_DOMAIN,
            )
            removed.update(id(part) for part in rest)
            gelus += 1

    attentions = 0
    mask_int32 = graph.fresh(f"{attention_mask}_int32")
    for node in model.graph.node:
        found = _attention(graph, node, attention_mask) if node.op_type == "Softmax" else None
        if found is not None:
            # The nodes between the projections and `last` are left without readers and
            # pruned below with the rest of the dead nodes.
            query, key, value, output, heads, factor, last = found
            replacements[id(last)] = helper.make_node(
                "MultiHeadAttention",
                [query, key, value, "", mask_int32],
                [output],
                name=graph.fresh(f"{node.name or node.output[0]}_attention"),
                domain=_MS_DOMAIN,
                num_heads=heads,
                scale=factor,
            )
            attentions += 1

    if not matmuls and not gelus and not attentions:
        return None
    nodes = [
        replacements.get(id(node), node) for node in model.graph.node if id(node) not in removed
    ]
    if attentions:
        nodes.insert(
            0,
            helper.make_node(
                "Cast", [attention_mask], [mask_int32], name=mask_int32, to=onnx.TensorProto.INT32
            ),
        )
    del model.graph.node[:]
    model.graph.node.extend(_live_nodes(nodes, {value.name for value in model.graph.output}))
    model.graph.initializer.extend(new_initializers)
    _drop_unused_initializers(model.graph)
    if not any(opset.domain == _MS_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MS_DOMAIN, 1))
    return Rewrite(
        model=model.SerializeToString(),
        matmuls=matmuls,
        biases=biases,
        gelus=gelus,
        attentions=attentions,
    )


def _int8_weight(graph: _Graph, name: str) -> tuple[Any, Any, np.ndarray, np.ndarray] | None:
    """Match a weight written as Mul(Cast(int8 [K, N]), scale [N] or [1, N]), used once."""
    scale_node = graph.produced_by(name, "Mul")
    if scale_node is None or graph.only_consumer(name) is None:
        return None
    for cast_output, scale_name in (scale_node.input, reversed(scale_node.input)):
        cast_node = graph.produced_by(cast_output, "Cast")
        scale = graph.constant(scale_name)
        if cast_node is None or scale is None or graph.only_consumer(cast_output) is None:
            continue
        weight = graph.constant(cast_node.input[0])
        if weight is None or weight.dtype != np.int8 or weight.ndim != 2:
            continue
        columns = weight.shape[1]
        if scale.dtype != np.float32 or scale.size != columns or scale.shape[-1] != columns:
            continue
        return scale_node, cast_node, weight, scale
    return None


def _bias_add(graph: _Graph, output: str, columns: int) -> Any | None:
    """The Add that is the only reader of output and adds a float32 constant of [columns]."""
    add = graph.only_consumer(output)
    if add is None or add.op_type != "Add" or len(add.input) != 2:
        return None
    other = add.input[1] if add.input[0] == output else add.input[0]
    bias = graph.constant(other)
    if bias is None or bias.dtype != np.float32 or bias.shape != (columns,):
        return None
    return add


def _scalar(graph: _Graph, node: Any, known: str) -> float | None:
    """The value of node's scalar constant input (the input that is not known)."""
    others = [name for name in node.input if name != known]
    if len(others) != 1:
        return None
    value = graph.constant(others[0])
    if value is None or value.size != 1:
        return None
    return float(value.reshape(()))


def _erf_gelu(graph: _Graph, erf: Any) -> list[Any] | None:
    """Match x * (0.5 * (erf(x / sqrt 2) + 1)) (in either operand order) around one Erf."""
    divide = graph.producer.get(erf.input[0])
    if divide is None or divide.op_type != "Div" or graph.only_consumer(divide.output[0]) is None:
        return None
    source = divide.input[0]
    divisor = _scalar(graph, divide, source)
    if divisor is None or not math.isclose(divisor, math.sqrt(2.0), rel_tol=1e-4):
        return None
    chain = [divide, erf]
    steps = (("Add", 1.0), ("Mul", 0.5))
    current = erf
    for op_type, constant in steps:
        following = graph.only_consumer(current.output[0])
        if following is None or following.op_type != op_type:
            return None
        value = _scalar(graph, following, current.output[0])
        if value is None or not math.isclose(value, constant, rel_tol=1e-6):
            return None
        chain.append(following)
        current = following
    last = graph.only_consumer(current.output[0])
    if (
        last is None
        or last.op_type != "Mul"
        or sorted(last.input) != sorted([source, current.output[0]])
    ):
        return None
    chain.append(last)
    return chain


_RESHAPES = ("Reshape", "Transpose")


def _through_reshapes(graph: _Graph, name: str) -> tuple[str, list[Any]]:
    """Walk back from name through Reshape and Transpose nodes: (first other value, the walk)."""
    walked = []
    node = graph.producer.get(name)
    while node is not None and node.op_type in _RESHAPES:
        walked.append(node)
        name = node.input[0]
        node = graph.producer.get(name)
    return name, walked


def _perm(node: Any) -> list[int] | None:
    for attribute in node.attribute:
        if attribute.name == "perm":
            return list(attribute.ints)
    return None


def _scaled(graph: _Graph, name: str) -> tuple[str, float] | None:
    """(value, factor) when name = Mul(value, scalar constant)."""
    node = graph.produced_by(name, "Mul")
    if node is None:
        return None
    for value, constant in (node.input, reversed(node.input)):
        factor = graph.constant(constant)
        if factor is not None and factor.size == 1:
            return value, float(factor.reshape(()))
    return None


def _derives_from(graph: _Graph, name: str, source: str, steps: int = 40) -> bool:
    """Whether source is among name's ancestors (breadth-first, at most steps nodes)."""
    frontier, seen = [name], set[int]()
    while frontier and len(seen) < steps:
        current = frontier.pop(0)
        if current == source:
            return True
        node = graph.producer.get(current)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        frontier.extend(node.input)
    return False


def _attention(
    graph: _Graph, softmax: Any, attention_mask: str
) -> tuple[str, str, str, str, int, float, Any] | None:
    """Match scaled dot-product attention around one Softmax, as torch exports it:
    softmax(q' k'^T + mask) v' with q', k', v' the heads of [batch, sequence, hidden] values.

    Returns (query, key, value, output, heads, scale, the node producing output).
    """
    add = graph.produced_by(softmax.input[0], "Add")
    if add is None:
        return None
    scores = mask = None
    for first, second in (add.input, reversed(add.input)):
        if graph.produced_by(first, "MatMul") is not None:
            scores, mask = graph.producer[first], second
            break
    if scores is None or mask is None or not _derives_from(graph, mask, attention_mask):
        return None
    scaled_query, scaled_key = _scaled(graph, scores.input[0]), _scaled(graph, scores.input[1])
    if scaled_query is None or scaled_key is None:
        return None
    query, query_walk = _through_reshapes(graph, scaled_query[0])
    key, key_walk = _through_reshapes(graph, scaled_key[0])
    scale = scaled_query[1] * scaled_key[1]
    if [node.op_type for node in query_walk] != ["Transpose", "Reshape"] or _perm(
        query_walk[0]
    ) != [0, 2, 1, 3]:
        return None
    # k'^T: heads split and moved to [batch, heads, sequence, head], then sequence and head swap.
    if (
        len(key_walk) < 3
        or _perm(key_walk[-2]) != [0, 2, 1, 3]
        or key_walk[-1].op_type != ("Reshape")
    ):
        return None
    # Rows that are all masked come out of Softmax as NaN; torch guards them with Where(IsNaN).
    probabilities = softmax.output[0]
    readers = sorted(graph.consumers.get(probabilities, []), key=lambda node: node.op_type)
    if [node.op_type for node in readers] == ["IsNaN", "Where"]:
        is_nan, guard = readers
        if list(guard.input[1:]) != [guard.input[1], probabilities] or (
            guard.input[0] != is_nan.output[0]
        ):
            return None
        probabilities = guard.output[0]
    weighted = graph.only_consumer(probabilities)
    if weighted is None or weighted.op_type != "MatMul" or weighted.input[0] != probabilities:
        return None
    value, value_walk = _through_reshapes(graph, weighted.input[1])
    if [node.op_type for node in value_walk] != ["Transpose", "Reshape"] or _perm(
        value_walk[0]
    ) != [0, 2, 1, 3]:
        return None
    merge = graph.only_consumer(weighted.output[0])
    if merge is None or merge.op_type != "Transpose" or _perm(merge) != [0, 2, 1, 3]:
        return None
    last = graph.only_consumer(merge.output[0])
    if last is None or last.op_type != "Reshape":
        return None
    hidden = _bias_width(graph, query)
    if hidden is None or scale <= 0.0:
        return None
    head_size = round(1.0 / scale**2)
    if (
        head_size < 1
        or hidden % head_size
        or not math.isclose(scale, head_size**-0.5, rel_tol=1e-4)
    ):
        return None
    return query, key, value, last.output[0], hidden // head_size, scale, last


def _bias_width(graph: _Graph, name: str) -> int | None:
    """The width of a [batch, sequence, hidden] projection: the size of its bias."""
    node = graph.produced_by(name, "Add")
    if node is None:
        return None
    for operand in node.input:
        bias = graph.constant(operand)
        if bias is not None and bias.ndim == 1:
            return int(bias.size)
    return None


def _live_nodes(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """The nodes that contribute to the graph's outputs, in their order."""
    needed = set(outputs)
    live = []
    for node in reversed(nodes):
        if any(output in needed for output in node.output):
            live.append(node)
            needed.update(node.input)
            for attribute in node.attribute:
                needed |= _names_read(attribute.g.node)
                for subgraph in attribute.graphs:
                    needed |= _names_read(subgraph.node)
    return live[::-1]


def _drop_unused_initializers(graph: Any) -> None:
    used = _names_read(graph.node) | {value.name for value in graph.output}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _names_read(nodes: Iterable[Any]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        names.update(node.input)
        for attribute in node.attribute:
            if attribute.g is not None:
                names.update(_names_read(attribute.g.node))
            for subgraph in attribute.graphs:
                names.update(_names_read(subgraph.node))
    return names
