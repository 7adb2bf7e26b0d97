"""Every op of the registry against PyTorch, one op at a time: the whole surface a user meets,
not only what the model benchmarks time.

    PYTHONPATH=build/python /usr/bin/python3 bench/op_compare.py [ROUNDS] [--only OP,OP]
        [--kinds forward,backward,small,fp64,int64,bandwidth]

The op list comes from the registry (`rill ops`), so a new op shows up here: each op is timed
by the cases below that name it, or listed at the end as not covered (no PyTorch peer
written yet) or not a kernel to time (I/O, control flow, tensor arrays). A case
is one op at a standard shape (sized to take about a millisecond or more), its inputs made
from a fixed seed:
 - Rill: a one-op rill.fluid program, its feeds rill.empty arrays (borrowed, not copied),
   the inputs no feed makes (SelectedRows, tensor arrays) put into its scope beforehand,
   nothing fetched, so that what is timed is the executor running the kernel;
 - PyTorch: the same computation in torch (1.13, Debian's; for edit_distance, which torch
   lacks, python-Levenshtein's), in a process of its own (two OpenMP runtimes in one
   process slow each other), torch.no_grad(), the same thread count (RILL_BENCH_THREADS,
   default 2: one per core of these machines).
Both processes run with glibc's malloc keeping freed memory (timing.keep_freed_memory):
PyTorch allocates its outputs and temporaries anew each call, and without it its time for
large tensors would be mostly page faults.
Each standard case comes in up to five kinds (--kinds picks some; all by default):
 - forward: fp32 at the standard shape;
 - backward: the op's gradient ops alone (Rill's backward pass of the first output, its
   forward run once beforehand) against torch.autograd.grad of the same inputs, fed the
   same random output gradient, its results made contiguous; where torch's gradients are
   the incoming one itself or views of it (an add, a reshape), against memcpy of the bytes
   Rill's gradients hold;
 - small: the same op at 64 x 64, where per-op overhead dominates: SMALL_REPEATS copies of
   the op in one program run by the C++ executor, against as many calls of the torch
   expression in a Python loop;
 - fp64 (float inputs made float64) and int64 (for the ops in INT64_OPS, inputs -100..100).
The ops PyTorch has no counterpart for (the sequence ops, fed LoD tensors) make a sixth
kind, bandwidth: each against memcpy of the bytes it reads and writes (bandwidth_cases).
A derived kind is made only where the standard case allows it (a shape named in the attrs
or the torch expression does not scale); a kind the op refuses (no gradient, no fp64
kernel) is listed at the end with its reason rather than timed.
Each side's time is the median over ROUNDS rounds of the mean of a timed loop (at least
0.1 s), the rounds paired: each times PyTorch, then Rill, so that both meet the machine's
load of the moment; a row's ratio is the median of the rounds' ratios. A round before them
is not counted: it warms both sides' allocators and caches, and pages their new tensors in
(on these virtual machines, memory a process touches for the first time can cost tens of
milliseconds per call for a while). Prints a Markdown table of ratios (Rill / PyTorch: below 1, Rill is
faster), the geometric mean, the slowest ten, and the ops not covered.
"""
import json
import math
import os
import statistics
import subprocess
import sys

import numpy as np

from timing import keep_freed_memory, per_call

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
THREADS = int(os.environ.get("RILL_BENCH_THREADS", "2"))
BIG = (1024, 4096)

# Ops that are not a kernel to time one at a time: I/O, control flow, tensor arrays and
# DynamicRNN's bookkeeping over them (rank tables, a step's memory, whose inputs no feed
# makes), ops of one element or of an attribute's values, and the *_batch_size_like forms
# (their plain ops' kernels).
NOT_KERNELS = {
    "feed", "fetch", "load", "load_combine", "save", "save_combine", "print", "while", "recurrent", "conditional_block",
    "read_from_array", "write_to_array", "lod_array_length", "tensor_array_to_tensor", "increment", "assign_value",
    "fill_constant_batch_size_like", "gaussian_random_batch_size_like", "uniform_random_batch_size_like", "shape",
    "lod_rank_table", "max_sequence_len", "lod_tensor_to_array", "array_to_lod_tensor", "shrink_rnn_memory",
    "reorder_lod_tensor_by_rank", "is_empty",
}


class Data(object):
    """An input described, made (from its seed) only when its case runs: the inputs of every
    case together would not fit in memory."""

    def __init__(self, shape, dtype="float32", lo=-1.0, hi=1.0, seed=0, lens=None, small=None):
        self.shape, self.dtype, self.lo, self.hi, self.seed = tuple(shape), np.dtype(dtype), lo, hi, seed
        self.lens = lens  # a LoD's recursive sequence lengths (fed as a LoDTensor), or None
        # The small kind's shape where it is not every size above 1 made SMALL (an input
        # whose width is a multiple of another's), or None.
        self.small = small

    def but(self, shape=None, dtype=None, lo=None, hi=None):
        return Data(self.shape if shape is None else shape, self.dtype if dtype is None else dtype,
                    self.lo if lo is None else lo, self.hi if hi is None else hi, self.seed, self.lens)

    def make(self):
        rng = np.random.RandomState(self.seed)
        if self.dtype.kind in "iu":
            return rng.randint(int(self.lo), int(self.hi), self.shape).astype(self.dtype)
        if self.dtype == np.bool_:
            return rng.uniform(0, 1, self.shape) < 0.5
        return rng.uniform(self.lo, self.hi, self.shape).astype(self.dtype)


class Held(object):
    """An input no feed makes, put by name into the scope the case runs in: SelectedRows
    (`parts`: its row numbers and its values, of `height` rows) or a tensor array (`parts`:
    its entries, Data with a LoD). PyTorch's side gets the parts' arrays as a list."""

    def __init__(self, form, parts, height=None):
        self.form, self.parts, self.height = form, parts, height

    def mapped(self, convert):
        return Held(self.form, [convert(d) for d in self.parts], self.height)

    def make(self):
        return [d.make() for d in self.parts]

    def put(self, scope, name, arrays):
        import rill.fluid as fluid
        var = scope.var(name)
        if self.form == "selected_rows":
            rows = var.get_selected_rows()
            rows.set_height(self.height)
            rows.set_rows([int(r) for r in arrays[0]])
            rows.get_tensor().set(arrays[1], fluid.CPUPlace())
            return
        entries = var.get_lod_tensor_array()
        for i, (a, d) in enumerate(zip(arrays, self.parts)):
            entry = scope.var("%s@%d" % (name, i)).get_tensor()
            entry.set(a, fluid.CPUPlace())
            entry.set_recursive_sequence_lengths(d.lens)
            entries.append(entry)


class Case(object):
    """One timed op: `op` with `inputs` (slot -> Data, or a list of them), `outputs` (slots),
    `attrs`, and `torch`, a PyTorch expression of the inputs as tensors (named by slot,
    lists kept; `torch` and `F` in scope). `updates` names the output slots that are input
    slots' variables updated in place (an optimizer's ParamOut is its Param), as programs
    and PyTorch's optimizers use them."""

    def __init__(self, label, op, inputs, outputs, attrs, torch_expr, kind="forward", updates=None):
        self.label, self.op, self.inputs, self.outputs, self.attrs, self.torch, self.kind = \
            label, op, inputs, outputs, attrs, torch_expr, kind
        self.updates = updates or {}
        # Two inputs described alike get different values (the later one the next seed), so
        # that a binary op never sees X == Y (a difference of zeros, a max of equals).
        seen = set()
        for d in self.datas():
            while (d.shape, d.dtype, d.lo, d.hi, d.seed) in seen:
                d.seed += 1
            seen.add((d.shape, d.dtype, d.lo, d.hi, d.seed))

    def datas(self):
        return [d for v in self.inputs.values() for h in (v if isinstance(v, list) else [v])
                for d in (h.parts if isinstance(h, Held) else [h])]

    def held(self):
        return any(isinstance(v, Held) for v in self.inputs.values())

    def derived(self, kind, label, convert):
        """This case as `kind`, each input Data passed through `convert`."""
        each = lambda d: d.mapped(convert) if isinstance(d, Held) else convert(d)  # noqa: E731
        inputs = {slot: [each(d) for d in v] if isinstance(v, list) else each(v) for slot, v in self.inputs.items()}
        return Case(label, self.op, inputs, self.outputs, self.attrs, self.torch, kind, self.updates)

    def output_names(self):
        """Each output slot's variable: its input's where it updates one, else one of its own."""
        return [("%s_0" % self.updates[slot]) if slot in self.updates else "out_%d" % i
                for i, slot in enumerate(self.outputs)]

    def arrays(self):
        return {slot: [d.make() for d in v] if isinstance(v, list) else v.make() for slot, v in self.inputs.items()}




