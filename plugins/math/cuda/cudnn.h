// plugins/math/cuda/cudnn.h — cuDNN for the CUDA kernels, loaded on first use (as cuBLAS
// is, blas.cc): rill starts, and CPU-only runs go, without touching its libraries.
//
// Contract: LoadCudnn() gives the entry points below or throws Error (RILL_UNAVAILABLE)
// saying why not; CudnnHandle(device) is this thread's handle for `device`, made on first
// use and kept for the thread's life (handles must not be shared by concurrent threads),
// on the legacy default stream every kernel here runs on. The descriptor types own their
// cuDNN descriptor.
#ifndef RILL_PLUGINS_MATH_CUDA_CUDNN_H_
#define RILL_PLUGINS_MATH_CUDA_CUDNN_H_

#include <cudnn.h>

#include <cstdint>
#include <type_traits>

#include "rill/sdk.hpp"

namespace rill::math::cuda {

// clang-format off
#define RILL_CUDNN_FUNCTIONS(X)                                                                            \
  X(cudnnCreate) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor)    \
  X(cudnnSetTensor4dDescriptorEx) X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor)          \
  X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)  \
  X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)      \
  X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnGetConvolutionForwardWorkspaceSize)                     \
  X(cudnnConvolutionForward) X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(cudnnConvolutionBackwardData)                          \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) X(cudnnGetConvolutionBackwardFilterWorkspaceSize)       \
  X(cudnnConvolutionBackwardFilter) X(cudnnTransformTensor)
// clang-format on

struct Cudnn {
#define RILL_CUDNN_MEMBER(fn) decltype(&::fn) fn = nullptr;
  RILL_CUDNN_FUNCTIONS(RILL_CUDNN_MEMBER)
#undef RILL_CUDNN_MEMBER
};

const Cudnn& LoadCudnn();
// Throws Error naming `what` and cuDNN's reason unless `s` is success.
void CudnnCheck(cudnnStatus_t s, const char* what);
cudnnHandle_t CudnnHandle(int32_t device);

// cuDNN's data type for T (__half, float, double); the type a computation on T accumulates
// in (float for __half); and the type of its alpha and beta scalars (the same).
template <class T> constexpr cudnnDataType_t CudnnType() {
  return sizeof(T) == 2 ? CUDNN_DATA_HALF : sizeof(T) == 4 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}
template <class T> constexpr cudnnDataType_t CudnnComputeType() {
  return sizeof(T) == 8 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}
template <class T> using CudnnScalar = std::conditional_t<sizeof(T) == 8, double, float>;

// An owned descriptor: `Create` and `Destroy` are cuDNN's for its type.
template <class D, cudnnStatus_t (*Cudnn::*Create)(D*), cudnnStatus_t (*Cudnn::*Destroy)(D)> class CudnnDescriptor {
 public:
  CudnnDescriptor() { CudnnCheck((LoadCudnn().*Create)(&d_), "creating a cuDNN descriptor"); }
  ~CudnnDescriptor() { (LoadCudnn().*Destroy)(d_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};
using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, &Cudnn::cudnnCreateTensorDescriptor, &Cudnn::cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, &Cudnn::cudnnCreateFilterDescriptor, &Cudnn::cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, &Cudnn::cudnnCreateConvolutionDescriptor,
                                              &Cudnn::cudnnDestroyConvolutionDescriptor>;

// Describes a 4-D tensor of `dtype` whose logical dims are [n, c, h, w], stored NCHW or
// NHWC (by strides: cuDNN reads either).
void DescribeTensor(const TensorDescriptor& d, cudnnDataType_t dtype, bool nhwc, int64_t n, int64_t c, int64_t h,
                    int64_t w);

}  // namespace rill::math::cuda

#endif  // RILL_PLUGINS_MATH_CUDA_CUDNN_H_
