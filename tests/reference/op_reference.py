"""Runs ops under `rill run` on numpy inputs and compares their outputs with a reference
(numpy's, or anything nobody here wrote). The shared part of tests/reference/*.py.

run_ops writes the inputs as .npy files and a program of one op per case (its inputs: X, or
the slots it names; Out: its output), runs it once, and returns the outputs as numpy
arrays.
"""
import os
import subprocess

import numpy as np

FLUID_DTYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.int32): "INT32",
                np.dtype(np.int64): "INT64", np.dtype(np.bool_): "BOOL", np.dtype(np.int8): "INT8",
                np.dtype(np.int16): "INT16"}


def declare(name, value):
    """The text-format declaration of variable `name`, a tensor like `value`."""
    dims = "".join(" dims: %d" % d for d in value.shape)
    return ('vars { name: "%s" type { type: LOD_TENSOR lod_tensor { tensor { data_type: %s%s } } } }\n'
            % (name, FLUID_DTYPES[value.dtype], dims))


def run_program(rill, work, tag, program, feeds, fetch):
    """Runs `program` under `rill run` with each feed (name -> array, as a .npy file in
    `work`); returns the fetched variables (name -> array); raises RuntimeError with rill's
    message."""
    saved = os.path.join(work, tag)
    argv = [rill, "run", program, "--save", saved]
    for name, value in feeds.items():
        path = os.path.join(work, "%s_%s.npy" % (tag, name))
        np.save(path, value)
        argv += ["--feed", "%s=%s" % (name, path)]
    for name in fetch:
        argv += ["--fetch", name]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("rill run %s exited %d: %s" % (program, r.returncode, r.stderr))
    return {name: np.load(os.path.join(saved, name.replace("/", "_") + ".npy")) for name in fetch}


def run_ops(rill, work, tag, inputs, cases):
    """inputs: name -> array; cases: (op type, text-format attrs, input name for X or a
    dict slot -> input name or list of names[, output slots]). Returns each case's Out, or the list of its
    output slots' values when it names them, in case order; raises RuntimeError with
    rill's message."""
    os.makedirs(work, exist_ok=True)
    decl = "".join(declare(name, value) for name, value in inputs.items())
    def slots(x):
        named = x if isinstance(x, dict) else {"X": x}
        return " ".join('inputs { parameter: "%s" %s }' % (slot, " ".join('arguments: "%s"' % a for a in
                                                                           (args if isinstance(args, list) else [args])))
                        for slot, args in named.items())
    outputs = [case[3] if len(case) > 3 else ["Out"] for case in cases]
    ops = "".join('ops { type: "%s" %s %s %s }\n'
                  % (case[0], slots(case[2]),
                     " ".join('outputs { parameter: "%s" arguments: "out%d_%s" }' % (o, k, o) for o in outputs[k]),
                     case[1]) for k, case in enumerate(cases))
    program = os.path.join(work, tag + ".pbtxt")
    with open(program, "w") as f:
        f.write("blocks { idx: 0 parent_idx: -1\n" + decl + ops + "}\n")
    names = [["out%d_%s" % (k, o) for o in outputs[k]] for k in range(len(cases))]
    got = run_program(rill, work, tag, program, inputs, [n for ns in names for n in ns])
    loaded = [[got[n] for n in ns] for ns in names]
    return [values if len(cases[k]) > 3 else values[0] for k, values in enumerate(loaded)]


def matches(label, got, want, tol=0.0):
    """Prints ok or FAIL for `got` against `want` (same dtype and shape, and values within
    `tol` relative to max(1, |want|)); returns whether it matched."""
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        print("FAIL: %s: %s %s, want %s %s" % (label, got.dtype, got.shape, want.dtype, want.shape))
        return False
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) / np.maximum(1, np.abs(want.astype(np.float64)))
    err = float(diff.max()) if diff.size else 0.0
    if not err <= tol:
        print("FAIL: %s: max relative error %g (tolerance %g)" % (label, err, tol))
        return False
    print("ok: %s: max relative error %.1e" % (label, err))
    return True


def attrs(**kv):
    """Text-format attributes from Python values: bool BOOLEAN, int INT, float FLOAT, str
    STRING, a list of ints INTS (LONGS when one is past int32), a list with a float FLOATS."""
    out = []
    for name, v in kv.items():
        if isinstance(v, bool):
            out.append('attrs { name: "%s" type: BOOLEAN b: %s }' % (name, "true" if v else "false"))
        elif isinstance(v, int):
            out.append('attrs { name: "%s" type: INT i: %d }' % (name, v))
        elif isinstance(v, float):
            out.append('attrs { name: "%s" type: FLOAT f: %r }' % (name, v))
        elif isinstance(v, str):
            out.append('attrs { name: "%s" type: STRING s: "%s" }' % (name, v))
        elif any(isinstance(i, float) for i in v):
            out.append('attrs { name: "%s" type: FLOATS %s }' % (name, " ".join("floats: %r" % float(i) for i in v)))
        elif any(abs(i) >= 2 ** 31 for i in v):
            out.append('attrs { name: "%s" type: LONGS %s }' % (name, " ".join("longs: %d" % i for i in v)))
        else:
            out.append('attrs { name: "%s" type: INTS %s }' % (name, " ".join("ints: %d" % i for i in v)))
    return " ".join(out)


def run_cases(rill, work, tag, inputs, cases):
    """run_ops, printing FAIL and returning None when rill fails."""
    try:
        return run_ops(rill, work, tag, inputs, cases)
    except RuntimeError as e:
        print("FAIL: %s: %s" % (tag, e))
        return None