def standard_cases():
    """The forward fp32 cases at their standard shapes (inputs described, not made)."""
    x = lambda lo=-1.0, hi=1.0, shape=BIG, small=None: Data(shape, lo=lo, hi=hi, small=small)  # noqa: E731
    out = []

    def add(label, op, inputs, attrs, torch_expr, outputs=("Out",)):
        out.append(Case(label, op, inputs, list(outputs), attrs, torch_expr))
    # Unary activations and math, [1024, 4096]: op -> (torch expression, input range, attrs).
    unary = {
        "relu": ("torch.relu(X)", -1, 1, {}), "sigmoid": ("torch.sigmoid(X)", -1, 1, {}),
        "tanh": ("torch.tanh(X)", -1, 1, {}), "exp": ("torch.exp(X)", -1, 1, {}), "log": ("torch.log(X)", 0.1, 2, {}),
        "sqrt": ("torch.sqrt(X)", 0.1, 2, {}), "rsqrt": ("torch.rsqrt(X)", 0.1, 2, {}), "abs": ("torch.abs(X)", -1, 1, {}),
        "square": ("torch.square(X)", -1, 1, {}), "gelu": ("F.gelu(X)", -3, 3, {}), "erf": ("torch.erf(X)", -3, 3, {}),
        "silu": ("F.silu(X)", -3, 3, {}), "swish": ("X * torch.sigmoid(X)", -3, 3, {"beta": 1.0}),
        "hard_swish": ("F.hardswish(X)", -4, 4, {}), "hard_sigmoid": ("F.hardsigmoid(X)", -4, 4, {"slope": 1 / 6.0, "offset": 0.5}),
        "relu6": ("F.relu6(X)", -2, 8, {}), "leaky_relu": ("F.leaky_relu(X, 0.02)", -1, 1, {"alpha": 0.02}),
        "elu": ("F.elu(X)", -2, 2, {}), "selu": ("F.selu(X)", -2, 2, {}), "mish": ("F.mish(X)", -3, 3, {}),
        "softplus": ("F.softplus(X)", -3, 3, {}), "softsign": ("F.softsign(X)", -2, 2, {}),
        "logsigmoid": ("F.logsigmoid(X)", -3, 3, {}), "tanh_shrink": ("F.tanhshrink(X)", -2, 2, {}),
        "softshrink": ("F.softshrink(X, 0.5)", -1, 1, {"lambda": 0.5}),
        "hard_shrink": ("F.hardshrink(X, 0.5)", -1, 1, {"threshold": 0.5}),
        "thresholded_relu": ("F.threshold(X, 1.0, 0.0)", -2, 2, {"threshold": 1.0}),
        "sin": ("torch.sin(X)", -3, 3, {}), "cos": ("torch.cos(X)", -3, 3, {}), "tan": ("torch.tan(X)", -1, 1, {}),
        "asin": ("torch.asin(X)", -0.9, 0.9, {}), "acos": ("torch.acos(X)", -0.9, 0.9, {}),
        "atan": ("torch.atan(X)", -2, 2, {}), "sinh": ("torch.sinh(X)", -2, 2, {}), "cosh": ("torch.cosh(X)", -2, 2, {}),
        "expm1": ("torch.expm1(X)", -1, 1, {}), "log1p": ("torch.log1p(X)", 0, 2, {}), "log2": ("torch.log2(X)", 0.1, 2, {}),
        "log10": ("torch.log10(X)", 0.1, 2, {}), "reciprocal": ("torch.reciprocal(X)", 0.5, 2, {}),
        "floor": ("torch.floor(X)", -3, 3, {}), "ceil": ("torch.ceil(X)", -3, 3, {}), "round": ("torch.round(X)", -3, 3, {}),
        "sign": ("torch.sign(X)", -1, 1, {}), "pow": ("torch.pow(X, 3.0)", 0.1, 2, {"factor": 3.0}),
        "scale": ("X * 2.0 + 1.0", -1, 1, {"scale": 2.0, "bias": 1.0}),
        "clip": ("torch.clamp(X, -0.5, 0.5)", -1, 1, {"min": -0.5, "max": 0.5}),
        "brelu": ("torch.clamp(X, 0.0, 24.0)", -1, 30, {}),
        "stanh": ("1.7159 * torch.tanh(0.67 * X)", -2, 2, {}),
        "soft_relu": ("torch.log1p(torch.exp(torch.clamp(X, -40.0, 40.0)))", -3, 3, {}),
        "isfinite": ("torch.isfinite(X).all()", -1, 1, {}), "isfinite_v2": ("torch.isfinite(X)", -1, 1, {}),
        "isinf": ("torch.isinf(X).any()", -1, 1, {}), "isinf_v2": ("torch.isinf(X)", -1, 1, {}),
        "isnan": ("torch.isnan(X).any()", -1, 1, {}), "isnan_v2": ("torch.isnan(X)", -1, 1, {}),
        "assign": ("X.clone()", -1, 1, {}), "rnn_memory_helper": ("X.clone()", -1, 1, {}),
        "fill_any_like": ("torch.full_like(X, 1.0)", -1, 1, {"value": 1.0}),
        "fill_zeros_like": ("torch.zeros_like(X)", -1, 1, {}),
        "cast": ("X.to(torch.float64)", -1, 1, {"in_dtype": 5, "out_dtype": 6}),
    }
    for op, (expr, lo, hi, attrs) in unary.items():
        add("%s [1024, 4096]" % op, op, {"X": x(lo, hi)}, attrs, expr)
    add("logical_not [1024, 4096]", "logical_not", {"X": Data(BIG, "bool")}, {}, "torch.logical_not(X)")

    # Binary elementwise: same shape, and a row bias [4096].
    for op, expr, lo in (("elementwise_add", "X + Y", -1), ("elementwise_sub", "X - Y", -1),
                         ("elementwise_mul", "X * Y", -1), ("elementwise_div", "X / Y", 0.5),
                         ("elementwise_max", "torch.maximum(X, Y)", -1), ("elementwise_min", "torch.minimum(X, Y)", -1),
                         ("elementwise_pow", "torch.pow(X, Y)", 0.5)):
        add("%s [1024, 4096] same shape" % op, op, {"X": x(lo, 2), "Y": x(lo, 2)}, {"axis": -1}, expr)
    add("elementwise_add [1024, 4096] + row bias [4096]", "elementwise_add", {"X": x(), "Y": x(shape=(4096,))},
        {"axis": -1}, "X + Y")
    add("elementwise_mul [1024, 4096] * column [1024, 1]", "elementwise_mul", {"X": x(), "Y": x(shape=(1024, 1))},
        {"axis": -1}, "X * Y")
    for op, expr in (("elementwise_mod", "torch.remainder(X, Y)"), ("elementwise_floordiv", "torch.div(X, Y, rounding_mode='floor')")):
        add("%s int64 [1024, 4096]" % op, op, {"X": Data(BIG, "int64", 1, 1000), "Y": Data(BIG, "int64", 1, 50, 1)},
            {"axis": -1}, expr)
    for op, expr in (("equal", "X == Y"), ("not_equal", "X != Y"), ("less_than", "X < Y"), ("less_equal", "X <= Y"),
                     ("greater_than", "X > Y"), ("greater_equal", "X >= Y")):
        add("%s [1024, 4096]" % op, op, {"X": x(), "Y": x()}, {}, expr)
    for op, expr in (("logical_and", "torch.logical_and(X, Y)"), ("logical_or", "torch.logical_or(X, Y)"),
                     ("logical_xor", "torch.logical_xor(X, Y)")):
        add("%s [1024, 4096]" % op, op, {"X": Data(BIG, "bool"), "Y": Data(BIG, "bool", seed=1)}, {}, expr)
    for op, expr in (("bitwise_and", "X & Y"), ("bitwise_or", "X | Y"), ("bitwise_xor", "X ^ Y")):
        add("%s int32 [1024, 4096]" % op, op,
            {"X": Data(BIG, "int32", -1000, 1000), "Y": Data(BIG, "int32", -1000, 1000, 1)}, {}, expr)
    add("bitwise_not int32 [1024, 4096]", "bitwise_not", {"X": Data(BIG, "int32", -1000, 1000)}, {}, "~X")
    add("where [1024, 4096]", "where", {"Condition": Data(BIG, "bool"), "X": x(), "Y": x()}, {},
        "torch.where(Condition, X, Y)")
    add("sum of 4 [1024, 4096]", "sum", {"X": [x() for _ in range(4)]}, {}, "X[0] + X[1] + X[2] + X[3]")

    # Reductions.
    add("reduce_sum over all [1024, 4096]", "reduce_sum", {"X": x()}, {"reduce_all": True}, "X.sum()")
    for op, expr in (("reduce_sum", "X.sum(1)"), ("reduce_max", "X.amax(1)"), ("reduce_min", "X.amin(1)"),
                     ("reduce_mean", "X.mean(1)"), ("reduce_prod", "X.prod(1)")):
        add("%s over dim 1 [1024, 4096]" % op, op, {"X": x(0.9, 1.1)}, {"dim": [1]}, expr)
    add("reduce_mean over dim 0 [1024, 4096]", "reduce_mean", {"X": x()}, {"dim": [0]}, "X.mean(0)")
    add("reduce_all over dim 1 [1024, 4096]", "reduce_all", {"X": Data(BIG, "bool")}, {"dim": [1]}, "X.all(1)")
    add("reduce_any over dim 1 [1024, 4096]", "reduce_any", {"X": Data(BIG, "bool")}, {"dim": [1]}, "X.any(1)")
    add("mean [1024, 4096]", "mean", {"X": x()}, {}, "X.mean()")
    add("squared_l2_norm [1024, 4096]", "squared_l2_norm", {"X": x()}, {}, "(X * X).sum()")
    add("clip_by_norm [1024, 4096]", "clip_by_norm", {"X": x()}, {"max_norm": 1.0},
        "X * torch.clamp(1.0 / X.norm(), max=1.0)")
    add("arg_max dim 1 [1024, 4096]", "arg_max", {"X": x()}, {"axis": 1}, "X.argmax(1)")
    add("arg_min dim 1 [1024, 4096]", "arg_min", {"X": x()}, {"axis": 1}, "X.argmin(1)")
    add("cumsum dim 1 [1024, 4096]", "cumsum", {"X": x()}, {"axis": 1}, "X.cumsum(1)")
    add("top_k 10 of [1024, 4096]", "top_k", {"X": x()}, {"k": 10}, "torch.topk(X, 10)", ("Out", "Indices"))
    add("top_k_v2 10 of [1024, 4096]", "top_k_v2", {"X": x()}, {"k": 10}, "torch.topk(X, 10)", ("Out", "Indices"))
    add("norm (l2_normalize) dim 1 [1024, 4096]", "norm", {"X": x()}, {"axis": 1, "epsilon": 1e-10},
        "F.normalize(X, dim=1)", ("Out", "Norm"))
    add("lstm_unit [1024, 4 x 1024] gates", "lstm_unit",
        {"X": x(shape=(1024, 4096), small=(SMALL, 4 * SMALL)), "C_prev": x(shape=(1024, 1024))},
        {"forget_bias": 0.0},
        "(lambda i, f, o, j: (lambda c: (c, torch.sigmoid(o) * torch.tanh(c)))("
        "C_prev * torch.sigmoid(f) + torch.sigmoid(i) * torch.tanh(j)))(*X.chunk(4, 1))", ("C", "H"))
    add("gru_unit [1024, 3 x 1024] with its [1024, 3 x 1024] weight", "gru_unit",
        {"Input": x(shape=(1024, 3072)), "HiddenPrev": x(shape=(1024, 1024)), "Weight": x(shape=(1024, 3072))},
        {"activation": 2, "gate_activation": 1},
        "(lambda u, r: (lambda c: (1 - u) * HiddenPrev + u * c)(torch.tanh(Input[:, 2048:] + (r * HiddenPrev) @ "
        "Weight[:, 2048:])))(*torch.sigmoid(Input[:, :2048] + HiddenPrev @ Weight[:, :2048]).chunk(2, 1))",
        ("Gate", "ResetHiddenPrev", "Hidden"))
    add("cos_sim of rows [1024, 4096]", "cos_sim", {"X": x(), "Y": x()}, {}, "F.cosine_similarity(X, Y, dim=1)",
        ("Out", "XNorm", "YNorm"))
    add("im2sequence 3x3 windows of [8, 32, 56, 56]", "im2sequence", {"X": x(shape=(8, 32, 56, 56))},
        {"kernels": [3, 3], "strides": [1, 1], "paddings": [1, 1, 1, 1]},
        "F.unfold(X, 3, padding=1).transpose(1, 2).reshape(-1, 288)")
    # Sequence ops on sequences all of one length, where PyTorch's dense ops do the same work.
    add("sequence_conv 3 rows of 64 sequences of [64, 256] to 256", "sequence_conv",
        {"X": Data((4096, 256), lens=[[64] * 64]), "Filter": x(shape=(768, 256))},
        {"contextLength": 3, "contextStart": -1, "contextStride": 1},
        "F.conv1d(X.view(64, 64, 256).transpose(1, 2), Filter.view(3, 256, 256).permute(2, 1, 0), "
        "padding=1).transpose(1, 2)")
    add("warpctc of 64 sequences of [100, 51] logits, 20 labels each", "warpctc",
        {"Logits": Data((6400, 51), lens=[[100] * 64]), "Label": Data((1280, 1), "int32", 1, 51, lens=[[20] * 64])},
        {"blank": 0, "norm_by_times": False},
        "F.ctc_loss(torch.log_softmax(Logits.view(64, 100, 51).transpose(0, 1), 2), Label.view(64, 20), "
        "torch.full((64,), 100), torch.full((64,), 20), blank=0, reduction='none')", ("Loss", "WarpCTCGrad"))
    add("sequence_softmax of 1024 sequences of [1024, 1]", "sequence_softmax",
        {"X": Data((1024 * 1024, 1), lens=[[1024] * 1024])}, {}, "torch.softmax(X.view(1024, 1024), -1)")
    # A step of beam search: 1024 source sentences of 4 prefixes (one row each), 64 candidates
    # a prefix, none ended; the peer picks each source's best 4 of its 256 as a top-k.
    beams = [[4] * 1024, [1] * 4096]
    add("beam_search of 1024 sources x 4 prefixes x [64] candidates, beam 4", "beam_search",
        {"pre_ids": Data((4096, 1), "int64", 1, 100, lens=beams), "pre_scores": Data((4096, 1), lens=beams),
         "ids": Data((4096, 64), "int64", 1, 30000, lens=beams), "scores": Data((4096, 64), lo=-5, hi=0, lens=beams)},
        {"beam_size": 4, "end_id": 0, "level": 0},
        "(lambda best: (ids.view(1024, 256).gather(1, best.indices), best.values, best.indices // 64))("
        "scores.view(1024, 256).topk(4))", ("selected_ids", "selected_scores", "parent_idx"))
    # Edit distances of 1024 pairs of 16-48 ids against python-Levenshtein's C distance, each
    # sequence one of its strings (a character an id, made once, as its users hold them).
    pairs = _lens(1024, 16, 48)
    tokens = lambda seed: Data((sum(pairs[0]), 1), "int64", 0, 20, seed, lens=pairs)  # noqa: E731
    add("edit_distance of 1024 pairs of sequences of [16-48] ids", "edit_distance", {"Hyps": tokens(0), "Refs": tokens(1)},
        {"normalized": True}, "levenshtein(Hyps, Refs, %r)" % pairs[0], ("Out", "SequenceNum"))
    # A CRF of 32 tags over 64 sequences of 64 positions, against the forward algorithm and
    # Viterbi written in torch a step at a time, as PyTorch's CRF layers do.
    crf = {"Emission": Data((4096, 32), lens=[[64] * 64]), "Transition": x(shape=(34, 32))}
    add("linear_chain_crf of 64 sequences of [64, 32 tags]", "linear_chain_crf",
        dict(crf, Label=Data((4096, 1), "int64", 0, 32, lens=[[64] * 64])), {},
        "(lambda E, L, a, b, W: torch.logsumexp(__import__('functools').reduce("
        "lambda al, t: torch.logsumexp(al.unsqueeze(2) + W.unsqueeze(0), 1) + E[:, t], range(1, 64), a + E[:, 0]) "
        "+ b, 1) - (a[L[:, 0]] + b[L[:, -1]] + E.gather(2, L.unsqueeze(2)).sum((1, 2)) + "
        "W[L[:, :-1], L[:, 1:]].sum(1)))(Emission.view(64, 64, 32), Label.view(64, 64), Transition[0], "
        "Transition[1], Transition[2:])", ("LogLikelihood", "Alpha", "EmissionExps", "TransitionExps"))
    add("crf_decoding of 64 sequences of [64, 32 tags]", "crf_decoding", dict(crf), {},
        "(lambda E, a, b, W: (lambda r: torch.stack(__import__('functools').reduce("
        "lambda p, bp: [bp.gather(1, p[0].unsqueeze(1)).squeeze(1)] + p, reversed(r[1]), [(r[0] + b).argmax(1)]), 1))"
        "(__import__('functools').reduce(lambda sb, t: (lambda m: (m[0] + E[:, t], sb[1] + [m[1]]))("
        "(sb[0].unsqueeze(2) + W.unsqueeze(0)).max(1)), range(1, 64), (a + E[:, 0], []))))"
        "(Emission.view(64, 64, 32), Transition[0], Transition[1], Transition[2:])", ("ViterbiPath",))

    # Softmax family and losses.
    add("softmax [1024, 4096]", "softmax", {"X": x()}, {}, "torch.softmax(X, -1)")
    add("log_softmax [1024, 4096]", "log_softmax", {"X": x()}, {}, "torch.log_softmax(X, -1)")
    add("softmax_with_cross_entropy [4096, 1000]", "softmax_with_cross_entropy",
        {"Logits": x(shape=(4096, 1000)), "Label": Data((4096, 1), "int64", 0, 1000)}, {},
        "F.cross_entropy(Logits, Label.view(-1), reduction='none')", ("Softmax", "Loss"))
    add("cross_entropy [4096, 1000]", "cross_entropy",
        {"X": x(0.01, 1, (4096, 1000)), "Label": Data((4096, 1), "int64", 0, 1000)}, {},
        "-torch.log(X.gather(1, Label))", ("Y",))
    add("sigmoid_cross_entropy_with_logits [1024, 4096]", "sigmoid_cross_entropy_with_logits",
        {"X": x(), "Label": x(0, 1)}, {}, "F.binary_cross_entropy_with_logits(X, Label, reduction='none')")
    add("smooth_l1_loss [1024, 4096]", "smooth_l1_loss", {"X": x(), "Y": x()}, {"sigma": 1.0},
        "F.smooth_l1_loss(X, Y, reduction='none').sum(1)", ("Diff", "Out"))
    add("label_smooth [1024, 4096]", "label_smooth", {"X": x(0, 1)}, {"epsilon": 0.1}, "X * 0.9 + 0.1 / 4096")

    # Layout ops.
    add("transpose2 [64, 128, 256] (0, 2, 1)", "transpose2", {"X": x(shape=(64, 128, 256))}, {"axis": [0, 2, 1]},
        "X.permute(0, 2, 1).contiguous()", ("Out", "XShape"))
    add("concat 4 x [1024, 1024] dim 0", "concat", {"X": [x(shape=(1024, 1024)) for _ in range(4)]}, {"axis": 0},
        "torch.cat(X, 0)")
    add("concat 4 x [1024, 1024] dim 1", "concat", {"X": [x(shape=(1024, 1024)) for _ in range(4)]}, {"axis": 1},
        "torch.cat(X, 1)")
    add("split [1024, 4096] in 4 along dim 1", "split", {"X": x()}, {"num": 4, "axis": 1},
        "[t.contiguous() for t in torch.split(X, 1024, 1)]", ("Out", "Out", "Out", "Out"))
    add("stack 4 x [1024, 1024]", "stack", {"X": [x(shape=(1024, 1024)) for _ in range(4)]}, {"axis": 0},
        "torch.stack(X, 0)", ("Y",))
    add("slice [1024, 4096][:, 1000:3000]", "slice", {"Input": x()}, {"axes": [1], "starts": [1000], "ends": [3000]},
        "Input[:, 1000:3000].contiguous()")
    add("strided_slice [1024, 4096][::2, 1:4000:3]", "strided_slice", {"Input": x()},
        {"axes": [0, 1], "starts": [0, 1], "ends": [1024, 4000], "strides": [2, 3]}, "Input[::2, 1:4000:3].contiguous()")
    add("strided_slice [1024, 4096][:, ::2]", "strided_slice", {"Input": x()},
        {"axes": [1], "starts": [0], "ends": [4096], "strides": [2]}, "Input[:, ::2].contiguous()")
    add("crop [1024, 4096] to [512, 2048] at (256, 1024)", "crop", {"X": x()},
        {"shape": [512, 2048], "offsets": [256, 1024]}, "X[256:768, 1024:3072].contiguous()")
    add("pad [1024, 4096] by 8 each side", "pad", {"X": x()}, {"paddings": [8, 8, 8, 8], "pad_value": 0.0},
        "F.pad(X, (8, 8, 8, 8))")
    add("pad2d reflect [8, 64, 56, 56] by 2", "pad2d", {"X": x(shape=(8, 64, 56, 56))},
        {"paddings": [2, 2, 2, 2], "mode": "reflect"}, "F.pad(X, (2, 2, 2, 2), mode='reflect')")
    add("flip dim 1 [1024, 4096]", "flip", {"X": x()}, {"axis": [1]}, "torch.flip(X, [1])")
    add("roll 3 along dim 1 [1024, 4096]", "roll", {"X": x()}, {"shifts": [3], "axis": [1]}, "torch.roll(X, 3, 1)")
    add("tile [1024, 1024] x (1, 4)", "tile", {"X": x(shape=(1024, 1024))}, {"repeat_times": [1, 4]},
        "X.repeat(1, 4)")
    add("expand_v2 [1, 4096] to [1024, 4096]", "expand_v2", {"X": x(shape=(1, 4096))}, {"shape": [1024, 4096]},
        "X.expand(1024, 4096).contiguous()")
    add("reshape2 [1024, 4096] to [4096, 1024]", "reshape2", {"X": x()}, {"shape": [4096, 1024]},
        "X.reshape(4096, 1024).clone()", ("Out", "XShape"))
    add("gather 8192 rows of [100000, 64]", "gather", {"X": x(shape=(100000, 64)), "Index": Data((8192,), "int64", 0, 100000)},
        {}, "X.index_select(0, Index)")
    add("index_select 8192 rows of [100000, 64]", "index_select",
        {"X": x(shape=(100000, 64)), "Index": Data((8192,), "int64", 0, 100000)}, {"dim": 0}, "X.index_select(0, Index)")
    add("lookup_table 4096 ids in [1000000, 64]", "lookup_table",
        {"W": x(shape=(1000000, 64)), "Ids": Data((4096, 1), "int64", 0, 1000000)}, {},
        "F.embedding(Ids.view(-1), W)")
    add("lookup_table_v2 4096 ids in [1000000, 64]", "lookup_table_v2",
        {"W": x(shape=(1000000, 64)), "Ids": Data((4096,), "int64", 0, 1000000)}, {}, "F.embedding(Ids, W)")
    # An embedding's sparse gradient (65536 looked-up rows of 16384 distinct, a table of
    # 100000 x 64) with each row once, summed: PyTorch's coalesce of the same sparse tensor.
    add("merge_selected_rows of 65536 rows of [100000, 64]", "merge_selected_rows",
        {"X": Held("selected_rows", [Data((65536,), "int64", 0, 16384), x(shape=(65536, 64))], height=100000)},
        {}, "torch.sparse_coo_tensor(X[0].view(1, -1), X[1], (100000, 64)).coalesce()")
    add("index_sample 64 of each row of [1024, 4096]", "index_sample",
        {"X": x(), "Index": Data((1024, 64), "int64", 0, 4096)}, {}, "X.gather(1, Index)")
    add("tril_triu lower [1024, 4096]", "tril_triu", {"X": x()}, {"diagonal": 0, "lower": True}, "torch.tril(X)")
    add("scatter 8192 rows into [100000, 64]", "scatter",
        {"X": x(shape=(100000, 64)), "Ids": Data((8192,), "int64", 0, 100000), "Updates": x(shape=(8192, 64))}, {},
        "X.index_copy(0, Ids, Updates)")
    # Index rows of 2 naming rows of [1024, 100, 64] by their first two dims.
    nd = {"X": x(shape=(1024, 100, 64)), "Index": Data((8192, 2), "int64", 0, 100)}
    add("gather_nd 8192 rows of [1024, 100, 64] by 2-d index", "gather_nd", nd, {}, "X[Index[:, 0], Index[:, 1]]")
    add("scatter_nd_add 8192 rows into [1024, 100, 64] by 2-d index", "scatter_nd_add",
        dict(nd, Updates=x(shape=(8192, 64))), {},
        "X.index_put((Index[:, 0], Index[:, 1]), Updates, accumulate=True)")
    add("one_hot_v2 65536 ids depth 1000", "one_hot_v2", {"X": Data((65536,), "int64", 0, 1000)}, {"depth": 1000},
        "torch.zeros(65536, 1000).scatter_(1, X.view(-1, 1), 1.0)")
    add("multiplex 2 x [1024, 4096]", "multiplex", {"X": [x(), x()], "Ids": Data((1024, 1), "int32", 0, 2)}, {},
        "torch.where(Ids.bool(), X[1], X[0])")

    # Dense math and nets.
    add("bmm [64, 128, 256] x [64, 256, 128]", "bmm", {"X": x(shape=(64, 128, 256)), "Y": x(shape=(64, 256, 128))}, {},
        "torch.bmm(X, Y)")
    add("mul [1024, 1024] x [1024, 1024]", "mul", {"X": x(shape=(1024, 1024)), "Y": x(shape=(1024, 1024))}, {},
        "X @ Y")
    add("matmul_v2 batched [32, 256, 256] x [32, 256, 256]", "matmul_v2",
        {"X": x(shape=(32, 256, 256)), "Y": x(shape=(32, 256, 256))}, {}, "torch.bmm(X, Y)")
    add("matmul batched [32, 256, 256] x [32, 256, 256]", "matmul",
        {"X": x(shape=(32, 256, 256)), "Y": x(shape=(32, 256, 256))}, {}, "torch.bmm(X, Y)")
    add("conv2d 3x3 64->64 [8, 64, 56, 56]", "conv2d", {"Input": x(shape=(8, 64, 56, 56)), "Filter": x(shape=(64, 64, 3, 3))},
        {"strides": [1, 1], "paddings": [1, 1]}, "F.conv2d(Input, Filter, padding=1)", ("Output",))
    add("depthwise_conv2d 3x3 [8, 64, 56, 56]", "depthwise_conv2d",
        {"Input": x(shape=(8, 64, 56, 56)), "Filter": x(shape=(64, 1, 3, 3))},
        {"strides": [1, 1], "paddings": [1, 1], "groups": 64}, "F.conv2d(Input, Filter, padding=1, groups=64)",
        ("Output",))
    add("conv2d_transpose 4x4 s2 64->32 [8, 64, 28, 28]", "conv2d_transpose",
        {"Input": x(shape=(8, 64, 28, 28)), "Filter": x(shape=(64, 32, 4, 4))},
        {"strides": [2, 2], "paddings": [1, 1]}, "F.conv_transpose2d(Input, Filter, stride=2, padding=1)", ("Output",))
    add("depthwise_conv2d_transpose 4x4 s2 [8, 64, 28, 28]", "depthwise_conv2d_transpose",
        {"Input": x(shape=(8, 64, 28, 28)), "Filter": x(shape=(64, 1, 4, 4))},
        {"strides": [2, 2], "paddings": [1, 1], "groups": 64},
        "F.conv_transpose2d(Input, Filter, stride=2, padding=1, groups=64)", ("Output",))
    add("pool2d max 2x2 s2 [64, 64, 56, 56]", "pool2d", {"X": x(shape=(64, 64, 56, 56))},
        {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]}, "F.max_pool2d(X, 2, 2)")
    add("max_pool2d_with_index 2x2 s2 [64, 64, 56, 56]", "max_pool2d_with_index", {"X": x(shape=(64, 64, 56, 56))},
        {"ksize": [2, 2], "strides": [2, 2]}, "F.max_pool2d(X, 2, 2, return_indices=True)", ("Out", "Mask"))
    add("max_pool3d_with_index 2x2x2 s2 [8, 32, 32, 56, 56]", "max_pool3d_with_index",
        {"X": x(shape=(8, 32, 32, 56, 56))}, {"ksize": [2, 2, 2], "strides": [2, 2, 2]},
        "F.max_pool3d(X, 2, 2, return_indices=True)", ("Out", "Mask"))
    add("pool2d avg 3x3 s1 p1 [16, 64, 56, 56]", "pool2d", {"X": x(shape=(16, 64, 56, 56))},
        {"pooling_type": "avg", "ksize": [3, 3], "strides": [1, 1], "paddings": [1, 1]},
        "F.avg_pool2d(X, 3, 1, 1)")
    c = 64
    add("batch_norm inference [32, 64, 56, 56]", "batch_norm",
        {"X": x(shape=(32, c, 56, 56)), "Scale": x(0.5, 1.5, (c,)), "Bias": x(shape=(c,)), "Mean": x(shape=(c,)),
         "Variance": x(0.5, 1.5, (c,))}, {"is_test": True},
        "F.batch_norm(X, Mean, Variance, Scale, Bias, training=False)",
        ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"))
    add("layer_norm [4096, 1024]", "layer_norm",
        {"X": x(shape=(4096, 1024)), "Scale": x(0.5, 1.5, (1024,)), "Bias": x(shape=(1024,))}, {"begin_norm_axis": 1},
        "F.layer_norm(X, (1024,), Scale, Bias)", ("Y", "Mean", "Variance"))
    add("group_norm 32 groups [16, 256, 28, 28]", "group_norm",
        {"X": x(shape=(16, 256, 28, 28)), "Scale": x(0.5, 1.5, (256,)), "Bias": x(shape=(256,))}, {"groups": 32},
        "F.group_norm(X, 32, Scale, Bias)", ("Y", "Mean", "Variance"))
    add("instance_norm [16, 256, 28, 28]", "instance_norm",
        {"X": x(shape=(16, 256, 28, 28)), "Scale": x(0.5, 1.5, (256,)), "Bias": x(shape=(256,))}, {},
        "F.instance_norm(X, weight=Scale, bias=Bias)", ("Y", "SavedMean", "SavedVariance"))
    add("lrn n=5 [16, 64, 56, 56]", "lrn", {"X": x(shape=(16, 64, 56, 56))},
        {"n": 5, "k": 1.0, "alpha": 1e-4, "beta": 0.75},
        "F.local_response_norm(X, 5, alpha=5e-4, beta=0.75, k=1.0)", ("Out", "MidOut"))
    add("maxout groups 2 [16, 128, 56, 56]", "maxout", {"X": x(shape=(16, 128, 56, 56))}, {"groups": 2},
        "X.view(16, 64, 2, 56, 56).amax(2)")
    add("prelu channel [32, 64, 56, 56]", "prelu", {"X": x(shape=(32, 64, 56, 56)), "Alpha": x(0, 0.5, (64,))},
        {"mode": "channel"}, "F.prelu(X, Alpha)")
    add("dropout inference [1024, 4096]", "dropout", {"X": x()}, {"dropout_prob": 0.5, "is_test": True,
                                                                  "dropout_implementation": "upscale_in_train"},
        "F.dropout(X, 0.5, training=False).clone()", ("Out",))
    add("dropout training [1024, 4096]", "dropout", {"X": x()}, {"dropout_prob": 0.5, "fix_seed": True, "seed": 1,
                                                                 "dropout_implementation": "upscale_in_train"},
        "F.dropout(X, 0.5, training=True)", ("Out", "Mask"))
    for version in ("_v2", ""):
        add("bilinear_interp%s [16, 64, 56, 56] to 112" % version, "bilinear_interp" + version,
            {"X": x(shape=(16, 64, 56, 56))}, {"out_h": 112, "out_w": 112, "align_corners": False, "align_mode": 0},
            "F.interpolate(X, size=(112, 112), mode='bilinear', align_corners=False)")
        add("nearest_interp%s [16, 64, 56, 56] to 112" % version, "nearest_interp" + version,
            {"X": x(shape=(16, 64, 56, 56))}, {"out_h": 112, "out_w": 112, "align_corners": False},
            "F.interpolate(X, size=(112, 112), mode='nearest')")
    add("expand [1, 4096] x (1024, 1)", "expand", {"X": x(shape=(1, 4096))}, {"expand_times": [1024, 1]},
        "X.repeat(1024, 1)")
    add("expand_as_v2 [1, 4096] to [1024, 4096]", "expand_as_v2", {"X": x(shape=(1, 4096))},
        {"target_shape": [1024, 4096]}, "X.expand(1024, 4096).contiguous()")
    add("fc [4096, 1024] x [1024, 1024] + bias", "fc",
        {"Input": x(shape=(4096, 1024)), "W": x(shape=(1024, 1024)), "Bias": x(shape=(1024,))}, {"in_num_col_dims": 1},
        "F.linear(Input, W.t(), Bias)")
    add("flatten2 [64, 64, 32, 32] from axis 1", "flatten2", {"X": x(shape=(64, 64, 32, 32))}, {"axis": 1},
        "X.flatten(1).clone()", ("Out", "XShape"))
    add("flatten_contiguous_range [64, 64, 32, 32] dims 1-3", "flatten_contiguous_range",
        {"X": x(shape=(64, 64, 32, 32))}, {"start_axis": 1, "stop_axis": 3}, "X.flatten(1).clone()", ("Out", "XShape"))
    add("squeeze2 [1024, 1, 4096]", "squeeze2", {"X": x(shape=(1024, 1, 4096))}, {"axes": [1]}, "X.squeeze(1).clone()",
        ("Out", "XShape"))
    add("unsqueeze2 [1024, 4096]", "unsqueeze2", {"X": x()}, {"axes": [1]}, "X.unsqueeze(1).clone()", ("Out", "XShape"))
    # Fluid 1.x's first forms of the shape ops: the same kernels, without XShape.
    for case in [c for c in out if c.op in ("transpose2", "reshape2", "flatten2", "squeeze2", "unsqueeze2")]:
        add(case.label.replace("2 ", " ", 1), case.op[:-1], case.inputs, case.attrs, case.torch)
    add("one_hot 65536 ids [65536, 1] depth 1000", "one_hot", {"X": Data((65536, 1), "int64", 0, 1000)},
        {"depth": 1000}, "torch.zeros(65536, 1000).scatter_(1, X, 1.0)")
    add("pad3d [4, 32, 16, 56, 56] by 1", "pad3d", {"X": x(shape=(4, 32, 16, 56, 56))},
        {"paddings": [1, 1, 1, 1, 1, 1], "mode": "constant", "value": 0.0}, "F.pad(X, (1, 1, 1, 1, 1, 1))")
    add("polygon_box_transform [16, 8, 128, 128]", "polygon_box_transform", {"Input": x(shape=(16, 8, 128, 128))}, {},
        "torch.where(torch.arange(8).view(1, 8, 1, 1) % 2 == 0, 4.0 * torch.arange(128).view(1, 1, 1, 128), "
        "4.0 * torch.arange(128).view(1, 1, 128, 1)) - Input", ("Output",))

    # Made tensors: random sources (each its own generator: the times compare, not the values).
    add("uniform_random [1024, 4096]", "uniform_random", {}, {"shape": [1024, 4096], "min": -1.0, "max": 1.0, "seed": 1},
        "torch.empty(1024, 4096).uniform_(-1.0, 1.0)")
    add("gaussian_random [1024, 4096]", "gaussian_random", {}, {"shape": [1024, 4096], "mean": 0.0, "std": 1.0, "seed": 1},
        "torch.randn(1024, 4096)")
    add("truncated_gaussian_random [1024, 4096]", "truncated_gaussian_random", {},
        {"shape": [1024, 4096], "mean": 0.0, "std": 1.0, "seed": 1},
        "torch.nn.init.trunc_normal_(torch.empty(1024, 4096), 0.0, 1.0, -2.0, 2.0)")
    add("fill_constant [1024, 4096]", "fill_constant", {}, {"shape": [1024, 4096], "value": 1.0, "dtype": 5},
        "torch.full((1024, 4096), 1.0)")
    add("range of [4194304] values", "range", {"Start": Data((1,), lo=0, hi=0), "End": Data((1,), lo=4194304, hi=4194304),
                                            "Step": Data((1,), lo=1, hi=1)}, {},
        "torch.arange(Start.item(), End.item(), Step.item(), dtype=Start.dtype)")

    # Optimizers on a [1024, 4096] parameter, updating it and their state in place, against
    # PyTorch's own update functions (those torch.optim's classes call, one tensor at a time,
    # as they do on the CPU). PyTorch keeps its step count in a tensor it advances: Beta1Pow's
    # (which scales the step as the count does) or, where the op has no such input,
    # LearningRate's (PyTorch takes lr as a number).
    lr = lambda rate: Data((1,), lo=rate, hi=rate)  # noqa: E731
    fn = "torch.optim._functional."

    def optimizer(op, inputs, attrs, torch_call, state):
        updates = dict({"ParamOut": "Param"}, **{slot + "Out": slot for slot in state})
        out.append(Case("%s [1024, 4096]" % op, op, dict({"Param": x(), "Grad": x()}, **inputs),
                        list(updates), attrs, fn + torch_call, updates=updates))
    optimizer("sgd", {"LearningRate": lr(0.01)}, {},
              "sgd([Param], [Grad], [None], weight_decay=0.0, momentum=0.0, lr=0.01, dampening=0.0, "
              "nesterov=False, maximize=False)", [])
    optimizer("momentum", {"Velocity": x(), "LearningRate": lr(0.01)}, {"mu": 0.9},
              "sgd([Param], [Grad], [Velocity], weight_decay=0.0, momentum=0.9, lr=0.01, dampening=0.0, "
              "nesterov=False, maximize=False)", ["Velocity"])
    optimizer("adam", {"LearningRate": lr(0.001), "Moment1": x(), "Moment2": x(0, 1), "Beta1Pow": lr(0.9),
                       "Beta2Pow": lr(0.999)}, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
              "adam([Param], [Grad], [Moment1], [Moment2], [], [Beta1Pow], amsgrad=False, beta1=0.9, "
              "beta2=0.999, lr=0.001, weight_decay=0.0, eps=1e-08, maximize=False)",
              ["Moment1", "Moment2", "Beta1Pow", "Beta2Pow"])
    optimizer("adamax", {"LearningRate": lr(0.002), "Moment": x(), "InfNorm": x(0.1, 1), "Beta1Pow": lr(0.9)},
              {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
              "adamax([Param], [Grad], [Moment], [InfNorm], [Beta1Pow], eps=1e-08, beta1=0.9, beta2=0.999, "
              "lr=0.002, weight_decay=0.0)", ["Moment", "InfNorm"])
    optimizer("adagrad", {"Moment": x(0, 1), "LearningRate": lr(0.01)}, {"epsilon": 1e-6},
              "adagrad([Param], [Grad], [Moment], [LearningRate], lr=0.01, weight_decay=0.0, lr_decay=0.0, "
              "eps=1e-06, maximize=False)", ["Moment"])
    optimizer("rmsprop", {"MeanSquare": x(0, 1), "Moment": x(), "LearningRate": lr(0.01)},
              {"decay": 0.9, "momentum": 0.9, "epsilon": 1e-6},
              "rmsprop([Param], [Grad], [MeanSquare], [], [Moment], lr=0.01, alpha=0.9, eps=1e-06, "
              "weight_decay=0.0, momentum=0.9, centered=False)", ["MeanSquare", "Moment"])
    optimizer("adadelta", {"AvgSquaredGrad": x(0, 1), "AvgSquaredUpdate": x(0, 1)}, {"rho": 0.95, "epsilon": 1e-6},
              "adadelta([Param], [Grad], [AvgSquaredGrad], [AvgSquaredUpdate], lr=1.0, rho=0.95, eps=1e-06, "
              "weight_decay=0.0, maximize=False)", ["AvgSquaredGrad", "AvgSquaredUpdate"])

    # An embedding table [1000000, 64] updated by a batch's sparse gradient (SelectedRows of
    # 4096 looked-up rows, a few repeated), against PyTorch's updates by the same sparse
    # tensor: its dense add of a sparse gradient, and SparseAdam's (Adam's lazy_mode).
    table = {"Param": x(shape=(1000000, 64)),
             "Grad": Held("selected_rows", [Data((4096,), "int64", 0, 65536), x(shape=(4096, 64))], height=1000000)}
    sparse = "torch.sparse_coo_tensor(Grad[0].view(1, -1), Grad[1], (1000000, 64))"
    out.append(Case("sgd of 4096 sparse rows of [1000000, 64]", "sgd", dict(table, LearningRate=lr(0.01)), ["ParamOut"],
                    {}, "Param.add_(%s, alpha=-0.01)" % sparse, updates={"ParamOut": "Param"}))
    adam_state = ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow")
    out.append(Case("adam lazy_mode of 4096 sparse rows of [1000000, 64]", "adam",
                    dict(table, LearningRate=lr(0.001), Moment1=x(shape=(1000000, 64)),
                         Moment2=x(0, 1, (1000000, 64)), Beta1Pow=lr(0.9), Beta2Pow=lr(0.999)),
                    ["ParamOut"] + [slot + "Out" for slot in adam_state],
                    {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": True},
                    fn + "sparse_adam([Param], [%s], [Moment1], [Moment2], [1], eps=1e-08, beta1=0.9, beta2=0.999, "
                    "lr=0.001, maximize=False)" % sparse,
                    updates=dict({"ParamOut": "Param"}, **{slot + "Out": slot for slot in adam_state})))

    # The sampled and tree losses of word2vec-style models, 4096 rows of 64 against 10,000
    # classes, against the same computation in torch: nce's uniform sampler (10 noise classes
    # a row, drawn anew each call, as Rill's are) and its cost -log(o / (o + b)) for the label,
    # -log(b / (o + b)) for each noise class (o the sigmoid of the class's logit, b 10 /
    # 10,000); hierarchical_sigmoid's default tree (label c's path: the nodes (c + classes)
    # >> (j + 1) - 1 below its top bit, bit j of c + classes its code), its cost
    # softplus(pre) - code * pre summed along the path (Paddle's, and so Rill's, also adds
    # softplus(0) for each node a path is short of the longest: a constant the peer leaves out).
    add("nce of [4096, 64] against 10000 classes, 10 noise samples", "nce",
        {"Input": Data((4096, 64)), "Label": Data((4096, 1), "int64", 0, 10000),
         "Weight": Data((10000, 64)), "Bias": Data((10000, 1))},
        {"num_total_classes": 10000, "num_neg_samples": 10, "seed": 1},
        "(lambda ids: (lambda o: -(torch.log(o[:, :1] / (o[:, :1] + 1e-3)).sum(1) + torch.log(1e-3 / (o[:, 1:] + 1e-3))"
        ".sum(1)))(torch.sigmoid(torch.bmm(Weight[ids], Input.unsqueeze(2)).squeeze(2) + Bias[ids, 0])))("
        "torch.cat([Label, torch.randint(0, 10000, (4096, 10))], 1))", ("Cost", "SampleLogits", "SampleLabels"))
    add("hierarchical_sigmoid of [4096, 64] over 10000 classes", "hierarchical_sigmoid",
        {"X": Data((4096, 64)), "W": Data((9999, 64)), "Label": Data((4096, 1), "int64", 0, 10000)},
        {"num_classes": 10000},
        "(lambda code, j: (lambda pre, bit, on: ((F.softplus(pre) - bit * pre) * on).sum(1, keepdim=True))("
        "torch.bmm(W[((code >> (j + 1)) - 1).clamp(min=0)], X.unsqueeze(2)).squeeze(2), ((code >> j) & 1).float(), "
        "(code >> (j + 1) > 0).float()))(Label + 10000, torch.arange(14))", ("Out", "PreOut"))

    # Metrics.
    add("accuracy of top 5 [262144, 5]", "accuracy",
        {"Out": x(shape=(262144, 5)), "Indices": Data((262144, 5), "int64", 0, 100),
         "Label": Data((262144, 1), "int64", 0, 100)}, {},
        "(Indices == Label).any(1).float().mean()", ("Accuracy", "Correct", "Total"))
    add("mean_iou of 21 classes over [8, 512, 512]", "mean_iou",
        {"Predictions": Data((8, 512, 512), "int64", 0, 21), "Labels": Data((8, 512, 512), "int64", 0, 21)},
        {"num_classes": 21},
        "(lambda L, P: (lambda c, w: (c / (c + w).clamp(min=1)).sum() / ((c + w) > 0).sum())("
        "torch.bincount(L[L == P], minlength=21), torch.bincount(L[L != P], minlength=21) + "
        "torch.bincount(P[L != P], minlength=21)))(Labels.view(-1), Predictions.view(-1))",
        ("OutMeanIou", "OutWrong", "OutCorrect"))
    return out


SMALL = 64
SMALL_REPEATS = 64
# Ops timed on int64 inputs too (their int64 kernels are what index and count pipelines use).
INT64_OPS = {
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_max", "elementwise_min", "reduce_sum",
    "reduce_max", "reduce_min", "abs", "sign", "equal", "less_than", "concat", "split", "stack", "slice", "transpose2",
    "flip", "roll", "tile", "expand_v2", "gather", "index_select", "cumsum", "where", "assign", "arg_max", "top_k_v2",
    "reshape2",
}
KINDS = ("forward", "backward", "small", "fp64", "int64", "bandwidth")


def _scales(case):
    """Whether the case shrinks to SMALL x SMALL: its inputs are [1024, 4096]-family shapes,
    not all of one element, and neither its attrs nor its torch expression name a size."""
    text = repr(case.attrs) + case.torch
    return all(set(d.shape) <= {1, 1024, 4096} for d in case.datas()) and \
        any(n > 1 for d in case.datas() for n in d.shape) and \
        not any(size in text for size in ("1000", "1024", "4096"))


def cases():
    """Every case of every kind (its inputs described, not made)."""
    out = []
    for case in standard_cases():
        out.append(case)
        floats = [d for d in case.datas() if d.dtype == np.float32]
        if floats and not case.updates and not case.held():
            out.append(case.derived("backward", case.label + " backward", lambda d: d))
        if _scales(case):
            small = lambda d: d.but(shape=d.small or tuple(SMALL if n > 1 else 1 for n in d.shape))  # noqa: E731
            label = case.label.replace("1024", str(SMALL)).replace("4096", str(SMALL))
            out.append(case.derived("small", "%s (x%d in one program)" % (label, SMALL_REPEATS), small))
        if floats and "dtype" not in repr(case.attrs):
            out.append(case.derived("fp64", case.label.replace(" [", " fp64 [", 1),
                                    lambda d: d.but(dtype="float64") if d.dtype == np.float32 else d))
        if floats and case.op in INT64_OPS:
            out.append(case.derived("int64", case.label.replace(" [", " int64 [", 1),
                                    lambda d: d.but(dtype="int64", lo=-100, hi=100) if d.dtype == np.float32 else d))
    return out


def _lens(count, lo, hi):
    """One LoD level: `count` sequence lengths in [lo, hi], from a fixed seed."""
    return [[int(n) for n in np.random.RandomState(7).randint(lo, hi + 1, count)]]


def bandwidth_cases():
    """The ops PyTorch has no counterpart for (the sequence ops on LoD tensors), each at a
    standard shape, to be held against memcpy of the bytes they move: 1024 sequences of 16
    to 48 rows of 128 (about 16 MB), or of 512 to 1536 rows of one value."""
    short, long_ = _lens(1024, 16, 48), _lens(1024, 512, 1536)
    rows, long_rows = sum(short[0]), sum(long_[0])

    def seq(width=128, dtype="float32", lo=-1.0, hi=1.0):
        return Data((rows, width), dtype, lo, hi, lens=short)

    def ids(lo, hi):
        return Data((long_rows, 1), "int64", lo, hi, lens=long_)
    out = []

    def add(label, op, inputs, attrs, outputs=("Out",), updates=None):
        out.append(Case(label, op, inputs, list(outputs), attrs, None, "bandwidth", updates))
    per = "1024 sequences of [16-48, 128]"
    add("sequence_pool SUM of " + per, "sequence_pool", {"X": seq()}, {"pooltype": "SUM"})
    add("sequence_pool MAX of " + per, "sequence_pool", {"X": seq()}, {"pooltype": "MAX"}, ("Out", "MaxIndex"))
    add("sequence_reverse of " + per, "sequence_reverse", {"X": seq()}, {}, ("Y",))
    add("sequence_pad of " + per, "sequence_pad", {"X": seq(), "PadValue": Data((1,), lo=0, hi=0)},
        {"padded_length": -1}, ("Out", "Length"))
    add("sequence_unpad of [1024, 48, 128] to 16-48 rows", "sequence_unpad",
        {"X": Data((1024, 48, 128)), "Length": Data((1024,), "int64", 16, 49)}, {})
    add("sequence_expand_as of [1024, 128] to " + per, "sequence_expand_as",
        {"X": Data((1024, 128)), "Y": seq(width=1)}, {})
    add("sequence_expand of [1024, 128] by " + per, "sequence_expand",
        {"X": Data((1024, 128)), "Y": seq(width=1)}, {"ref_level": -1})
    add("sequence_concat of 2 x " + per, "sequence_concat", {"X": [seq(), seq()]}, {})
    add("sequence_slice 16 rows of each of " + per, "sequence_slice",
        {"X": seq(), "Offset": Data((1024, 1), "int64", 0, 1), "Length": Data((1024, 1), "int64", 16, 17)}, {})
    add("sequence_reshape of " + per + " to rows of 64", "sequence_reshape", {"X": seq()}, {"new_dim": 64})
    add("sequence_mask of 16384 lengths to 256", "sequence_mask", {"X": Data((16384,), "int64", 0, 257)},
        {"maxlen": 256}, ("Y",))
    add("sequence_enumerate windows of 4 in 1024 sequences of [512-1536] ids", "sequence_enumerate",
        {"X": ids(0, 1000)}, {"win_size": 4})
    add("sequence_erase of 3 ids from 1024 sequences of [512-1536] ids", "sequence_erase",
        {"X": ids(0, 100)}, {"tokens": [1, 2, 3]})
    add("sequence_scatter of 1024 sequences of 32 updates into [1024, 1024]", "sequence_scatter",
        {"X": Data((1024, 1024)), "Ids": Data((32768, 1), "int64", 0, 1024, lens=[[32] * 1024]),
         "Updates": Data((32768, 1), lens=[[32] * 1024])}, {})
    add("lod_reset of " + per, "lod_reset", {"X": seq()}, {"target_lod": [0, rows // 2, rows]})
    get = Held("selected_rows", [Data((65536,), "int64", 0, 100000), seq(width=64).but(shape=(65536, 64))],
               height=100000)
    add("get_tensor_from_selected_rows of 65536 rows of [100000, 64]", "get_tensor_from_selected_rows", {"X": get}, {})
    # The sentences of 32 steps of beam search over 1024 sources, a beam of 4: each step's
    # selection as beam_search writes it (4 prefixes a source, one candidate each), none ended.
    steps = [[4] * 1024, [1] * 4096]
    add("beam_search_decode of 32 steps of 1024 sources, beam 4", "beam_search_decode",
        {"Ids": Held("array", [Data((4096, 1), "int64", 1, 30000, seed=t, lens=steps) for t in range(32)]),
         "Scores": Held("array", [Data((4096, 1), lo=-5, hi=0, seed=t, lens=steps) for t in range(32)])},
        {"beam_size": 4, "end_id": 0}, ("SentenceIds", "SentenceScores"))
    # IfElse's split of a batch's sequences by a mask, and the merge of the two branches.
    mask = Data((1024, 1), "bool", seed=3)
    taken = mask.make()[:, 0]
    branch = [[n for n, t in zip(short[0], taken) if t]], [[n for n, t in zip(short[0], taken) if not t]]
    add("split_lod_tensor of " + per + " by a mask", "split_lod_tensor", {"X": seq(), "Mask": mask}, {"level": 0},
        ("OutTrue", "OutFalse"))
    for op in ("merge_lod_tensor", "merge_lod_tensor_infer"):
        add("%s of %s by a mask" % (op, per), op,
            {"X": seq(), "Mask": mask, "InTrue": Data((sum(branch[0][0]), 128), lens=branch[0]),
             "InFalse": Data((sum(branch[1][0]), 128), lens=branch[1])}, {"level": 0})
    add("row_conv of 4 rows over " + per, "row_conv", {"X": seq(), "Filter": Data((4, 128))}, {})
    add("ctc_align of 1024 sequences of [512-1536] ids, 4 classes", "ctc_align", {"Input": ids(0, 4)},
        {"blank": 0, "merge_repeated": True}, ("Output",))
    add("chunk_eval IOB of 1024 sequences of [512-1536] tags", "chunk_eval",
        {"Inference": ids(0, 9), "Label": ids(0, 9)}, {"num_chunk_types": 4, "chunk_scheme": "IOB"},
        ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"))
    # Fluid's optimizers PyTorch has none of, on a [1024, 4096] parameter, updated in place.
    param = {"Param": Data((1024, 4096)), "Grad": Data((1024, 4096)), "LearningRate": Data((1,), lo=0.01, hi=0.01)}
    for op, state, attrs in (("lars_momentum", {"Velocity": Data((1024, 4096))}, {"mu": 0.9, "lars_weight_decay": 0.0005}),
                             ("decayed_adagrad", {"Moment": Data((1024, 4096), lo=0, hi=1)}, {"decay": 0.95}),
                             ("ftrl", {"SquaredAccumulator": Data((1024, 4096), lo=0.1, hi=1),
                                       "LinearAccumulator": Data((1024, 4096))}, {"l1": 0.1, "l2": 0.1})):
        updates = dict({"ParamOut": "Param"},
                       **{("SquaredAccumOut" if slot == "SquaredAccumulator" else
                           "LinearAccumOut" if slot == "LinearAccumulator" else slot + "Out"): slot for slot in state})
        add("%s [1024, 4096]" % op, op, dict(param, **state), attrs, list(updates), updates)
    return out


# Timed against nn.LSTM and nn.GRU on packed sequences by bench/rnn_compare.py.
RNNS = {"lstm", "lstmp", "gru"}
# Timed against torchvision and numpy at a detector's shapes by bench/detection_compare.py.
DETECTION = {"box_coder", "density_prior_box", "iou_similarity", "matrix_nms", "multiclass_nms", "multiclass_nms2",
             "multiclass_nms3", "prior_box", "roi_align", "roi_pool", "yolo_box"}


def _levenshtein():
    """python-Levenshtein's distance of each pair of sequences (ids of two flat tensors, cut by
    `lengths`), over the reference's length: its inputs turned into strings on the first call
    with those tensors, as its users hold them, so that a call times the distances alone."""
    import Levenshtein
    strings = {}

    def distances(hyps, refs, lengths):
        key = (hyps.data_ptr(), refs.data_ptr())
        if key not in strings:
            ends = np.cumsum(lengths)
            cut = lambda t: ["".join(chr(0x100 + int(i)) for i in seq) for seq in np.split(t.numpy().ravel(), ends[:-1])]  # noqa: E731
            strings[key] = list(zip(cut(hyps), cut(refs)))
        return [Levenshtein.distance(a, b) / len(b) for a, b in strings[key]]
    return distances


def _torch_env():
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(THREADS)
    return {"torch": torch, "F": F, "levenshtein": _levenshtein()}


def _per_call(fn):
    return per_call(fn, min_seconds=0.1, min_calls=3)


def _torch_timer(case, env, grad_slots):
    """(a function timing one round of `case` in torch, whether torch's gradients are the
    incoming gradient itself or views of it, computing nothing), or None where torch has no
    gradient for it."""
    torch = env["torch"]
    tensors = {}
    for slot, value in case.arrays().items():
        grads = slot in grad_slots
        as_tensor = lambda a: torch.from_numpy(a).requires_grad_(grads)  # noqa: E731
        tensors[slot] = [as_tensor(a) for a in value] if isinstance(value, list) else as_tensor(value)
    scope = dict(env, **tensors)
    if case.kind == "small":
        code = compile("for _ in range(%d):\n    %s" % (SMALL_REPEATS, case.torch), case.label, "exec")
        return (lambda: _per_call(lambda: exec(code, scope))), False
    code = compile(case.torch, case.label, "eval")
    if case.kind != "backward":
        return (lambda: _per_call(lambda: eval(code, scope))), False
    out = eval(code, scope)
    out = out[0] if isinstance(out, (list, tuple)) else out
    if not out.requires_grad:
        return None
    leaves = [t for slot in grad_slots for t in (tensors[slot] if isinstance(tensors[slot], list) else [tensors[slot]])]
    torch.manual_seed(0)
    grad = torch.rand_like(out)

    # A gradient torch returns as a view (of a broadcast, a transpose, a slice) is made
    # dense, as Rill's always are: its cost is otherwise paid by whatever reads it.
    def gradients():
        return [g.contiguous() for g in torch.autograd.grad(out, leaves, grad, retain_graph=True)]
    aliased = all(g.storage().data_ptr() == grad.storage().data_ptr() for g in gradients())
    return (lambda: _per_call(gradients)), aliased


def peer_server():
    """PyTorch's side: reads a request per line on stdin (a JSON [label, gradient slots]) and
    answers with one round (a JSON [seconds per call, whether its gradients alias the
    incoming one]; null where torch has no gradient), a case's inputs made when its label
    first comes."""
    env = _torch_env()
    by_label = {case.label: case for case in cases()}
    ready = {}
    for line in sys.stdin:
        label, grad_slots = json.loads(line)
        backward = by_label[label].kind == "backward"
        if label not in ready:
            ready.clear()  # one case's inputs at a time
            with env["torch"].set_grad_enabled(backward):
                ready[label] = _torch_timer(by_label[label], env, set(grad_slots))
        answer = None
        if ready[label] is not None:
            timer, aliased = ready[label]
            with env["torch"].set_grad_enabled(backward):
                answer = [timer(), aliased]
        print(json.dumps(answer), flush=True)


def rill_program(case, repeats=1):
    """The case's program (its op `repeats` times), its feed (rill.empty arrays, borrowed,
    not copied) and its held inputs ({name: (Held, its arrays)}, for the scope)."""
    import rill
    import rill.fluid as fluid
    prog = fluid.Program()
    block = prog.global_block()
    feed, inputs, held = {}, {}, {}
    for slot, value in case.arrays().items():
        if isinstance(case.inputs[slot], Held):
            name = "%s_0" % slot
            held[name] = (case.inputs[slot], value)
            block.create_var(name=name, persistable=True)
            inputs[slot] = [name]
            continue
        arrays = value if isinstance(value, list) else [value]
        described = case.inputs[slot] if isinstance(case.inputs[slot], list) else [case.inputs[slot]]
        names = []
        for i, (a, data) in enumerate(zip(arrays, described)):
            name = "%s_%d" % (slot, i)
            borrowed = rill.empty(a.shape, a.dtype)
            borrowed[...] = a
            feed[name] = borrowed if data.lens is None else fluid.create_lod_tensor(borrowed, data.lens,
                                                                                  fluid.CPUPlace())
            block.create_var(name=name, shape=a.shape, dtype=a.dtype, lod_level=0 if data.lens is None else 1)
            names.append(name)
        inputs[slot] = names
    outputs = {}
    for slot, name in zip(case.outputs, case.output_names()):
        if slot not in case.updates:
            block.create_var(name=name)
        outputs.setdefault(slot, []).append(name)
    for _ in range(repeats):
        block.append_op(type=case.op, inputs=inputs, outputs=outputs, attrs=case.attrs)
    return prog, feed, held


def _scoped_runner(case, exe, prog, feed, held, scope):
    """A function running `prog` in `scope`, which holds the `held` inputs: fed `feed` each
    run, or, where the case updates inputs in place, as a training program's parameters and
    optimizer state are, with those inputs variables of the scope, fed once (copied, so that
    the scope owns them)."""
    for name, (h, arrays) in held.items():
        h.put(scope, name, arrays)
    if not case.updates:
        return lambda: exe.run(prog, feed=feed, fetch_list=[], scope=scope)
    for name in feed:
        prog.global_block().var(name).persistable = True
    exe.run(prog, feed={name: np.array(value) for name, value in feed.items()}, fetch_list=[], scope=scope)
    return lambda: exe.run(prog, feed={}, fetch_list=[], scope=scope)


def rill_runner(case, exe):
    """(a function running the case once in Rill, the input slots given gradients, the bytes
    of those gradients): for a backward case the program holds the gradient ops alone, the
    forward outputs they read made by one forward run into a scope of their own."""
    import rill
    import rill.fluid as fluid
    if case.kind != "backward":
        prog, feed, held = rill_program(case, SMALL_REPEATS if case.kind == "small" else 1)
        return _scoped_runner(case, exe, prog, feed, held, fluid.Scope()), [], 0
    from rill.fluid.backward import _run_pass
    prog, feed, _ = rill_program(case)  # (a case with held inputs has no backward kind)
    block = prog.global_block()
    outputs = ["out_%d" % i for i in range(len(case.outputs))]
    for name in outputs:
        block.var(name).persistable = True
    # Each fed name's Data (a LoD feed is a LoDTensor, not an array to ask).
    described = {"%s_%d" % (slot, i): d for slot, v in case.inputs.items()
                 for i, d in enumerate(v if isinstance(v, list) else [v])}
    sources = [name for name, d in described.items() if d.dtype == np.float32]
    pairs = _run_pass(prog, outputs[0], sources)
    if not pairs:
        raise ValueError("no gradient reaches its inputs")
    grad_slots = sorted(set(source.rsplit("_", 1)[0] for source, _ in pairs))
    grad_bytes = sum(int(np.prod(described[source].shape)) * described[source].dtype.itemsize for source, _ in pairs)
    scope = fluid.Scope()
    forward = fluid.Program()
    forward.global_block().ops.append(block.ops[0])
    forward.global_block().vars.update(block.vars)
    forward._bump()
    value = exe.run(forward, feed=feed, fetch_list=[outputs[0]], scope=scope)[0]
    seed = rill.empty(value.shape, value.dtype)
    seed[...] = np.random.RandomState(1).uniform(0, 1, value.shape)
    seeded = next(i for i, op in enumerate(block.ops) if outputs[0] + "@GRAD" in op.output_arg_names)
    del block.ops[:seeded + 1]
    prog._bump()
    feed = dict(feed, **{outputs[0] + "@GRAD": seed})
    return (lambda: exe.run(prog, feed=feed, fetch_list=[], scope=scope)), grad_slots, grad_bytes


def paired_times(rounds, only, kinds):
    """({label: (Rill's median, PyTorch's median, the median of the rounds' ratios)}, the same
    with memcpy for PyTorch, {label: why not timed}): each round times PyTorch (in its own
    process) and then Rill, so that both meet the machine's load of the moment, and the ratio
    is taken round by round, so that a round the machine's neighbours slowed moves both. A gradient PyTorch returns without
    computing it (the incoming gradient itself, or views of it) is held against memcpy of
    the bytes Rill's gradients hold instead, timed in the same round: Fluid's gradients are
    variables of their own."""
    import rill.fluid as fluid
    exe = fluid.Executor(fluid.CPUPlace())
    # OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, set on these machines, slow a current OpenBLAS
    # (PyTorch's BLAS): the peer runs without them.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--peer-server"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    times, copies, refused = {}, {}, {}
    try:
        for case in cases():
            if (only and case.op not in only) or case.kind not in kinds:
                continue
            try:
                run, grad_slots, grad_bytes = rill_runner(case, exe)
                run()
            except Exception as e:  # a kind the op does not take: listed, not timed
                refused[case.label] = str(e).strip().splitlines()[0][:160]
                continue
            ours, theirs, aliased = [], [], False
            for warm_up in [True] + [False] * rounds:
                server.stdin.write(json.dumps([case.label, grad_slots]) + "\n")
                server.stdin.flush()
                answer = server.stdout.readline()
                if not answer:
                    sys.exit("the PyTorch side stopped at %r" % case.label)
                if json.loads(answer) is None:
                    break
                seconds, aliased = json.loads(answer)
                mine = _per_call(run)
                if not warm_up:
                    theirs.append(_memcpy_seconds(grad_bytes) if aliased else seconds)
                    ours.append(mine)
            if not theirs:
                refused[case.label] = "PyTorch has no gradient for it"
                continue
            ratio = statistics.median(a / b for a, b in zip(ours, theirs))
            (copies if aliased else times)[case.label] = (statistics.median(ours), statistics.median(theirs), ratio)
    finally:
        server.stdin.close()
        server.wait()
    return times, copies, refused


def bandwidth_times(rounds, only):
    """({label: (Rill's median, memcpy's median, the median of the rounds' ratios)}, {label:
    why not timed}) for bandwidth_cases(): Rill's time against np.copyto of half the bytes
    the op reads and writes (its inputs and outputs whole; memcpy reads each byte it
    copies and writes it), timed in the same round, so that a ratio of 2 is half memcpy's
    bandwidth."""
    import rill.fluid as fluid
    exe = fluid.Executor(fluid.CPUPlace())
    times, refused = {}, {}
    for case in bandwidth_cases():
        if only and case.op not in only:
            continue
        prog, feed, held = rill_program(case)
        for name in case.output_names():
            prog.global_block().var(name).persistable = True  # kept in `scope`, to be measured
        scope = fluid.Scope()
        try:
            run = _scoped_runner(case, exe, prog, feed, held, scope)
            run()
        except Exception as e:
            refused[case.label] = str(e).strip().splitlines()[0][:160]
            continue
        moved = sum(a.nbytes for v in case.arrays().values() for a in (v if isinstance(v, list) else [v]))
        moved += sum(np.array(scope.find_var(name).get_tensor()).nbytes for name in case.output_names())
        ours, copies = [], []
        for _ in range(rounds):
            copies.append(_memcpy_seconds(moved // 2))
            ours.append(_per_call(run))
        ratio = statistics.median(a / b for a, b in zip(ours, copies))
        times[case.label] = (statistics.median(ours), statistics.median(copies), ratio)
    return times, refused


def _memcpy_seconds(nbytes):
    """One round of memcpy (numpy's copyto: one thread) of nbytes."""
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    return _per_call(lambda: np.copyto(dst, src))


def registry_ops():
    rill_binary = os.environ.get("RILL_BINARY", os.path.join(HERE, "..", "build", "bin", "rill"))
    listing = subprocess.run([rill_binary, "--plugins", "math", "ops"], capture_output=True, text=True, check=True)
    return sorted(line.split()[0] for line in listing.stdout.splitlines()
                  if line.strip() and not line.split()[0].endswith("_grad"))


def main():
    keep_freed_memory()
    if "--peer-server" in sys.argv:
        return peer_server()
    only = set(sys.argv[sys.argv.index("--only") + 1].split(",")) if "--only" in sys.argv else None
    kinds = sys.argv[sys.argv.index("--kinds") + 1].split(",") if "--kinds" in sys.argv else KINDS
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        sys.exit("--kinds: unknown %s (the kinds are %s)" % (", ".join(unknown), ", ".join(KINDS)))
    times, copies, refused = paired_times(ROUNDS, only, [k for k in kinds if k != "bandwidth"])
    bandwidth, bandwidth_refused = bandwidth_times(ROUNDS, only) if "bandwidth" in kinds else ({}, {})
    refused.update(bandwidth_refused)
    kind_of = {c.label: c.kind for c in cases()}
    print("| op, shape (fp32 unless named) | Rill | PyTorch | Rill / PyTorch |")
    print("|---|---|---|---|")
    for label, (a, b, r) in times.items():
        print("| %s | %.3f ms | %.3f ms | %.2f |" % (label, a * 1e3, b * 1e3, r))
    print("\n%d threads each side, medians of %d paired rounds" % (THREADS, ROUNDS))
    for kind in kinds:
        rows = [(label, r) for label, (_, _, r) in times.items() if kind_of[label] == kind]
        if not rows:
            continue
        limit = 1.5 if kind in ("forward", "fp64", "int64") else 2.0
        print("\n%s: %d cases, geometric mean of Rill / PyTorch **%.2f**, %d above %.1f; slowest ten:"
              % (kind, len(rows), math.exp(sum(math.log(r) for _, r in rows) / len(rows)),
                 sum(r > limit for _, r in rows), limit))
        for label, r in sorted(rows, key=lambda row: -row[1])[:10]:
            print("  %.2f  %s" % (r, label))
    if copies:
        print("\ngradients PyTorch returns without computing them (the incoming gradient or views of it), Rill's "
              "against memcpy of the bytes they hold (%d; goal: at most 2, half memcpy's bandwidth):" % len(copies))
        for label, (a, b, r) in sorted(copies.items(), key=lambda row: -row[1][2]):
            print("  %.2f  %s (%.3f ms, memcpy %.3f ms)" % (r, label, a * 1e3, b * 1e3))
    if bandwidth:
        print("\nops PyTorch has no counterpart for, against memcpy of half the bytes they read and write (%d; goal: "
              "at most 2, half memcpy's bandwidth):" % len(bandwidth))
        for label, (a, b, r) in sorted(bandwidth.items(), key=lambda row: -row[1][2]):
            print("  %.2f  %s (%.3f ms, memcpy %.3f ms)" % (r, label, a * 1e3, b * 1e3))
    if refused:
        print("\nnot timed (%d):" % len(refused))
        for label, why in refused.items():
            print("  %s: %s" % (label, why))
    covered = {c.op for c in cases() + bandwidth_cases()}
    missing = [op for op in registry_ops()
               if op not in covered and op not in NOT_KERNELS and op not in DETECTION and op not in RNNS]
    print("\nops of the registry without a case yet (%d): %s" % (len(missing), " ".join(missing)))
    print("detection ops, timed by bench/detection_compare.py (%d): %s" % (len(DETECTION), " ".join(sorted(DETECTION))))
    print("recurrent ops, timed by bench/rnn_compare.py (%d): %s" % (len(RNNS), " ".join(sorted(RNNS))))
    print("not kernels to time one at a time (%d): %s" % (len(NOT_KERNELS), " ".join(sorted(NOT_KERNELS))))


if __name__ == "__main__":
    main()
