#!/usr/bin/python3
"""Build a tiny streaming transducer in the exact ONNX form sherpa-onnx loads, for tests.

Usage: /usr/bin/python3 scripts/make-tiny-transducer.py OUT_DIR

Writes OUT_DIR/encoder.onnx, decoder.onnx, joiner.onnx and tokens.txt (and nothing else), the
same bytes on every run. Needs Debian's python3-onnx (and its python3-numpy); downloads nothing.

Why it exists: the sherpa-onnx backend (src/engine/backends/sherpa-onnx.ts) would otherwise
never recognize anything in CI, which has no real model. This model's words mean nothing; what
it exercises is the plumbing: the addon loading three ONNX sessions and a token table, streaming
chunks with encoder state carried between them, greedy search emitting tokens with frame times,
and the backend turning those into partials, finals and word times.

The form is the one sherpa-onnx's online transducer reads for model_type "lstm"
(sherpa-onnx/csrc/online-lstm-transducer-model.cc), the simplest it loads: two state tensors.
- encoder: inputs (x [N, T, 80] fbank, h [layers, N, d_model], c [layers, N, rnn_hidden]),
  outputs (encoder_out [N, T/4, dim], next_h, next_c), positional; metadata model_type,
  num_encoder_layers, T (frames per chunk), decode_chunk_len (frames the chunk advances),
  rnn_hidden_size, d_model. sherpa-onnx takes a subsampling factor of 4 for times, so the
  encoder gives one output frame per 4 feature frames (40 ms).
- decoder: input y [N, context_size] int64 (the last tokens emitted), output [N, dim];
  metadata vocab_size, context_size.
- joiner: inputs (encoder frame [N, dim], decoder_out [N, dim]), output logits [N, vocab];
  greedy search takes the argmax, id 0 being the blank.

What it "hears": per 40 ms frame, the mean log-mel energy e. A frame emits a token when it is
loud (e above ENERGY_FLOOR) and louder than the frame before it by ONSET_RISE (roughly a
syllable onset), so speech gives a few tokens a second and silence none. The previous frame's
energy (above digital silence) is the encoder state h, carried across chunks by sherpa-onnx
(c is carried unchanged), so a state that is lost or reset shows as different output. Which
token: the argmax of a fixed random projection of the frame's spectral shape, shifted by the
decoder so that a continuation piece never follows another and no token repeats: words of one
or two pieces. One token more or less early on changes the tokens after it (the decoder's
context), as in a real model.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240617
FEATURE_DIM = 80
CHUNK_FRAMES = 16  # 160 ms of 10 ms fbank frames per encoder call
SUBSAMPLING = 4  # fixed in sherpa-onnx's time computation
OUT_FRAMES = CHUNK_FRAMES // SUBSAMPLING
CONTEXT_SIZE = 2
# Mean log-mel energy (natural log of power of samples in [-1, 1], as sherpa-onnx computes it
# by default) below which a frame is never a token: read speech here sits around -6, its pauses
# near -11, digital silence at log(FLT_EPSILON) = -15.9. And the rise over the previous frame
# that makes one.
ENERGY_FLOOR = -9.5
ONSET_RISE = 1.0
GATE_GAIN = 6.0
# The state holds the previous frame's energy relative to digital silence, so the zero state
# sherpa-onnx starts a stream with means "after silence": a stream that starts with speech
# decodes as one that starts with silence and then the same speech.
SILENCE_ENERGY = float(np.log(np.finfo(np.float32).eps))
OPSET = 13
IR_VERSION = 8  # onnxruntime 1.14 and later read IR 8

WORD_STARTS = ["\u2581BA", "\u2581DO", "\u2581KE", "\u2581LI", "\u2581MO", "\u2581NU", "\u2581PA", "\u2581RI", "\u2581SO", "\u2581TE"]
CONTINUATIONS = ["GA", "LO", "MI", "NE", "RA", "SU", "TI", "VO", "ZE", "KU"]
TOKENS = ["<blk>"] + WORD_STARTS + CONTINUATIONS
VOCAB = len(TOKENS)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(graph, meta):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="scribed-tiny-transducer")
    m.ir_version = IR_VERSION
    for key, value in meta.items():
        entry = m.metadata_props.add()
        entry.key = key
        entry.value = str(value)
    onnx.checker.check_model(m)
    return m


def encoder(rng):
    # A fixed projection of the spectral shape (log-mel minus its mean) onto the vocabulary,
    # scaled so that tanh keeps it within (-1, 1): it picks the token, it never gates.
    projection = (rng.standard_normal((FEATURE_DIM, VOCAB)) * 0.05).astype(np.float32)
    not_blank = np.ones(VOCAB, dtype=np.float32)
    not_blank[0] = 0.0
    inits = [
        const("frames_shape", np.array([0, OUT_FRAMES, SUBSAMPLING, FEATURE_DIM], dtype=np.int64)),
        const("projection", projection),
        const("not_blank", not_blank),
        const("energy_floor", np.array(ENERGY_FLOOR, dtype=np.float32)),
        const("onset_rise", np.array(ONSET_RISE, dtype=np.float32)),
        const("gate_gain", np.array(GATE_GAIN, dtype=np.float32)),
        const("silence_energy", np.array(SILENCE_ENERGY, dtype=np.float32)),
        const("zero", np.array([0], dtype=np.int64)),
        const("one", np.array([1], dtype=np.int64)),
        const("last_start", np.array([OUT_FRAMES - 1], dtype=np.int64)),
        const("last_end", np.array([OUT_FRAMES], dtype=np.int64)),
    ]
    nodes = [
        # x [N, 16, 80] -> [N, 4, 4, 80] -> mean over each 4 frames: [N, 4, 80]
        helper.make_node("Reshape", ["x", "frames_shape"], ["x4"]),
        helper.make_node("ReduceMean", ["x4"], ["frames"], axes=[2], keepdims=0),
        helper.make_node("ReduceMean", ["frames"], ["energy"], axes=[2], keepdims=1),  # [N, 4, 1]
        helper.make_node("Sub", ["frames", "energy"], ["shape"]),
        helper.make_node("MatMul", ["shape", "projection"], ["projected"]),
        helper.make_node("Tanh", ["projected"], ["choice"]),  # [N, 4, V]
        # previous frame's energy: h for the first frame of the chunk, then the chunk's own
        helper.make_node("Transpose", ["h"], ["h_batch_first"], perm=[1, 0, 2]),  # [N, 1, 1]
        helper.make_node("Add", ["h_batch_first", "silence_energy"], ["energy_before"]),
        helper.make_node("Slice", ["energy", "zero", "last_start", "one"], ["energy_head"]),
        helper.make_node("Concat", ["energy_before", "energy_head"], ["previous"], axis=1),
        helper.make_node("Sub", ["energy", "previous"], ["rise"]),
        helper.make_node("Sub", ["energy", "energy_floor"], ["above_floor"]),
        helper.make_node("Sub", ["rise", "onset_rise"], ["above_rise"]),
        helper.make_node("Min", ["above_floor", "above_rise"], ["margin"]),
        helper.make_node("Mul", ["margin", "gate_gain"], ["gate"]),  # [N, 4, 1]
        helper.make_node("Add", ["choice", "gate"], ["scores"]),
        helper.make_node("Mul", ["scores", "not_blank"], ["encoder_out"]),  # blank column 0
        helper.make_node("Slice", ["energy", "last_start", "last_end", "one"], ["energy_last"]),
        helper.make_node("Sub", ["energy_last", "silence_energy"], ["energy_last_relative"]),
        helper.make_node("Transpose", ["energy_last_relative"], ["next_h"], perm=[1, 0, 2]),
        helper.make_node("Identity", ["c"], ["next_c"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_lstm_encoder",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", CHUNK_FRAMES, FEATURE_DIM]),
            helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, "N", 1]),
            helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, "N", 1]),
        ],
        [
            helper.make_tensor_value_info("encoder_out", TensorProto.FLOAT, ["N", OUT_FRAMES, VOCAB]),
            helper.make_tensor_value_info("next_h", TensorProto.FLOAT, [1, "N", 1]),
            helper.make_tensor_value_info("next_c", TensorProto.FLOAT, [1, "N", 1]),
        ],
        inits,
    )
    return model(
        graph,
        {
            "model_type": "lstm",
            "num_encoder_layers": 1,
            "T": CHUNK_FRAMES,
            "decode_chunk_len": CHUNK_FRAMES,
            "rnn_hidden_size": 1,
            "d_model": 1,
        },
    )


def decoder():
    # Row p: what having just emitted token p adds to each token's score.
    bias = np.zeros((VOCAB, VOCAB), dtype=np.float32)
    cont = slice(1 + len(WORD_STARTS), VOCAB)
    starts = slice(1, 1 + len(WORD_STARTS))
    bias[0, cont] = -3.0  # an utterance starts with a word
    bias[starts, cont] = 0.5  # a word often goes on
    bias[cont, cont] = -3.0  # at most two pieces a word
    for p in range(1, VOCAB):
        bias[p, p] = -3.0  # no stutter
    inits = [
        const("bias", bias),
        const("last_start", np.array([CONTEXT_SIZE - 1], dtype=np.int64)),
        const("last_end", np.array([CONTEXT_SIZE], dtype=np.int64)),
        const("one", np.array([1], dtype=np.int64)),
        const("out_shape", np.array([-1, VOCAB], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Slice", ["y", "last_start", "last_end", "one"], ["last"]),  # [N, 1]
        helper.make_node("Gather", ["bias", "last"], ["rows"], axis=0),  # [N, 1, V]
        helper.make_node("Reshape", ["rows", "out_shape"], ["decoder_out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_decoder",
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["N", CONTEXT_SIZE])],
        [helper.make_tensor_value_info("decoder_out", TensorProto.FLOAT, ["N", VOCAB])],
        inits,
    )
    return model(graph, {"vocab_size": VOCAB, "context_size": CONTEXT_SIZE})


def joiner():
    # The output projection a joiner ends with; identity here, so the scores pass through.
    inits = [const("output_linear", np.eye(VOCAB, dtype=np.float32))]
    nodes = [
        helper.make_node("Add", ["encoder_out", "decoder_out"], ["summed"]),
        helper.make_node("MatMul", ["summed", "output_linear"], ["logit"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_joiner",
        [
            helper.make_tensor_value_info("encoder_out", TensorProto.FLOAT, ["N", VOCAB]),
            helper.make_tensor_value_info("decoder_out", TensorProto.FLOAT, ["N", VOCAB]),
        ],
        [helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["N", VOCAB])],
        inits,
    )
    return model(graph, {})


def write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-tiny-transducer.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    write(os.path.join(out, "encoder.onnx"), encoder(rng).SerializeToString())
    write(os.path.join(out, "decoder.onnx"), decoder().SerializeToString())
    write(os.path.join(out, "joiner.onnx"), joiner().SerializeToString())
    # tokens.txt last: its presence marks a complete model for set-up's skip check.
    write(os.path.join(out, "tokens.txt"), "".join(f"{t} {i}\n" for i, t in enumerate(TOKENS)).encode("utf-8"))


if __name__ == "__main__":
    main()
