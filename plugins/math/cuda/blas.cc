// CUDA mul, matmul and their gradients on cuBLAS, fp32/fp64. Tensors are row-major; cuBLAS is
// column-major, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T, which is the
// same memory read column-major (see RowMajorGemm).
//
// cuBLAS is loaded on the first GEMM, not linked: it is over half a gigabyte, and linking
// it would make every `rill` start-up, CPU-only runs included, load and map it.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>

#include "../matmul_shape.h"
#include "cuda_check.h"
#include "device_output.h"
#include "ops.h"

namespace rill::math::cuda {
namespace {

void CublasCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(what) + ": cuBLAS status " + std::to_string(s), RILL_INTERNAL);
}

// The cuBLAS entry points used here, resolved from the library on first use.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
};

const Cublas& LoadCublas() {
  static Cublas api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    // The soname first (found through this plugin's RUNPATH), then the toolkit it was built with.
    void* lib = dlopen("libcublas.so." RILL_CUBLAS_SOVERSION, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr)
      lib = dlopen(RILL_CUDA_LIBRARY_DIR "/libcublas.so." RILL_CUBLAS_SOVERSION, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      error = std::string("cannot load cuBLAS: ") + dlerror();
      return;
    }
    api.create = reinterpret_cast<decltype(api.create)>(dlsym(lib, "cublasCreate_v2"));
    api.sgemm = reinterpret_cast<decltype(api.sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    api.dgemm = reinterpret_cast<decltype(api.dgemm)>(dlsym(lib, "cublasDgemm_v2"));
    if (!api.create || !api.sgemm || !api.dgemm) error = "cuBLAS lacks cublasCreate_v2/cublasSgemm_v2/cublasDgemm_v2";
  });
  if (!error.empty()) throw Error(error, RILL_UNAVAILABLE);
  return api;
}

cublasHandle_t Handle(int32_t device) {
  return ThreadHandle<cublasHandle_t>(device, LoadCublas().create, CublasCheck, "cublasCreate");
}

cublasStatus_t Gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta, float* c,
                    int ldc) {
  return LoadCublas().sgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t Gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const double* alpha, const double* a, int lda, const double* b, int ldb, const double* beta,
                    double* c, int ldc) {
  return LoadCublas().dgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, where A is stored
// [m, k] (or [k, m] when ta) and B [k, n] (or [n, k] when tb).
template <class T>
void RowMajorGemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b,
                  T beta, T* c) {
  const int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  CublasCheck(Gemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                   static_cast<int>(m), static_cast<int>(k), &alpha, b, ldb, a, lda, &beta, c, static_cast<int>(n)),
              "cuBLAS gemm");
}

// The variables a GEMM kernel reads, which its outputs must not overwrite while it runs.
std::vector<RillVariable*> GemmInputs(KernelContext& ctx, bool with_grad) {
  std::vector<RillVariable*> vars = {ctx.InputVar("X").handle(), ctx.InputVar("Y").handle()};
  if (with_grad) vars.push_back(ctx.InputVar("Out@GRAD").handle());
  return vars;
}

struct MulShape {
  int64_t m, k, n;
  std::vector<int64_t> out_dims;
};

MulShape MulShapeOf(KernelContext& ctx, const std::vector<int64_t>& xd, const std::vector<int64_t>& yd) {
  const auto xn = static_cast<size_t>(ctx.Attr<int64_t>("x_num_col_dims"));
  const auto yn = static_cast<size_t>(ctx.Attr<int64_t>("y_num_col_dims"));
  if (xn < 1 || xn > xd.size() || yn < 1 || yn > yd.size()) {
    throw Error("x_num_col_dims / y_num_col_dims do not split X " + DimsString(xd) + " and Y " + DimsString(yd));
  }
  MulShape s{Product(xd, 0, xn), Product(xd, xn, xd.size()), Product(yd, yn, yd.size()), {}};
  if (s.k != Product(yd, 0, yn)) {
    throw Error("X " + DimsString(xd) + " and Y " + DimsString(yd) + " do not multiply as matrices");
  }
  s.out_dims.assign(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(xn));
  s.out_dims.insert(s.out_dims.end(), yd.begin() + static_cast<std::ptrdiff_t>(yn), yd.end());
  return s;
}

template <class T> void Mul(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const MulShape s = MulShapeOf(ctx, x.dims(), y.dims());
  DeviceOutput<T> out(ctx, "Out", 0, s.out_dims, GemmInputs(ctx, false));
  RowMajorGemm<T>(Handle(ctx.device_id()), false, false, s.m, s.n, s.k, T(1), x.data<T>(), y.data<T>(), T(0),
                  out.get());
  out.Finish();
}

