"""Paddle 2.x's F.interpolate of 4-D images: the bilinear_interp_v2 and nearest_interp_v2
ops, the size or scale given as numbers or tensors."""
from rill.fluid import layers
from rill.fluid.framework import Variable
from rill.paddle import _op

__all__ = ["interpolate"]

_MODES = ("linear", "bilinear", "trilinear", "nearest", "bicubic")


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format="NCHW", name=None):
    """x [N, C, H, W] (or NHWC) resized to `size` ([h, w]: ints and one-element int tensors,
    or a 1-D int tensor) or by `scale_factor` (a number, two numbers, or a tensor), with
    `mode` bilinear or nearest."""
    mode = mode.lower()
    if mode not in _MODES:
        raise ValueError("The 'resample' of image_resize can only be 'linaer', 'bilinear', 'trilinear', "
                         "'bicubic' or 'nearest' currently.")
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError("interpolate: mode %r is not supported here (bilinear and nearest are)" % mode)
    if mode == "nearest" and align_corners:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if not isinstance(align_corners, bool):
        raise TypeError("Attr align_corners should be a bool value")
    if align_mode not in (0, 1):
        raise ValueError("align_mode can only be 0 or 1")
    if len(x.shape) != 4 or data_format not in ("NCHW", "NHWC"):
        raise ValueError("interpolate: x must be 4-D with data_format NCHW or NHWC here, got shape %s and %r" %
                         (list(x.shape), data_format))
    if size is None and scale_factor is None:
        raise ValueError("One of size and scale_factor must not be None.")
    dynamic = x.block.program._eager is not None
    inputs = {"X": x}
    attrs = {"out_d": -1, "out_h": -1, "out_w": -1, "interp_method": mode, "align_corners": align_corners,
             "align_mode": align_mode, "data_layout": data_format}
    spatial = [-1, -1]
    if size is not None:
        if isinstance(size, Variable):
            if dynamic:  # a value: its numbers, as Paddle's dynamic graph reads it
                size = [int(v) for v in size.numpy().reshape(-1)]
            else:
                inputs["OutSize"] = layers.cast(size, "int32")
        if isinstance(size, (list, tuple)):
            if len(size) != 2:
                raise ValueError("interpolate: size must hold 2 values for a 4-D x, got %r" % (size,))
            if dynamic:
                size = [int(v.numpy().reshape(-1)[0]) if isinstance(v, Variable) else v for v in size]
            if any(isinstance(v, Variable) for v in size):
                inputs["SizeTensor"] = [layers.cast(v, "int32") if isinstance(v, Variable)
                                        else layers.fill_constant([1], "int32", v) for v in size]
            else:
                attrs["out_h"], attrs["out_w"] = spatial = [int(v) for v in size]
    else:
        if isinstance(scale_factor, Variable):
            if dynamic:
                scale_factor = [float(v) for v in scale_factor.numpy().reshape(-1)]
            else:
                inputs["Scale"] = layers.cast(scale_factor, "float32")
        if isinstance(scale_factor, (int, float)):
            scale_factor = [scale_factor, scale_factor]
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != 2 or any(s <= 0 for s in scale_factor):
                raise ValueError("interpolate: scale_factor must be positive, one or two values, got %r" %
                                 (scale_factor,))
            attrs["scale"] = [float(s) for s in scale_factor]
            hw = x.shape[2:4] if data_format == "NCHW" else x.shape[1:3]
            spatial = [int(d * s) if d >= 0 else -1 for d, s in zip(hw, scale_factor)]
    shape = [x.shape[0], x.shape[1]] + spatial if data_format == "NCHW" else [x.shape[0]] + spatial + [x.shape[3]]
    return _op.append(mode + "_interp_v2", inputs, attrs, shape=shape, name=name, layer="interpolate")
