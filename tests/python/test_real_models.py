"""The inference models Paddle users saved and published (../shared/models, see its
README and real_models/SOURCES.md) run on Rill as Paddle runs them, and give what an
independent reference gives: tests/models/paddle_reference.py, which reads the model's files
itself and runs each op with numpy and PyTorch, none of Rill's kernels, in a process of its
own.

Each model runs at batch 1 and at a larger batch, on inputs made from the images and rows
its repository uses, through both front doors: `rill run DIR` and
rill.fluid.io.load_inference_model. Probabilities match to 1e-4 with the same top-1;
other values to 1e-4 relative; detections row for row. The model files are never part of
this repository: without ../shared/models every case skips, saying so. text_cnn's feed
packs sequences: its LoD, from the lengths of its repository's test lines, goes in by
--feed-lod and by fluid.create_lod_tensor.
"""
import glob
import os
import subprocess

import numpy as np
import pytest

import rill.fluid as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "models", "paddle_reference.py")

SHARED = os.environ.get("RILL_SHARED_MODELS", os.path.join(HERE, "..", "..", "..", "shared", "models"))
REAL = os.path.join(SHARED, "real_models")
MODELS = ["fit_a_line", "abalone", "recognize_digits_conv", "cifar_resnet", "mlp_2018", "dqn", "word2vec",
          "ppocr_cls", "ppyolo_tiny", "text_cnn"]


def _lod(case, feed, rows):
    """The level-1 offsets of a feed that packs sequences, or None: text_cnn's words are its
    test lines' ids, one sequence per line, as many lines as make up the rows fed."""
    if not case.startswith("text_cnn") or feed != "words":
        return None
    offsets = [0]
    with open(os.path.join(REAL, "images", "text_cnn_test_list.txt")) as lines:
        for line in lines:
            if offsets[-1] >= rows:
                break
            offsets.append(offsets[-1] + len(line.split("\t")[0].split(",")))
    assert offsets[-1] == rows, "%s: the test lines' lengths %s do not add up to %d rows" % (case, offsets, rows)
    return offsets


def _cases():
    """(id, model directory, {feed: .npy path}) for every case the shared models have."""
    cases = []
    for model in MODELS:
        names = sorted(set(os.path.basename(f).split("__")[0]
                           for f in glob.glob(os.path.join(REAL, "inputs", model + "*__*.npy"))))
        for case in names:
            if case != model and not case.startswith(model + "_b"):
                continue
            feeds = {os.path.basename(f)[len(case) + 2:-4]: f
                     for f in sorted(glob.glob(os.path.join(REAL, "inputs", case + "__*.npy")))}
            cases.append((case, os.path.join(REAL, "models", model), feeds))
    # Paddle 2.1's MNIST MLP in its two layouts, on one digit and on all three.
    digits = sorted(glob.glob(os.path.join(SHARED, "hand_writing", "inputs", "*.npy")))
    for layout in ("model", "combined"):
        directory = os.path.join(SHARED, "hand_writing", layout)
        if digits:
            cases.append(("hand_writing_%s" % layout, directory, {"image": digits[:1]}))
            cases.append(("hand_writing_%s_b%d" % (layout, len(digits)), directory, {"image": digits}))
    return cases


CASES = _cases() if os.path.isdir(SHARED) else []
pytestmark = pytest.mark.skipif(not CASES, reason="no real models: %s is absent (CI and the development "
                                "machines have ../shared; set RILL_SHARED_MODELS elsewhere)" % SHARED)


def _feeds(spec, tmp_path):
    """{feed: array} and {feed: .npy path} of a case (several files of one feed are stacked)."""
    arrays, paths = {}, {}
    for name, files in spec.items():
        if isinstance(files, list):
            arrays[name] = np.concatenate([np.load(f) for f in files])
            paths[name] = str(tmp_path / (name + ".npy"))
            np.save(paths[name], arrays[name])
        else:
            arrays[name] = np.load(files)
            paths[name] = files
    return arrays, paths


