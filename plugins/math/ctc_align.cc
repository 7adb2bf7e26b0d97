// ctc_align: the greedy decoding of a CTC output's best path, with Paddle's contract
// (paddle/fluid/operators/ctc_align_op.*): in each sequence of tokens, a run of the same
// token becomes one (merge_repeated) and the blank token goes. Input is int32 or int64:
// a LoD tensor [T, 1] (Output takes the new sequences' LoD; when no token at all is left,
// Output is [1, 1] holding -1, its LoD's offsets all 0, as Paddle's is), or padded [B, L]
// with InputLength (Output [B, L], each row's tokens then padding_value, and OutputLength
// [B, 1] their counts).
#include <algorithm>
#include <string>
#include <vector>

#include "ctc_align_loops.h"
#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "sequence.h"

namespace rill::math {
namespace {

// Which tokens of a sequence stay: not the blank, and with merge_repeated not the token
// before them (StaysAfter). Counted and copied by ctc_align_loops.h's loops.
template <class T> class Aligner {
 public:
  Aligner(T blank, bool merge_repeated) : blank_(blank), merge_(merge_repeated) {}

  // How many of in[0, n) stay.
  int64_t Count(const T* in, int64_t n) const { return loops_.count(in, n, blank_, merge_); }

  // Those of in[0, n) that stay, `kept` of them (Count's answer), to out[0, kept).
  void Copy(const T* in, int64_t n, T* out, int64_t kept) const { loops_.copy(in, n, out, kept, blank_, merge_); }

 private:
  const CtcAlignLoops<T>& loops_ = CtcAlignLoopsFor<T>();
  T blank_;
  bool merge_;
};

template <class T> void CtcAlign(KernelContext& ctx) {
  Tensor input = ctx.Input("Input");
  const Aligner<T> align(static_cast<T>(ctx.Attr<int64_t>("blank")), ctx.Attr<bool>("merge_repeated"));
  const T* in = input.data<T>();
  const double bytes = 2.0 * static_cast<double>(input.numel()) * sizeof(T);
  if (std::optional<Tensor> lengths = OptionalInput(ctx, "InputLength")) {
    const std::vector<int64_t> d = input.dims();
    if (d.size() != 2 || lengths->dtype() != input.dtype() || lengths->numel() != d[0]) {
      throw Error("Input " + DimsString(d) + " must be [B, L] (padded) with InputLength holding B lengths of its " +
                  "dtype, got " + DimsString(lengths->dims()));
    }
    const T* len = lengths->data<T>();
    for (int64_t b = 0; b < d[0]; ++b) {
      if (len[b] < 0 || len[b] > d[1]) {
        throw Error("InputLength[" + std::to_string(b) + "] = " + std::to_string(len[b]) + " is outside 0 .. " +
                    std::to_string(d[1]));
      }
    }
    const T padding = static_cast<T>(ctx.Attr<int64_t>("padding_value"));
    std::vector<T> counts(static_cast<size_t>(d[0]));
    WriteOutput<T>(ctx, "Output", {"Input", "InputLength"}, d, [&](T* out) {
      ParallelFor(d[0], bytes, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t b = first; b < last; ++b) {
          const T* row = in + b * d[1];
          T* to = out + b * d[1];
          const int64_t kept = align.Count(row, static_cast<int64_t>(len[b]));
          align.Copy(row, static_cast<int64_t>(len[b]), to, kept);
          std::fill(to + kept, to + d[1], padding);
          counts[static_cast<size_t>(b)] = static_cast<T>(kept);
        }
      });
    });
    std::copy(counts.begin(), counts.end(), ctx.AllocateOutput<T>("OutputLength", {d[0], 1}));
    return;
  }
  // Two passes over the sequences on the team: what each keeps (Output's LoD, by a running
  // sum), then each sequence's tokens written to its own part of Output.
  const std::vector<uint64_t> o = SequenceOffsets(ctx.op(), "Input", input, 1);
  const auto seqs = static_cast<int64_t>(o.size()) - 1;
  std::vector<uint64_t> offsets(o.size(), 0);
  ParallelFor(seqs, bytes / 2, [&](int64_t, int64_t first, int64_t last) {
    for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(last); ++s) {
      offsets[s + 1] = static_cast<uint64_t>(align.Count(in + o[s], static_cast<int64_t>(o[s + 1] - o[s])));
    }
  });
  for (size_t s = 1; s < offsets.size(); ++s) offsets[s] += offsets[s - 1];
  if (offsets.back() == 0) {
    ctx.AllocateOutput<T>("Output", {1, 1})[0] = T(-1);
  } else {
    WriteOutput<T>(ctx, "Output", {"Input"}, {static_cast<int64_t>(offsets.back()), 1}, [&](T* out) {
      ParallelFor(seqs, bytes, [&](int64_t, int64_t first, int64_t last) {
        for (auto s = static_cast<size_t>(first); s < static_cast<size_t>(last); ++s) {
          align.Copy(in + o[s], static_cast<int64_t>(o[s + 1] - o[s]), out + offsets[s],
                     static_cast<int64_t>(offsets[s + 1] - offsets[s]));
        }
      });
    });
  }
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
