// sequence_conv, sequence_conv_grad: a convolution along the time steps of each sequence,
// with Paddle's contract (paddle/fluid/operators/sequence_ops/sequence_conv_op.*,
// math/context_project.h).
//
// X is [R, D] packing sequences (one LoD level), Filter [contextLength * D, M]. Row t of
// sequence [b, e) sees the context rows t + contextStart + k, k = 0 .. contextLength - 1;
// one outside [b, e) reads as zeros, or, with paddingTrainable, as a row of PaddingData
// ([up + down, D], up = max(0, -contextStart), down = max(0, contextStart +
// contextLength - 1)): row up + (f - b) for a context row f before the sequence, row
// up + (f - e) for one after it. Out = the context rows side by side ([R, contextLength *
// D]) times Filter: [R, M], with X's LoD. The gradient sends Out@GRAD back through the
// same product: Filter@GRAD = context^T Out@GRAD, and X@GRAD (PaddingData@GRAD) sums what
// each row of X (of PaddingData) gave to every context it appeared in. contextStride must
// be 1 (Paddle's only stride).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gemm.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

struct Context {
  int64_t length, start, width;  // context rows, the first one's offset, D
  int64_t up = 0;                // PaddingData's rows before a sequence; null padding: zeros
  const Tensor* padding = nullptr;
  std::vector<uint64_t> offsets;
};

Context ContextOf(KernelContext& ctx, const Tensor& x, const Tensor& filter, const Tensor* padding) {
  Context c;
  c.length = ctx.Attr<int64_t>("contextLength");
  c.start = ctx.Attr<int64_t>("contextStart");
  if (ctx.Attr<int64_t>("contextStride") != 1) {
    throw Error("contextStride must be 1 (Paddle's only stride), got " +
                std::to_string(ctx.Attr<int64_t>("contextStride")));
  }
  if (c.length < 1) throw Error("contextLength must be at least 1, got " + std::to_string(c.length));
  if (x.ndim() != 2 || filter.ndim() != 2) {
    throw Error("X and Filter must be 2-D, got X " + DimsString(x.dims()) + " and Filter " + DimsString(filter.dims()));
  }
  c.width = x.dims()[1];
  if (filter.dims()[0] != c.length * c.width) {
    throw Error("Filter " + DimsString(filter.dims()) + " must have contextLength * D = " +
                std::to_string(c.length * c.width) + " rows (X " + DimsString(x.dims()) + ")");
  }
  c.offsets = SequenceOffsets(ctx.op(), "X", x, 1);
  if (ctx.Attr<bool>("paddingTrainable")) {
    c.up = std::max<int64_t>(0, -c.start);
    const int64_t down = std::max<int64_t>(0, c.start + c.length - 1);
    if (padding == nullptr) throw Error("paddingTrainable needs PaddingData");
    if (padding->dims() != std::vector<int64_t>{c.up + down, c.width}) {
      throw Error("PaddingData " + DimsString(padding->dims()) + " must be [" + std::to_string(c.up + down) + ", " +
                  std::to_string(c.width) + "]: the context rows before and after a sequence, D wide");
    }
    c.padding = padding;
  }
  return c;
}

// Calls visit(t, k, from, pad) for context row k of every row t of X: `from` is the row
// of X it reads, or -1 outside t's sequence, where `pad` is the row of PaddingData it
// reads (with paddingTrainable; -1 otherwise). A sequence at a time on the passes' team:
// every call for one t runs on one thread, and every row `from` names lies in t's sequence.
template <class Visit> void ForEachContextRow(const Context& c, double bytes, Visit visit) {
  const int64_t seqs = static_cast<int64_t>(c.offsets.size()) - 1;
  ParallelFor(seqs, bytes, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      const int64_t b = static_cast<int64_t>(c.offsets[s]), e = static_cast<int64_t>(c.offsets[s + 1]);
      for (int64_t t = b; t < e; ++t) {
        for (int64_t k = 0; k < c.length; ++k) {
          const int64_t from = t + c.start + k;
          if (from >= b && from < e) {
            visit(t, k, from, int64_t{-1});
          } else {
            visit(t, k, int64_t{-1}, c.padding == nullptr ? -1 : c.up + (from < b ? from - b : from - e));
          }
        }
      }
    }
  });
}

// The context rows of every row of X side by side: col [R, length * D].
template <class T> void ContextRows(const Context& c, const T* x, T* col) {
  const int64_t cw = c.length * c.width;
  const T* pad = c.padding != nullptr ? c.padding->data<T>() : nullptr;
  ForEachContextRow(c, static_cast<double>(c.offsets.back() * cw) * sizeof(T),
                    [&](int64_t t, int64_t k, int64_t from, int64_t pad_row) {
                      T* into = col + t * cw + k * c.width;
                      if (from >= 0) {
                        std::copy(x + from * c.width, x + (from + 1) * c.width, into);
                      } else if (pad_row >= 0) {
                        std::copy(pad + pad_row * c.width, pad + (pad_row + 1) * c.width, into);
                      } else {
                        std::fill(into, into + c.width, T(0));
                      }
                    });
}

