// strided_slice (and its gradient), with Paddle's contract (paddle/fluid/operators/
// strided_slice_op.*): Out = Input[start:end:stride] along each of `axes`, the other dims
// whole, as Python slices a sequence, with Paddle's reading of the bounds: a negative start
// or end counts from the dim's end, except an end of -1 with a negative stride, which means
// "past the first element" (Python's None); a range that is empty for its stride's sign is
// an error (Paddle refuses it), bounds past the dim are clamped to it. An axis listed in
// decrease_axis is removed from Out (its length must be 1); with start -1, end 0 and
// infer_flag -1 it is the dim's last element. starts, ends and strides may come as tensors
// (one 1-D tensor, or a list of one-element tensors) instead of the attributes. The
// gradient writes Out@GRAD back at the elements Out took, zeros elsewhere.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "index_map.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "shape.h"

namespace rill::math {
namespace {

// The elements Out takes: along dim k of Input, count[k] of them from first[k], step[k]
// apart (negative: backwards).
struct StridedPlan {
  std::vector<int64_t> first, step, count;
  std::vector<int64_t> out_dims;  // count with decrease_axis' dims removed
};

StridedPlan PlanStrided(KernelContext& ctx, const std::vector<int64_t>& in) {
  const std::vector<int64_t> axes = ctx.Attr<std::vector<int64_t>>("axes");
  const std::vector<int64_t> starts = IntsFromInputs(ctx, "StartsTensor", "StartsTensorList", "starts");
  const std::vector<int64_t> ends = IntsFromInputs(ctx, "EndsTensor", "EndsTensorList", "ends");
  const std::vector<int64_t> strides = IntsFromInputs(ctx, "StridesTensor", "StridesTensorList", "strides");
  std::vector<int64_t> flags = ctx.Attr<std::vector<int64_t>>("infer_flags");
  const std::vector<int64_t> decrease = ctx.Attr<std::vector<int64_t>>("decrease_axis");
  if (starts.size() != axes.size() || ends.size() != axes.size() || strides.size() != axes.size()) {
    throw Error("starts, ends and strides must give one value per axis of axes (" + std::to_string(axes.size()) +
                "), got " + std::to_string(starts.size()) + ", " + std::to_string(ends.size()) + " and " +
                std::to_string(strides.size()));
  }
  flags.resize(axes.size(), 1);
  StridedPlan p;
  p.first.assign(in.size(), 0);
  p.step.assign(in.size(), 1);
  p.count = in;
  for (size_t a = 0; a < axes.size(); ++a) {
    const size_t k = NormalizeAxis(axes[a], in.size(), "axes");
    const int64_t size = in[k], stride = strides[a];
    int64_t start = starts[a], end = ends[a];
    if (stride == 0) throw Error("strides[" + std::to_string(a) + "] is 0");
    if (start == -1 && end == 0 && flags[a] == -1 &&
        std::find(decrease.begin(), decrease.end(), static_cast<int64_t>(k)) != decrease.end()) {
      if (size == 0) throw Error("axis " + std::to_string(k) + " is empty: it has no last element to take");
      p.first[k] = size - 1;  // the dim's last element, its dim removed below
      p.count[k] = 1;
      continue;
    }
    if (start < 0) start += size;
    if (end < 0 && !(end == -1 && stride < 0)) end += size;
    if (stride < 0) {  // the range (end, start] as [end + 1, start + 1)
      ++start;
      ++end;
    }
    if ((stride < 0 && start <= end) || (stride > 0 && start >= end)) {
      throw Error("axis " + std::to_string(k) + ": start " + std::to_string(starts[a]) + " and end " +
                  std::to_string(ends[a]) + " make an empty range for stride " + std::to_string(stride) +
                  " (the start index and end index are invalid for their corresponding stride)");
    }
    const int64_t left = std::max<int64_t>(0, std::min(start, end)), right = std::min(size, std::max(start, end));
    const int64_t step = std::abs(stride);
    p.count[k] = right > left ? (right - left + step - 1) / step : 0;
    p.first[k] = stride > 0 ? left : right - 1;
    p.step[k] = stride;
  }
  for (size_t k = 0; k < in.size(); ++k) {
    if (std::find(decrease.begin(), decrease.end(), static_cast<int64_t>(k)) == decrease.end()) {
      p.out_dims.push_back(p.count[k]);
    } else if (p.count[k] != 1) {
      throw Error("decrease_axis " + std::to_string(k) + " keeps " + std::to_string(p.count[k]) +
                  " elements; a dim removed must keep 1");
    }
  }
  for (const int64_t k : decrease) NormalizeAxis(k, in.size(), "decrease_axis");
  if (p.out_dims.empty() && !decrease.empty()) p.out_dims.push_back(1);
  return p;
}

// Calls copy(out_index, input_index, n, input_step) for each run of n of Out's elements
// that are elements of Input input_step apart, Out's rows split across the passes' team:
// runs of consecutive elements, or, where the innermost dim is stepped, each row of Out.
template <class Copy> void ForEachRun(const StridedPlan& p, const std::vector<int64_t>& in, double bytes, Copy copy) {
  const auto source = [&p](size_t k, int64_t i) { return p.first[k] + i * p.step[k]; };
  if (p.count.empty() || p.step.back() == 1) {
    return ParallelForEachMappedRun(p.count, in, source, bytes,
                                    [&](int64_t o, int64_t i, int64_t n) { copy(o, i, n, int64_t{1}); });
  }
  std::vector<int64_t> rows = p.count;  // Out's rows, each one element of the walk
  const int64_t width = rows.back();
  rows.back() = 1;
  ParallelForEachMappedRun(rows, in, source, bytes,
                           [&](int64_t o, int64_t i, int64_t) { copy(o * width, i, width, p.step.back()); });
}

// n elements of `size` bytes from `from`, from_step elements apart, to `to`, to_step apart.
void CopyStepped(char* to, int64_t to_step, const char* from, int64_t from_step, int64_t n, int64_t size) {
  if (to_step == 1 && from_step == 1) return CopyBytes(to, from, n * size);
  const auto copy = [&](auto word) {
    using W = decltype(word);
    auto* t = reinterpret_cast<W*>(to);
    const auto* f = reinterpret_cast<const W*>(from);
    for (int64_t j = 0; j < n; ++j) t[j * to_step] = f[j * from_step];
  };
  switch (size) {
    case 1: return copy(uint8_t{});
    case 2: return copy(uint16_t{});
    case 4: return copy(uint32_t{});
    case 8: return copy(uint64_t{});
    default:
      for (int64_t j = 0; j < n; ++j) std::memcpy(to + j * to_step * size, from + j * from_step * size, size);
  }
}

void StridedSlice(KernelContext& ctx) {
  Tensor input = ctx.Input("Input");
  const std::vector<int64_t> in = input.dims();
  const StridedPlan p = PlanStrided(ctx, in);
  const auto size = static_cast<int64_t>(DataTypeSize(input.dtype()));
  const char* from = static_cast<const char*>(input.raw_data());
  WriteOutputBytes(ctx, "Out", {"Input"}, input.dtype(), p.out_dims, [&](char* out) {
    const double bytes = 2.0 * static_cast<double>(size * Product(p.count, 0, p.count.size()));
    ForEachRun(p, in, bytes, [&](int64_t o, int64_t i, int64_t n, int64_t step) {
      CopyStepped(out + o * size, 1, from + i * size, step, n, size);
    });
  });
}

void StridedSliceGrad(KernelContext& ctx) {
  const std::vector<int64_t> in = ctx.Input("Input").dims();
  const StridedPlan p = PlanStrided(ctx, in);
  Tensor g = ctx.Input("Out@GRAD");
  if (g.numel() != Product(p.count, 0, p.count.size())) {
    throw Error("Out@GRAD " + DimsString(g.dims()) + " does not hold the slice's " + DimsString(p.out_dims) +
                " elements");
  }
  const auto size = static_cast<int64_t>(DataTypeSize(g.dtype()));
  const char* from = static_cast<const char*>(g.raw_data());
  auto* dx = static_cast<char*>(ctx.Output("Input@GRAD").Allocate(g.dtype(), in));
  ParallelFill(dx, size * Product(in, 0, in.size()), char{0});
  // The slice's elements are distinct elements of Input: its rows may be written concurrently.
  ForEachRun(p, in, 2.0 * static_cast<double>(size * g.numel()), [&](int64_t o, int64_t i, int64_t n, int64_t step) {
    CopyStepped(dx + i * size, step, from + o * size, 1, n, size);
  });
}

}  // namespace

void RegisterStridedSlice(Registrar& r) {
  const OpSchema schema =
      OpSchema("strided_slice")
          .Doc(
              "Out = Input[start:end:stride] along each of `axes` (Python's slicing, with Paddle's bounds), the "
              "decrease_axis dims (each of length 1) removed. starts, ends and strides may come as tensors. As "
              "Paddle's; see strided_slice.cc.")
          .Input("Input", "the tensor (any dtype)")
          .Input("StartsTensor", "starts, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("EndsTensor", "ends, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("StridesTensor", "strides, 1-D int32/int64", RILL_SLOT_OPTIONAL)
          .Input("StartsTensorList", "starts, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("EndsTensorList", "ends, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("StridesTensorList", "strides, one 1-element tensor each", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("Out", "the slice")
          .Attr("axes", std::vector<int64_t>{}, "the dims sliced")
          .Attr("starts", std::vector<int64_t>{}, "where each slice starts")
          .Attr("ends", std::vector<int64_t>{}, "where each slice ends (exclusive)")
          .Attr("strides", std::vector<int64_t>{}, "each slice's step; negative: backwards")
          .Attr("infer_flags", std::vector<int64_t>{}, "-1 where a bound came as a tensor (Fluid's shape inference)")
          .Attr("decrease_axis", std::vector<int64_t>{}, "dims of length 1 to remove from Out")
          .KernelDtypeFrom("Input")
          .Grad(
              "strided_slice_grad",
              "Input,StartsTensor,EndsTensor,StridesTensor,StartsTensorList,EndsTensorList,StridesTensorList,Out@GRAD",
              "Input");
  r.Op(schema);
  r.Op(schema.MakeGradSchema().KernelDtypeFrom("Out@GRAD"));
  r.Kernel("strided_slice", RILL_CPU, RILL_ANY_DTYPE, &StridedSlice);
  r.Kernel("strided_slice_grad", RILL_CPU, RILL_ANY_DTYPE, &StridedSliceGrad);
}

}  // namespace rill::math
