// ctc_align: the greedy decoding of a CTC output's best path, with Paddle's contract
// (paddle/fluid/operators/ctc_align_op.*): in each sequence of tokens, a run of the same
// token becomes one (merge_repeated) and the blank token goes. Input is int32 or int64:
// a LoD tensor [T, 1] (Output takes the new sequences' LoD; when no token at all is left,
// Output is [1, 1] holding -1, its LoD's offsets all 0, as Paddle's is), or padded [B, L]
// with InputLength (Output [B, L], each row's tokens then padding_value, and OutputLength
// [B, 1] their counts).
#include <string>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Appends to `out` the tokens of in[0, n) that stay: not blank, and with merge_repeated
// not the token before them (a blank between two equal tokens keeps both).
template <class T> void AlignOne(const T* in, int64_t n, int64_t blank, bool merge_repeated, std::vector<T>& out) {
  for (int64_t i = 0; i < n; ++i) {
    if (in[i] != blank && !(merge_repeated && i > 0 && in[i] == in[i - 1])) out.push_back(in[i]);
  }
}

template <class T> void CtcAlign(KernelContext& ctx) {
  Tensor input = ctx.Input("Input");
  const int64_t blank = ctx.Attr<int64_t>("blank");
  const bool merge_repeated = ctx.Attr<bool>("merge_repeated");
  const T* in = input.data<T>();
  std::vector<T> kept;
  if (std::optional<Tensor> lengths = OptionalInput(ctx, "InputLength")) {
    const std::vector<int64_t> d = input.dims();
    if (d.size() != 2 || lengths->dtype() != input.dtype() || lengths->numel() != d[0]) {
      throw Error("Input " + DimsString(d) + " must be [B, L] (padded) with InputLength holding B lengths of its " +
                  "dtype, got " + DimsString(lengths->dims()));
    }
    const T* len = lengths->data<T>();
    const T padding = static_cast<T>(ctx.Attr<int64_t>("padding_value"));
    T* out = ctx.AllocateOutput<T>("Output", d);
    T* out_len = ctx.AllocateOutput<T>("OutputLength", {d[0], 1});
    for (int64_t b = 0; b < d[0]; ++b) {
      if (len[b] < 0 || len[b] > d[1]) {
        throw Error("InputLength[" + std::to_string(b) + "] = " + std::to_string(len[b]) + " is outside 0 .. " +
                    std::to_string(d[1]));
      }
      kept.clear();
      AlignOne(in + b * d[1], static_cast<int64_t>(len[b]), blank, merge_repeated, kept);
      std::copy(kept.begin(), kept.end(), out + b * d[1]);
      std::fill(out + b * d[1] + static_cast<int64_t>(kept.size()), out + (b + 1) * d[1], padding);
      out_len[b] = static_cast<T>(kept.size());
    }
    return;
  }
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "Input", input, 1);
  std::vector<uint64_t> offsets(1, 0);
  for (size_t s = 0; s + 1 < o.size(); ++s) {
    AlignOne(in + o[s], static_cast<int64_t>(o[s + 1] - o[s]), blank, merge_repeated, kept);
    offsets.push_back(kept.size());
  }
  if (kept.empty()) kept.push_back(T(-1));
  T* out = ctx.AllocateOutput<T>("Output", {static_cast<int64_t>(kept.size()), 1});
  std::copy(kept.begin(), kept.end(), out);
  ctx.Output("Output").set_lod({offsets});
}

}  // namespace

void RegisterCtcAlign(Registrar& r) {
  r.Op(OpSchema("ctc_align")
           .Doc("Each sequence's tokens with repeats merged (merge_repeated) and blanks removed: a CTC best path's "
                "greedy decoding. As Paddle's; see ctc_align.cc.")
           .Input("Input", "int32/int64 [T, 1] with sequences (LoD), or [B, L] padded")
           .Input("InputLength", "[B] or [B, 1], Input's dtype: each padded sequence's length", RILL_SLOT_OPTIONAL)
           .Output("Output", "the kept tokens: [T', 1] with their LoD, or [B, L] padded")
           .Output("OutputLength", "[B, 1]: each padded sequence's kept count (padded input only)", RILL_SLOT_OPTIONAL)
           .Attr("blank", int64_t{0}, "the blank token")
           .Attr("merge_repeated", true, "merge a run of one token into one")
           .Attr("padding_value", int64_t{0}, "what fills a padded row after its kept tokens")
           .KernelDtypeFrom("Input"));
  RegisterCpu<int32_t, int64_t>(r, "ctc_align", [](auto t) { return &CtcAlign<decltype(t)>; });
}

}  // namespace rill::math