template <class T> void SequenceConv(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), filter = ctx.Input("Filter");
  const std::optional<Tensor> padding = OptionalInput(ctx, "PaddingData");
  const Context c = ContextOf(ctx, x, filter, padding ? &*padding : nullptr);
  const int64_t rows = x.dims()[0], m = filter.dims()[1], cw = c.length * c.width;
  std::unique_ptr<T[]> col = Scratch<T>(rows * cw);
  ContextRows(c, x.data<T>(), col.get());
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "Out", {"X", "Filter"}, {rows, m},
                 [&](T* out) { Gemm<T>(false, false, rows, m, cw, T(1), col.get(), filter.data<T>(), T(0), out); });
  ctx.Output("Out").set_lod(lod);
}

template <class T> void SequenceConvGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), filter = ctx.Input("Filter"), g = ctx.Input("Out@GRAD");
  const std::optional<Tensor> padding = OptionalInput(ctx, "PaddingData");
  const Context c = ContextOf(ctx, x, filter, padding ? &*padding : nullptr);
  const int64_t rows = x.dims()[0], m = filter.dims()[1], cw = c.length * c.width;
  if (g.dims() != std::vector<int64_t>{rows, m}) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " must be [" + std::to_string(rows) + ", " + std::to_string(m) +
                "], shaped like Out");
  }
  const bool want_filter = HasOutputVariable(ctx, "Filter@GRAD");
  const bool want_x = HasOutputVariable(ctx, "X@GRAD");
  const bool want_padding = c.padding != nullptr && HasOutputVariable(ctx, "PaddingData@GRAD");
  std::unique_ptr<T[]> col = Scratch<T>(rows * cw);
  if (want_filter) {
    ContextRows(c, x.data<T>(), col.get());
    WriteOutput<T>(ctx, "Filter@GRAD", {"X", "Filter", "Out@GRAD"}, filter.dims(),
                   [&](T* df) { Gemm<T>(true, false, cw, m, rows, T(1), col.get(), g.data<T>(), T(0), df); });
  }
  if (!want_x && !want_padding) return;
  // The context rows' gradient, then each back to the row of X (of PaddingData) it was read from.
  Tensor g_now = ctx.Input("Out@GRAD"), filter_now = ctx.Input("Filter");
  Gemm<T>(false, true, rows, cw, m, T(1), g_now.data<T>(), filter_now.data<T>(), T(0), col.get());
  if (want_padding) {
    WriteOutput<T>(ctx, "PaddingData@GRAD", {"X", "Filter", "PaddingData", "Out@GRAD"}, c.padding->dims(), [&](T* dp) {
      std::fill(dp, dp + c.padding->numel(), T(0));
      // One pass on one thread (0 bytes): every sequence adds into the same rows.
      ForEachContextRow(c, 0, [&](int64_t t, int64_t k, int64_t, int64_t pad_row) {
        if (pad_row >= 0) {
          VecMap<T>(dp + pad_row * c.width, c.width) += ConstVecMap<T>(col.get() + t * cw + k * c.width, c.width);
        }
      });
    });
  }
  if (!want_x) return;
  const std::vector<std::vector<uint64_t>> lod = x.lod();
  WriteOutput<T>(ctx, "X@GRAD", {"X", "Filter", "Out@GRAD"}, x.dims(), [&](T* dx) {
    std::fill(dx, dx + rows * c.width, T(0));
    ForEachContextRow(
        c, 2.0 * static_cast<double>(rows * cw) * sizeof(T), [&](int64_t t, int64_t k, int64_t from, int64_t) {
          if (from >= 0)
            VecMap<T>(dx + from * c.width, c.width) += ConstVecMap<T>(col.get() + t * cw + k * c.width, c.width);
        });
  });
  ctx.Output("X@GRAD").set_lod(lod);
}

}  // namespace

void RegisterSequenceConv(Registrar& r) {
  const OpSchema conv =
      OpSchema("sequence_conv")
          .Doc(
              "Out = each row's context rows (t + contextStart + k, k < contextLength; outside its sequence, "
              "zeros or PaddingData's rows) side by side, times Filter: a convolution along each sequence of X. "
              "As Paddle's.")
          .Input("X", "[R, D], a LoD tensor of one level")
          .Input("Filter", "[contextLength * D, M]")
          .Input("PaddingData", "[up + down, D]: the context rows outside a sequence, with paddingTrainable",
                 RILL_SLOT_OPTIONAL)
          .Output("Out", "[R, M], with X's LoD")
          .Attr("contextLength", int64_t{3}, "the rows each output row sees")
          .Attr("contextStart", int64_t{0}, "the first of them, relative to the row (negative: before it)")
          .Attr("contextStride", int64_t{1}, "must be 1")
          .Attr("paddingTrainable", false, "context rows outside a sequence from PaddingData, not zeros")
          .KernelDtypeFrom("X")
          .Grad("sequence_conv_grad", "X,Filter,PaddingData,Out@GRAD", "X,Filter,PaddingData");
  r.Op(conv);
  r.Op(conv.MakeGradSchema());
  RegisterCpu<float, double>(r, "sequence_conv", [](auto t) { return &SequenceConv<decltype(t)>; });
  RegisterCpu<float, double>(r, "sequence_conv_grad", [](auto t) { return &SequenceConvGrad<decltype(t)>; });
}

}  // namespace rill::math
