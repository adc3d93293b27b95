"""A tiny NLI cross-encoder built by the tests: a real ONNX graph and a real tokenizer.json.

No NLI model can be downloaded here, so this one is written by hand: it reads the token ids of
"[CLS] evidence [SEP] claim [SEP]" like an exported cross-encoder does (input_ids, attention_mask,
token_type_ids -> logits over entailment, neutral, contradiction) and sums one learned-looking
vector per token. Words in ``WEIGHTS`` push a label; every other word is neutral. Its verdicts are
scripted by construction: it measures nothing about quality, only that citeline runs such a model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
# token -> (entailment, neutral, contradiction) logit contribution
WEIGHTS = {
    "supported": (8.0, 0.0, 0.0),
    "refuted": (0.0, 0.0, 8.0),
    "30": (3.0, 0.0, 0.0),
    "60": (0.0, 0.0, 9.0),
}


def build(folder: Path, words: list[str] | None = None) -> Path:
    """Write model.onnx and tokenizer.json into ``folder``; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab_words = SPECIAL + sorted(set(WEIGHTS) | set(words or []) | {"filler"})
    vocab = {w: i for i, w in enumerate(vocab_words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.save(str(folder / "tokenizer.json"))

    table = np.zeros((len(vocab), 3), dtype=np.float32)
    for w, row in WEIGHTS.items():
        table[vocab[w]] = row
    graph = helper.make_graph(
        nodes=[
            helper.make_node("Gather", ["table", "input_ids"], ["emb"]),
            helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
            helper.make_node("Mul", ["emb", "mask3"], ["masked"]),
            helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
            helper.make_node("Add", ["summed", "bias"], ["logits"]),
        ],
        name="tiny-nli",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])],
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array([0.0, 1.0, 0.0], dtype=np.float32), "bias"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder
