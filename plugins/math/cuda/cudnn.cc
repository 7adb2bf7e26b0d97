#include "cudnn.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "cuda_check.h"

namespace rill::math::cuda {
namespace {

#define RILL_STRINGIFY_VALUE(x) RILL_STRINGIFY(x)
#define RILL_STRINGIFY(x) #x
// The soname of the cuDNN these kernels were compiled against (libcudnn.so.9: the library
// that exports every entry point and loads the others it needs).
constexpr const char* kSoname = "libcudnn.so." RILL_STRINGIFY_VALUE(CUDNN_MAJOR);

}  // namespace

const Cudnn& LoadCudnn() {
  static Cudnn api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    // The soname first (found through this plugin's RUNPATH), then the toolkit's directory.
    void* lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = dlopen((std::string(RILL_CUDA_LIBRARY_DIR "/") + kSoname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      error = std::string("cannot load cuDNN (") + kSoname + "): " + dlerror();
      return;
    }
#define RILL_CUDNN_RESOLVE(fn)                                  \
  api.fn = reinterpret_cast<decltype(api.fn)>(dlsym(lib, #fn)); \
  if (api.fn == nullptr && error.empty()) error = std::string(kSoname) + " lacks " #fn;
    RILL_CUDNN_FUNCTIONS(RILL_CUDNN_RESOLVE)
#undef RILL_CUDNN_RESOLVE
  });
  if (!error.empty()) throw Error(error, RILL_UNAVAILABLE);
  return api;
}

void CudnnCheck(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw Error(std::string(what) + ": cuDNN: " + LoadCudnn().cudnnGetErrorString(s),
              s == CUDNN_STATUS_ALLOC_FAILED ? RILL_RESOURCE_EXHAUSTED : RILL_INTERNAL);
}

cudnnHandle_t CudnnHandle(int32_t device) {
  return ThreadHandle<cudnnHandle_t>(device, LoadCudnn().cudnnCreate, CudnnCheck, "cudnnCreate");
}

void DescribeTensor(const TensorDescriptor& d, cudnnDataType_t dtype, bool nhwc, int64_t n, int64_t c, int64_t h,
                    int64_t w) {
  const int64_t strides[4] = {c * h * w, nhwc ? 1 : h * w, nhwc ? w * c : w, nhwc ? c : 1};
  CudnnCheck(LoadCudnn().cudnnSetTensor4dDescriptorEx(d.get(), dtype, static_cast<int>(n), static_cast<int>(c),
                                                      static_cast<int>(h), static_cast<int>(w),
                                                      static_cast<int>(strides[0]), static_cast<int>(strides[1]),
                                                      static_cast<int>(strides[2]), static_cast<int>(strides[3])),
             "cudnnSetTensor4dDescriptorEx");
}

}  // namespace rill::math::cuda
