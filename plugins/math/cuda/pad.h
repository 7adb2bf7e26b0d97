// plugins/math/cuda/pad.h — a 4-D image's zero padding, for convolutions whose padding
// cuDNN cannot express (cuDNN pads the same before and after; SAME and 4-value paddings
// may not). Images are [n, c, h, w] logically, NCHW or NHWC in memory; the padded image
// is [n, c, h + top + bottom, w + left + right] in the same layout. Both run on the legacy
// default stream.
#ifndef RILL_PLUGINS_MATH_CUDA_PAD_H_
#define RILL_PLUGINS_MATH_CUDA_PAD_H_

#include <cstdint>

namespace rill::math::cuda {

// hp() and wp() are host code's; the kernels, given it by value, compute the same.
struct ImagePadding {
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  int64_t hp() const { return h + top + bottom; }
  int64_t wp() const { return w + left + right; }
};

// xp = x with zeros around it. T: __half, float or double.
template <class T> void PadImage(const ImagePadding& p, const T* x, T* xp);
// x = the part of xp that PadImage copied x into (the gradient of PadImage).
template <class T> void CropImage(const ImagePadding& p, const T* xp, T* x);

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_PAD_H_
