// multiplex, multiplex_grad: each row picked from one of several tensors, with Paddle's
// contract (paddle/fluid/operators/multiplex_op.h).
//
// X is a list of k >= 2 tensors of one shape [M, ...]; Ids (int32/int64 [M, 1]) names, for
// each row i, the tensor Out's row i is copied from: Out[i] = X[Ids[i]][i]. The gradient
// sends Out@GRAD's row i to X[Ids[i]]@GRAD's row i; the other rows get zeros.
#include <string>
#include <vector>

#include "kernels.h"
#include "memory_loops.h"
#include "ops.h"

namespace rill::math {
namespace {

// Ids as one index per row, each checked against the number of candidates.
std::vector<int64_t> RowSources(KernelContext& ctx, int64_t rows, size_t candidates) {
  Tensor ids = ctx.Input("Ids");
  const std::vector<int64_t> d = ids.dims();
  if (d.size() != 2 || d[1] != 1 || d[0] != rows) {
    throw Error("Ids must be [" + std::to_string(rows) + ", 1] (one per row of X), got " + DimsString(d));
  }
  std::vector<int64_t> src = IntsOf(ids, "Ids");
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= static_cast<int64_t>(candidates)) {
      throw Error("Ids[" + std::to_string(i) + "] = " + std::to_string(src[i]) + " names none of the " +
                  std::to_string(candidates) + " tensors of X");
    }
  }
  return src;
}

void Multiplex(KernelContext& ctx) {
  const size_t k = ctx.op().InputCount("X");
  if (k < 2) throw Error("X must list at least 2 tensors, got " + std::to_string(k));
  Tensor x0 = ctx.Input("X", 0);
  const std::vector<int64_t> d = x0.dims();
  if (d.empty()) throw Error("X's tensors need a row dim");
  for (size_t j = 1; j < k; ++j) {
    Tensor xj = ctx.Input("X", j);
    if (xj.dims() != d || xj.dtype() != x0.dtype()) {
      throw Error("X[" + std::to_string(j) + "] " + DimsString(xj.dims()) + " differs from X[0] " + DimsString(d) +
                  " in shape or dtype");
    }
  }
  const std::vector<int64_t> src = RowSources(ctx, d[0], k);
  const size_t row = static_cast<size_t>(Product(d, 1, d.size())) * DataTypeSize(x0.dtype());
  WriteOutputBytes(ctx, "Out", {"X"}, x0.dtype(), d, [&](char* po) {
    for (size_t i = 0; i < src.size(); ++i) {
      const char* from = static_cast<const char*>(ctx.Input("X", static_cast<size_t>(src[i])).raw_data());
      CopyBytes(po + i * row, from + i * row, row);
    }
  });
}

template <class T> void MultiplexGrad(KernelContext& ctx) {
  Tensor g = ctx.Input("Out@GRAD");
  const std::vector<int64_t> d = g.dims();
  if (d.empty()) throw Error("Out@GRAD needs a row dim");
  const size_t k = ctx.op().OutputCount("X@GRAD");
  const std::vector<int64_t> src = RowSources(ctx, d[0], k);
  const int64_t row = Product(d, 1, d.size());
  const T* pg = g.data<T>();
  for (size_t j = 0; j < k; ++j) {
    if (ctx.op().OutputName("X@GRAD", j) == RILL_EMPTY_VAR_NAME) continue;
    T* dx = ctx.Output("X@GRAD", j).Allocate<T>(d);
    for (size_t i = 0; i < src.size(); ++i) {
      const int64_t at = static_cast<int64_t>(i) * row;
      if (src[i] == static_cast<int64_t>(j)) {
        std::copy(pg + at, pg + at + row, dx + at);
      } else {
        std::fill(dx + at, dx + at + row, T(0));
      }
    }
  }
}

}  // namespace

void RegisterMultiplex(Registrar& r) {
  const OpSchema multiplex = OpSchema("multiplex")
                                 .Doc("Out[i] = X[Ids[i]][i]: each row taken from the tensor Ids names.")
                                 .Input("Ids", "int32/int64 [M, 1]: for each row, which tensor of X")
                                 .Input("X", "at least 2 tensors of one shape [M, ...]", RILL_SLOT_DUPLICABLE)
                                 .Output("Out", "shaped like each of X")
                                 .KernelDtypeFrom("X")
                                 .Grad("multiplex_grad", "Out@GRAD,Ids", "X");
  r.Op(multiplex);
  r.Op(multiplex.MakeGradSchema());
  r.Kernel("multiplex", RILL_CPU, RILL_ANY_DTYPE, &Multiplex);
  RegisterCpu<float, double>(r, "multiplex_grad", [](auto t) { return &MultiplexGrad<decltype(t)>; });
}

}  // namespace rill::math
