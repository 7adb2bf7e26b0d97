"""paddle.vision.ops: YOLOv3's box decoding (Fluid's yolo_box layer, Paddle 2.x's name)."""
from rill.fluid.layers.detection import yolo_box  # noqa: F401

__all__ = ["yolo_box"]
