"""The detection ops against their peers, at a YOLOv3 detector's shapes (80 classes, a 320x320
input: heads of 10x10, 20x20 and 40x40 cells, 3 anchors each, 6,300 boxes an image), batch 8;
medians over ROUNDS, the peers in a process of their own (PyTorch's OpenMP runtime and
Rill's do not meet).

    PYTHONPATH=build/python /usr/bin/python3 bench/detection_compare.py [ROUNDS]

- multiclass_nms3 (score threshold 0.01, 1,000 a class, IoU 0.45, 100 an image kept) against
  torchvision.ops.batched_nms per image over the boxes above the threshold (each class's
  best 1,000) and the 100 best kept: the same work torchvision's way.
- yolo_box of the 40x40 head (the largest) against tests/models/paddle_reference.py's numpy
  decoding at the same shape (PyTorch and torchvision have no such op).
- matrix_nms (score threshold 0.01, 400 a class, 100 an image kept, linear decay) at the same
  boxes and scores against tests/reference/detection_reference.py's numpy Matrix NMS.
- roi_align at a Faster R-CNN head's shapes (a 256x50x68 map an image, 512 regions an image,
  7x7 bins, 2x2 samples, 1/16 scale, aligned) against torchvision.ops.roi_align, and roi_pool
  (Fast R-CNN's max pooling, 7x7 bins, 1/16 scale) at the same regions against
  torchvision.ops.roi_pool.
- box_coder decoding every box of the batch against its 6,300 priors, and iou_similarity of
  2,000 boxes against 2,000, against detection_reference.py's numpy.
Prints a Markdown table; a ratio below 1 means Rill is faster. The peers run with PyTorch's
default threads, Rill with its own (both use the machine's cores).
Every process runs with glibc's malloc keeping freed memory (timing.keep_freed_memory).
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from timing import keep_freed_memory

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--peer" else 7
HERE = os.path.dirname(os.path.abspath(__file__))
N, CLASSES, ANCHORS = 8, 80, 3
CELLS = [10, 20, 40]
M = ANCHORS * sum(c * c for c in CELLS)
NMS = dict(background_label=-1, score_threshold=0.01, nms_top_k=1000, nms_threshold=0.45, keep_top_k=100,
           normalized=False)
MATRIX = dict(background_label=-1, score_threshold=0.01, post_threshold=0.01, nms_top_k=400, keep_top_k=100,
              normalized=False)
ROI = dict(pooled_height=7, pooled_width=7, spatial_scale=1.0 / 16, sampling_ratio=2, aligned=True)
ROI_POOL = dict(pooled_height=7, pooled_width=7, spatial_scale=1.0 / 16)
ROI_N, ROI_C, ROI_H, ROI_W, ROI_PER_IMAGE = 2, 256, 50, 68, 512
IOU_BOXES = 2000
YOLO = dict(anchors=[10, 13, 16, 30, 33, 23], class_num=CLASSES, conf_thresh=0.01, downsample_ratio=8,
            scale_x_y=1.05)


def inputs():
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 300, (N, M, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(5, 60, (N, M, 2))], -1).astype(np.float32)
    # Mostly low scores, a few confident boxes: a trained detector's picture.
    scores = (rng.uniform(0, 1, (N, CLASSES, M)) ** 8).astype(np.float32)
    head = rng.standard_normal((N, ANCHORS * (5 + CLASSES), CELLS[-1], CELLS[-1])).astype(np.float32)
    img = np.tile(np.array([[320, 320]], np.int32), (N, 1))
    features = rng.standard_normal((ROI_N, ROI_C, ROI_H, ROI_W)).astype(np.float32)
    corner = rng.uniform(0, 16 * np.array([ROI_W, ROI_H]) - 64, (ROI_N * ROI_PER_IMAGE, 2))
    regions = np.concatenate([corner, corner + rng.uniform(16, 400, corner.shape)], -1).astype(np.float32)
    priors = boxes[0]
    offsets = (rng.standard_normal((N, M, 4)) * 0.2).astype(np.float32)
    return boxes, scores, head, img, features, regions, priors, offsets


def median_seconds(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peer(rounds):
    """torchvision's NMS and the numpy yolo decoding; prints their medians as JSON."""
    import torch
    from torchvision.ops import batched_nms
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
    import paddle_reference
    from torchvision.ops import roi_align, roi_pool
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
    import detection_reference
    boxes, scores, head, img, features, regions, priors, offsets = inputs()
    tb, ts = torch.from_numpy(boxes), torch.from_numpy(scores)
    image_of = np.repeat(np.arange(ROI_N), ROI_PER_IMAGE).astype(np.float32)[:, None]
    tf, tr = torch.from_numpy(features), torch.from_numpy(np.hstack([image_of, regions]))

    def nms():
        for i in range(N):
            s = ts[i]
            keep_class = []
            for c in range(CLASSES):
                above = torch.nonzero(s[c] > NMS["score_threshold"]).flatten()
                if above.numel() > NMS["nms_top_k"]:
                    above = above[torch.topk(s[c][above], NMS["nms_top_k"]).indices]
                keep_class.append((above, torch.full_like(above, c)))
            idx = torch.cat([k for k, _ in keep_class])
            labels = torch.cat([c for _, c in keep_class])
            kept = batched_nms(tb[i][idx], s[labels, idx], labels, NMS["nms_threshold"])
            kept[:NMS["keep_top_k"]]

    def yolo():
        paddle_reference._yolo_box(head, img, YOLO)

    def roi():
        roi_align(tf, tr, (7, 7), spatial_scale=ROI["spatial_scale"], sampling_ratio=2, aligned=True)

    def pool():
        roi_pool(tf, tr, (7, 7), spatial_scale=ROI_POOL["spatial_scale"])
    decode = dict(code_type="decode_center_size", box_normalized=False)
    print(json.dumps({
        "nms": median_seconds(nms, rounds), "yolo": median_seconds(yolo, rounds),
        "matrix": median_seconds(lambda: detection_reference.matrix_nms(boxes, scores, MATRIX), rounds),
        "roi": median_seconds(roi, rounds),
        "roi_pool": median_seconds(pool, rounds),
        "coder": median_seconds(lambda: detection_reference.box_coder(priors, None, offsets, decode), rounds),
        "iou": median_seconds(lambda: detection_reference.iou_similarity(boxes[0, :IOU_BOXES], boxes[1, :IOU_BOXES],
                                                                          False), rounds)}))


