#include "permute.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels.h"
#include "memory_loops.h"

namespace rill::math {
namespace {

// Out's dims, outermost first, each with its stride in `in` (in elements), neighbours that
// are neighbours in `in` too merged and size-1 dims dropped.
struct View {
  std::vector<int64_t> dims, in_strides;
};

View Coalesced(const std::vector<int64_t>& in_dims, const std::vector<size_t>& perm) {
  std::vector<int64_t> strides(in_dims.size(), 1);
  for (size_t k = in_dims.size(); k-- > 1;) strides[k - 1] = strides[k] * in_dims[k];
  View v;
  for (size_t p : perm) {
    const int64_t d = in_dims[p], s = strides[p];
    if (d == 1) continue;
    if (!v.dims.empty() && v.in_strides.back() == s * d) {
      v.dims.back() *= d;
      v.in_strides.back() = s;
    } else {
      v.dims.push_back(d);
      v.in_strides.push_back(s);
    }
  }
  return v;
}

// The offsets in `in` and in `out` of the element whose index along each dim of `dims` (a
// subset of v's, given by position) is `index`'s mixed-radix digits.
void Offsets(const View& v, const std::vector<int64_t>& out_strides, const std::vector<size_t>& dims, int64_t index,
             int64_t* in_offset, int64_t* out_offset) {
  *in_offset = *out_offset = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    const size_t d = dims[k];
    const int64_t digit = index % v.dims[d];
    index /= v.dims[d];
    *in_offset += digit * v.in_strides[d];
    *out_offset += digit * out_strides[d];
  }
}

// Out's rows are runs of `in`: each copied whole.
void CopyRows(const char* in, char* out, const View& v, const std::vector<int64_t>& out_strides, size_t size) {
  const size_t r = v.dims.size();
  const int64_t row = v.dims[r - 1], rows = out_strides[0] * v.dims[0] / row;
  std::vector<size_t> outer(r - 1);
  for (size_t k = 0; k + 1 < r; ++k) outer[k] = k;
  ParallelFor(rows, 2.0 * static_cast<double>(size) * rows * row, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      int64_t from, to;
      Offsets(v, out_strides, outer, i, &from, &to);
      CopyBytes(out + static_cast<size_t>(to) * size, in + static_cast<size_t>(from) * size,
                static_cast<size_t>(row) * size);
    }
  });
}

// Out's innermost dim (stride sl in `in`) against dim j (in's innermost, stride 1), in tiles
// of kTile x kTile; every other dim is an outer loop.
constexpr int64_t kTile = 32;

template <class E>
void TransposeTiles(const E* in, E* out, const View& v, const std::vector<int64_t>& out_strides, size_t j) {
  const size_t r = v.dims.size(), l = r - 1;
  const int64_t cols = v.dims[l], sl = v.in_strides[l], rows = v.dims[j], oj = out_strides[j];
  std::vector<size_t> outer;
  int64_t outer_count = 1;
  for (size_t k = 0; k < l; ++k) {
    if (k != j) outer.push_back(k), outer_count *= v.dims[k];
  }
  const int64_t strips = (rows + kTile - 1) / kTile;
  ParallelFor(outer_count * strips, 2.0 * sizeof(E) * outer_count * rows * cols,
              [&](int64_t, int64_t first, int64_t last) {
                for (int64_t item = first; item < last; ++item) {
                  int64_t in_base, out_base;
                  Offsets(v, out_strides, outer, item / strips, &in_base, &out_base);
                  const int64_t a0 = item % strips * kTile, a1 = std::min(rows, a0 + kTile);
                  for (int64_t b0 = 0; b0 < cols; b0 += kTile) {
                    const int64_t b1 = std::min(cols, b0 + kTile);
                    if constexpr (std::is_same_v<E, uint32_t> || std::is_same_v<E, uint64_t>) {
                      // in's [b, a] tile (rows b, stride sl) transposed into out's [a, b] one
                      memory::TransposeFor<E>()(in + in_base + a0 + b0 * sl, sl, out + out_base + a0 * oj + b0, oj,
                                                b1 - b0, a1 - a0);
                      continue;
                    }
                    for (int64_t a = a0; a < a1; ++a) {
                      E* o = out + out_base + a * oj;
                      const E* i = in + in_base + a;
                      for (int64_t b = b0; b < b1; ++b) o[b] = i[b * sl];
                    }
                  }
                }
              });
}

// An element of N bytes, moved as one value.
template <size_t N> struct Element { char bytes[N]; };

}  // namespace

void Permute(const char* in, char* out, const std::vector<int64_t>& in_dims, const std::vector<size_t>& perm,
             size_t size) {
  const View v = Coalesced(in_dims, perm);
  const size_t r = v.dims.size();
  if (r <= 1) {  // the elements keep their order
    int64_t n = 1;
    for (int64_t d : in_dims) n *= d;
    return ParallelCopy(in, out, static_cast<size_t>(n) * size);
  }
  std::vector<int64_t> out_strides(r, 1);
  for (size_t k = r - 1; k-- > 0;) out_strides[k] = out_strides[k + 1] * v.dims[k + 1];
  if (v.in_strides[r - 1] == 1) return CopyRows(in, out, v, out_strides, size);
  const size_t j = static_cast<size_t>(std::find(v.in_strides.begin(), v.in_strides.end(), 1) - v.in_strides.begin());
  const auto tiles = [&](auto element) {
    using E = decltype(element);
    TransposeTiles(reinterpret_cast<const E*>(in), reinterpret_cast<E*>(out), v, out_strides, j);
  };
  switch (size) {
    case 1: return tiles(Element<1>{});
    case 2: return tiles(Element<2>{});
    case 4: return tiles(uint32_t{});  // words: tiles transposed in registers (memory_loops.h)
    case 8: return tiles(uint64_t{});
    case 16: return tiles(Element<16>{});
    default: throw Error("transpose of elements of " + std::to_string(size) + " bytes");
  }
}

}  // namespace rill::math