template <class T> void MulGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const MulShape s = MulShapeOf(ctx, x.dims(), y.dims());
  cublasHandle_t h = Handle(ctx.device_id());
  if (ctx.HasOutput("X@GRAD")) {  // dX[m, k] = dOut[m, n] * Y[k, n]^T
    DeviceOutput<T> dx(ctx, "X@GRAD", 0, x.dims(), GemmInputs(ctx, true));
    RowMajorGemm<T>(h, false, true, s.m, s.k, s.n, T(1), g.data<T>(), y.data<T>(), T(0), dx.get());
    dx.Finish();
  }
  if (ctx.HasOutput("Y@GRAD")) {  // dY[k, n] = X[m, k]^T * dOut[m, n]
    DeviceOutput<T> dy(ctx, "Y@GRAD", 0, y.dims(), GemmInputs(ctx, true));
    RowMajorGemm<T>(h, true, false, s.k, s.n, s.m, T(1), x.data<T>(), g.data<T>(), T(0), dy.get());
    dy.Finish();
  }
}

template <class T> void MatMul(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  const MatMulPlan plan = PlanMatMul(ctx, x.dims(), y.dims());
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  const std::vector<int64_t> out_dims = MatMulOutDims(plan, x.dims(), y.dims());
  DeviceOutput<T> out(ctx, "Out", 0, out_dims, GemmInputs(ctx, false));
  cublasHandle_t h = Handle(ctx.device_id());
  const T alpha = static_cast<T>(plan.alpha);
  for (int64_t i = 0; i < plan.batch; ++i) {
    RowMajorGemm<T>(h, plan.tx, plan.ty, m, n, k, alpha, x.data<T>() + plan.x_at[i] * m * k,
                    y.data<T>() + plan.y_at[i] * k * n, T(0), out.get() + i * m * n);
  }
  out.Finish();
}

// For Out = alpha * op(X) op(Y), per batch: with A = op(X), B = op(Y) and G = Out@GRAD,
// dA = alpha G B^T and dB = alpha A^T G, written through the transposes (dX = dA^T when X
// is transposed); a matrix broadcast over several products sums their gradients (beta 0
// for its first product, 1 after).
template <class T> void MatMulGrad(KernelContext& ctx) {
  UseDevice(ctx);
  Tensor x = ctx.Input("X");
  Tensor y = ctx.Input("Y");
  Tensor g = ctx.Input("Out@GRAD");
  const MatMulPlan plan = PlanMatMul(ctx, x.dims(), y.dims());
  const bool tx = plan.tx, ty = plan.ty;
  const int64_t m = plan.m, k = plan.k, n = plan.n;
  if (g.dims() != MatMulOutDims(plan, x.dims(), y.dims())) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " is not shaped like Out");
  }
  const T alpha = static_cast<T>(plan.alpha);
  cublasHandle_t h = Handle(ctx.device_id());
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  const T* pg = g.data<T>();
  if (ctx.HasOutput("X@GRAD")) {
    DeviceOutput<T> dx(ctx, "X@GRAD", 0, x.dims(), GemmInputs(ctx, true));
    std::vector<bool> seen(static_cast<size_t>(plan.a.batch));
    for (int64_t i = 0; i < plan.batch; ++i) {
      const int64_t xo = plan.x_at[i] * m * k, yo = plan.y_at[i] * k * n;
      const T beta = seen[plan.x_at[i]] ? T(1) : T(0);
      seen[plan.x_at[i]] = true;
      const T* gi = pg + i * m * n;
      if (tx) {  // dX[k, m] = alpha B G^T
        RowMajorGemm<T>(h, ty, true, k, m, n, alpha, py + yo, gi, beta, dx.get() + xo);
      } else {  // dX[m, k] = alpha G B^T
        RowMajorGemm<T>(h, false, !ty, m, k, n, alpha, gi, py + yo, beta, dx.get() + xo);
      }
    }
    dx.Finish();
  }
  if (ctx.HasOutput("Y@GRAD")) {
    DeviceOutput<T> dy(ctx, "Y@GRAD", 0, y.dims(), GemmInputs(ctx, true));
    std::vector<bool> seen(static_cast<size_t>(plan.b.batch));
    for (int64_t i = 0; i < plan.batch; ++i) {
      const int64_t xo = plan.x_at[i] * m * k, yo = plan.y_at[i] * k * n;
      const T beta = seen[plan.y_at[i]] ? T(1) : T(0);
      seen[plan.y_at[i]] = true;
      const T* gi = pg + i * m * n;
      if (ty) {  // dY[n, k] = alpha G^T A
        RowMajorGemm<T>(h, true, tx, n, k, m, alpha, gi, px + xo, beta, dy.get() + yo);
      } else {  // dY[k, n] = alpha A^T G
        RowMajorGemm<T>(h, !tx, false, k, n, m, alpha, px + xo, gi, beta, dy.get() + yo);
      }
    }
    dy.Finish();
  }
}

}  // namespace

void RegisterBlas(Registrar& r) {
  RegisterCudaFloat(r, "mul", [](auto t) { return &Mul<decltype(t)>; });
  RegisterCudaFloat(r, "mul_grad", [](auto t) { return &MulGrad<decltype(t)>; });
  RegisterCudaFloat(r, "matmul", [](auto t) { return &MatMul<decltype(t)>; });
  RegisterCudaFloat(r, "matmul_grad", [](auto t) { return &MatMulGrad<decltype(t)>; });
}

}  // namespace rill::math::cuda