def rill_times(rounds):
    import rill.fluid as fluid
    boxes, scores, head, img, features, regions, priors, offsets = inputs()
    exe = fluid.Executor(fluid.CPUPlace())

    def program(op, ins, outs, attrs):
        prog = fluid.Program()
        block = prog.global_block()
        for name, value in ins.items():
            block.create_var(name=name, shape=value.shape, dtype=value.dtype)
        for name in outs.values():
            block.create_var(name=name)
        block.append_op(type=op, inputs={k: [k] for k in ins}, outputs={k: [v] for k, v in outs.items()}, attrs=attrs)
        return prog, list(outs.values())

    nms_prog, nms_fetch = program("multiclass_nms3", {"BBoxes": boxes, "Scores": scores},
                                  {"Out": "out", "NmsRoisNum": "num", "Index": "index"}, NMS)
    yolo_prog, yolo_fetch = program("yolo_box", {"X": head, "ImgSize": img}, {"Boxes": "b", "Scores": "s"}, YOLO)
    counts = np.full((ROI_N,), ROI_PER_IMAGE, np.int32)
    timed = {
        "matrix": ("matrix_nms", {"BBoxes": boxes, "Scores": scores}, {"Out": "out", "Index": "index"}, MATRIX),
        "roi": ("roi_align", {"X": features, "ROIs": regions, "RoisNum": counts}, {"Out": "out"}, ROI),
        "roi_pool": ("roi_pool", {"X": features, "ROIs": regions, "RoisNum": counts}, {"Out": "out", "Argmax": "at"},
                     ROI_POOL),
        "coder": ("box_coder", {"PriorBox": priors, "TargetBox": offsets}, {"OutputBox": "out"},
                  dict(code_type="decode_center_size", box_normalized=False)),
        "iou": ("iou_similarity", {"X": boxes[0, :IOU_BOXES], "Y": boxes[1, :IOU_BOXES]}, {"Out": "out"},
                dict(box_normalized=False)),
    }
    times = {}
    for key, (op, ins, outs, attrs) in timed.items():
        prog, fetch = program(op, ins, outs, attrs)
        times[key] = median_seconds(lambda: exe.run(prog, feed=ins, fetch_list=fetch), rounds)
    return dict(times, **{
        "nms": median_seconds(lambda: exe.run(nms_prog, feed={"BBoxes": boxes, "Scores": scores},
                                              fetch_list=nms_fetch), rounds),
        "yolo": median_seconds(lambda: exe.run(yolo_prog, feed={"X": head, "ImgSize": img}, fetch_list=yolo_fetch),
                               rounds),
    })


def main():
    keep_freed_memory()
    if len(sys.argv) > 1 and sys.argv[1] == "--peer":
        peer(int(sys.argv[2]))
        return
    env = dict(os.environ)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer", str(ROUNDS)], env=env,
                       capture_output=True, text=True, check=True)
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    ours = rill_times(ROUNDS)
    print("| op (batch %d, %d boxes an image, %d classes) | Rill | peer | Rill / peer |" % (N, M, CLASSES))
    print("|---|---|---|---|")
    print("| multiclass_nms3 vs torchvision batched_nms | %.1f ms | %.1f ms | **%.2f** |" %
          (ours["nms"] * 1e3, theirs["nms"] * 1e3, ours["nms"] / theirs["nms"]))
    rows = [("yolo", "yolo_box (40x40 head) vs numpy reference"),
            ("matrix", "matrix_nms vs numpy Matrix NMS"),
            ("roi", "roi_align (1,024 regions, 7x7) vs torchvision roi_align"),
            ("roi_pool", "roi_pool (1,024 regions, 7x7) vs torchvision roi_pool"),
            ("coder", "box_coder decode vs numpy"),
            ("iou", "iou_similarity (2,000 x 2,000) vs numpy")]
    for key, label in rows:
        print("| %s | %.1f ms | %.1f ms | **%.2f** |" % (label, ours[key] * 1e3, theirs[key] * 1e3,
                                                       ours[key] / theirs[key]))


if __name__ == "__main__":
    main()
