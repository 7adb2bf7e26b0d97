// plugins/math/philox.h — Philox4x32-10, the counter-based generator of Salmon, Moraes,
// Dror and Shaw ("Parallel random numbers: as easy as 1, 2, 3", SC 2011), as Random123 and
// cuRAND define it.
//
// Block `counter` of the stream named by `key` is four 32-bit words computed from (key,
// counter) alone: any part of a stream can be made on any thread, so a pass split across
// the passes' team (parallel_for.h) gives the same bits whatever the split and the thread
// budget. Ten rounds, each two 32 x 32 -> 64-bit products; the key is bumped by the Weyl
// constants before rounds 2 to 10. Checked against Random123's known answers in the tests.
#ifndef RILL_PLUGINS_MATH_PHILOX_H_
#define RILL_PLUGINS_MATH_PHILOX_H_

#include <algorithm>
#include <array>
#include <cstdint>

namespace rill::math {

struct PhiloxKey {
  uint32_t lo = 0, hi = 0;
};
inline PhiloxKey PhiloxKeyOf(uint64_t seed) { return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}; }

// The four words of block `counter` (its words least significant first).
inline std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter, PhiloxKey key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53, kMultiplier1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t k0 = key.lo, k1 = key.hi;
  std::array<uint32_t, 4> c = counter;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint64_t p0 = uint64_t{kMultiplier0} * c[0], p1 = uint64_t{kMultiplier1} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
  }
  return c;
}

// Blocks first .. first + count - 1 of a stream into words[4 count], block b's words at
// 4 (b - first); block b's counter is b in its low two words, 0 in the others. Runs of kLanes blocks go round by round across the run, so that the
// products of one round are independent and vectorize, instead of each block's ten rounds
// waiting on each other; the words are Philox4x32's.
inline void PhiloxBlocks(uint64_t first, int64_t count, PhiloxKey key, uint32_t* words) {
  constexpr int kLanes = 16;
  constexpr uint32_t kMultiplier0 = 0xD2511F53, kMultiplier1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  for (int64_t at = 0; at < count; at += kLanes) {
    const int lanes = static_cast<int>(std::min<int64_t>(kLanes, count - at));
    uint32_t c0[kLanes], c1[kLanes], c2[kLanes] = {}, c3[kLanes] = {};
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t index = first + static_cast<uint64_t>(at + l);
      c0[l] = static_cast<uint32_t>(index);
      c1[l] = static_cast<uint32_t>(index >> 32);
    }
    uint32_t k0 = key.lo, k1 = key.hi;
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += kWeyl0;
        k1 += kWeyl1;
      }
      for (int l = 0; l < kLanes; ++l) {
        const uint64_t p0 = uint64_t{kMultiplier0} * c0[l], p1 = uint64_t{kMultiplier1} * c2[l];
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
        c1[l] = static_cast<uint32_t>(p1);
        c3[l] = static_cast<uint32_t>(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
    }
    for (int l = 0; l < lanes; ++l) {
      uint32_t* w = words + 4 * (at + l);
      w[0] = c0[l];
      w[1] = c1[l];
      w[2] = c2[l];
      w[3] = c3[l];
    }
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_PHILOX_H_