_REFERENCE_OF = {}  # case -> the reference's fetches: both tests of a case use one run


def _reference(case, directory, paths, tmp_path):
    """The reference's fetches ({name: array}, in col order), computed in a process of its
    own: Debian's python3 with numpy and PyTorch, none of this process's sanitizer runtime."""
    if case in _REFERENCE_OF:
        return _REFERENCE_OF[case]
    out = str(tmp_path / "reference.npz")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    args = ["/usr/bin/python3", REFERENCE, directory, out] + ["%s=%s" % kv for kv in paths.items()]
    for name, path in paths.items():
        lod = _lod(case, name, np.load(path).shape[0])
        if lod is not None:
            args.append("%s@lod=%s" % (name, ",".join(map(str, lod))))
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        _REFERENCE_OF[case] = {str(name): z["f%d" % k] for k, name in enumerate(z["__order__"])}
    return _REFERENCE_OF[case]


def _assert_matches(got, want, what):
    assert got.shape == want.shape, "%s: shape %s, the reference's %s" % (what, got.shape, want.shape)
    rows = want.reshape(want.shape[0], -1) if want.ndim else want.reshape(1, 1)
    if want.dtype.kind == "f" and want.ndim == 2 and want.shape[1] == 6 and "nms" in what:
        # Detections: labels equal, then scores and boxes.
        np.testing.assert_array_equal(got[:, 0], want[:, 0], err_msg=what + ": labels")
        np.testing.assert_allclose(got[:, 1:], want[:, 1:], rtol=1e-4, atol=1e-4 * np.abs(want[:, 1:]).max(),
                                   err_msg=what)
    elif want.dtype.kind == "f" and rows.shape[1] > 1 and np.all(rows >= 0) and np.allclose(rows.sum(1), 1, atol=1e-3):
        # Probabilities.
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0, err_msg=what)
        np.testing.assert_array_equal(got.reshape(rows.shape).argmax(1), rows.argmax(1), err_msg=what + ": top-1")
    elif want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(want).max()), err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("case,directory,feeds", CASES, ids=[c[0] for c in CASES])
def test_rill_run_matches_the_reference(case, directory, feeds, tmp_path):
    arrays, paths = _feeds(feeds, tmp_path)
    want = _reference(case, directory, paths, tmp_path)
    saved = tmp_path / "fetched"
    args = [os.environ["RILL_BINARY"], "run", directory, "--save", str(saved)]
    for name, path in paths.items():
        args += ["--feed", "%s=%s" % (name, path)]
        lod = _lod(case, name, arrays[name].shape[0])
        if lod is not None:
            args += ["--feed-lod", "%s=%s" % (name, ",".join(map(str, lod)))]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for name, value in want.items():
        got = np.load(str(saved / (name.replace("/", "_") + ".npy")))
        _assert_matches(got, value, "%s: %s" % (case, name))


@pytest.mark.parametrize("case,directory,feeds", CASES, ids=[c[0] for c in CASES])
def test_load_inference_model_matches_the_reference(case, directory, feeds, tmp_path):
    arrays, paths = _feeds(feeds, tmp_path)
    want = _reference(case, directory, paths, tmp_path)
    exe = fluid.Executor(fluid.CPUPlace())
    program, feed_names, fetch_targets = fluid.io.load_inference_model(directory, exe)
    assert sorted(feed_names) == sorted(arrays)
    for name, value in list(arrays.items()):
        lod = _lod(case, name, value.shape[0])
        if lod is not None:
            arrays[name] = fluid.create_lod_tensor(value, [list(np.diff(lod))], fluid.CPUPlace())
    got = exe.run(program, feed=arrays, fetch_list=fetch_targets)
    assert [v.name for v in fetch_targets] == list(want)
    for value, (name, expected) in zip(got, want.items()):
        _assert_matches(np.asarray(value), expected, "%s: %s" % (case, name))
