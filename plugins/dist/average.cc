#include "average.h"

#include <algorithm>

#include "rill/abi.h"

namespace rill::dist {
namespace {

// Calls f(values, first, count) for runs of the next `n` values of T in `bytes`, staged
// through a small buffer: the received pieces need not be aligned to T, nor end on a
// value's boundary.
template <class T, class F> void ForEachRun(ReceivedBytes bytes, size_t n, F&& f) {
  constexpr size_t kRun = 2048;
  T run[kRun];
  for (size_t first = 0; first < n; first += kRun) {
    const size_t count = std::min(kRun, n - first);
    bytes.Read(run, count * sizeof(T));
    f(run, first, count);
  }
}

template <class T>
void Average(const std::vector<int64_t>& dims, const std::vector<const ReceivedGradient*>& parts,
             const std::function<void*()>& dense, const std::function<void*(const std::vector<int64_t>&)>& sparse) {
  const T scale = T(1) / static_cast<T>(parts.size());
  const auto rescale = [&](T* out, size_t n) {
    if (parts.size() == 1) return;
    for (size_t i = 0; i < n; ++i) out[i] *= scale;
  };
  const size_t numel = static_cast<size_t>(CheckedNumel(dims));
  const size_t width = dims.empty() || dims[0] == 0 ? 0 : numel / static_cast<size_t>(dims[0]);
  const bool all_sparse = std::all_of(parts.begin(), parts.end(), [](const ReceivedGradient* g) { return g->sparse; });
  if (all_sparse) {
    std::vector<int64_t> rows;
    for (const ReceivedGradient* g : parts) rows.insert(rows.end(), g->rows.begin(), g->rows.end());
    T* out = static_cast<T*>(sparse(rows));
    T* at = out;
    for (const ReceivedGradient* g : parts) {
      ReceivedBytes(g->bytes).Read(at, g->bytes.size());
      at += g->bytes.size() / sizeof(T);
    }
    rescale(out, static_cast<size_t>(at - out));
    return;
  }
  T* out = static_cast<T*>(dense());
  // Start from a dense part when there is one: a pass less than zero-filling first.
  const auto first_dense =
      std::find_if(parts.begin(), parts.end(), [](const ReceivedGradient* g) { return !g->sparse; });
  ReceivedBytes((*first_dense)->bytes).Read(out, numel * sizeof(T));
  for (auto it = parts.begin(); it != parts.end(); ++it) {
    if (it == first_dense) continue;
    const ReceivedGradient* g = *it;
    if (!g->sparse) {
      ForEachRun<T>(g->bytes, numel, [&](const T* in, size_t first, size_t count) {
        for (size_t i = 0; i < count; ++i) out[first + i] += in[i];
      });
      continue;
    }
    size_t r = 0, j = 0;  // the next value adds to column j of row rows[r]
    ForEachRun<T>(g->bytes, g->rows.size() * width, [&](const T* in, size_t, size_t count) {
      for (size_t i = 0; i < count; ++i) {
        out[static_cast<size_t>(g->rows[r]) * width + j] += in[i];
        if (++j == width) {
          j = 0;
          ++r;
        }
      }
    });
  }
  rescale(out, numel);
}

}  // namespace

void WriteAverage(int32_t dtype, const std::vector<int64_t>& dims, const std::vector<const ReceivedGradient*>& parts,
                  const std::function<void*()>& dense,
                  const std::function<void*(const std::vector<int64_t>&)>& sparse) {
  if (dtype == RILL_FP32) {
    Average<float>(dims, parts, dense, sparse);
  } else {
    Average<double>(dims, parts, dense, sparse);
  }
}

}  // namespace rill::dist
