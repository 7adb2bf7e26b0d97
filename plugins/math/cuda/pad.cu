#include "cuda_check.h"
#include "half.h"
#include "pad.h"

namespace rill::math::cuda {
namespace {

template <class T> __global__ void PadKernel(ImagePadding p, const T* x, T* xp, int64_t count) {
  const int64_t hp = p.h + p.top + p.bottom, wp = p.w + p.left + p.right;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t y, xx, src;
    if (p.nhwc) {  // i = ((n * hp + y) * wp + x) * c + ch
      const int64_t ch = i % p.c, rest = i / p.c;
      xx = rest % wp - p.left;
      y = rest / wp % hp - p.top;
      src = ((rest / wp / hp * p.h + y) * p.w + xx) * p.c + ch;
    } else {  // i = (nc * hp + y) * wp + x
      xx = i % wp - p.left;
      y = i / wp % hp - p.top;
      src = (i / wp / hp * p.h + y) * p.w + xx;
    }
    xp[i] = y >= 0 && y < p.h && xx >= 0 && xx < p.w ? x[src] : T{};  // T{}: zero, __half's too
  }
}

template <class T> __global__ void CropKernel(ImagePadding p, const T* xp, T* x, int64_t count) {
  const int64_t hp = p.h + p.top + p.bottom, wp = p.w + p.left + p.right;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{blockDim.x} * gridDim.x) {
    if (p.nhwc) {  // i = ((n * h + y) * w + x) * c + ch
      const int64_t ch = i % p.c, rest = i / p.c;
      const int64_t xx = rest % p.w + p.left, y = rest / p.w % p.h + p.top;
      x[i] = xp[((rest / p.w / p.h * hp + y) * wp + xx) * p.c + ch];
    } else {  // i = (nc * h + y) * w + x
      const int64_t xx = i % p.w + p.left, y = i / p.w % p.h + p.top;
      x[i] = xp[(i / p.w / p.h * hp + y) * wp + xx];
    }
  }
}

}  // namespace

template <class T> void PadImage(const ImagePadding& p, const T* x, T* xp) {
  const int64_t count = p.n * p.c * p.hp() * p.wp();
  PadKernel<T><<<Blocks(count), kThreads>>>(p, x, xp, count);
  CheckLaunch("PadKernel");
}

template <class T> void CropImage(const ImagePadding& p, const T* xp, T* x) {
  const int64_t count = p.n * p.c * p.h * p.w;
  CropKernel<T><<<Blocks(count), kThreads>>>(p, xp, x, count);
  CheckLaunch("CropKernel");
}

template void PadImage<__half>(const ImagePadding&, const __half*, __half*);
template void PadImage<float>(const ImagePadding&, const float*, float*);
template void PadImage<double>(const ImagePadding&, const double*, double*);
template void CropImage<__half>(const ImagePadding&, const __half*, __half*);
template void CropImage<float>(const ImagePadding&, const float*, float*);
template void CropImage<double>(const ImagePadding&, const double*, double*);

}  // namespace rill::math::cuda
