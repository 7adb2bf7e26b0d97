#include "core/runtime/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <iterator>

#include "core/io/npy.h"
#include "core/errors.h"
#include "core/runtime/variable.h"
#include "test_util.h"

namespace rill::core {
namespace {

TEST(Tensor, AllocateShapesAndAligns) {
  Tensor t;
  EXPECT_FALSE(t.initialized());
  EXPECT_EQ(t.dtype(), -1);
  void* p = t.Allocate(RILL_FP32, {2, 3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.dims().ToVector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.place(), Place{});
  Tensor scalar;
  scalar.Allocate(RILL_INT8, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(scalar.data()) % 64, 0u);
}

// Up to 64 bytes the memory lives inside the buffer's own allocation (a 128-byte block of
// the small-object pages, the data at its second 64 bytes; where the allocation is not
// aligned so, in sanitizer builds, in a block of its own), past that in a block of its
// own: either way it is 64-byte aligned, holds every byte asked for, outlives the
// tensor that made it while another shares it, and stays apart from every other buffer.
TEST(Tensor, SmallAndLargeBuffersAlignHoldTheirBytesAndShare) {
  std::vector<Tensor> made;
  for (int64_t n : {1, 7, 8, 9, 16, 63, 64, 65, 100, 500}) {
    Tensor t;
    auto* bytes = static_cast<uint8_t*>(t.Allocate(RILL_UINT8, {n}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % 64, 0u) << n << " bytes";
    for (int64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(n + i);
    made.push_back(t);  // shares the buffer
  }
  for (const Tensor& t : made) {
    const int64_t n = t.numel();
    const auto* bytes = t.data_as<uint8_t>();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bytes[i], static_cast<uint8_t>(n + i)) << n << " bytes, byte " << i;
  }
  Tensor scalar;
  *static_cast<double*>(scalar.AllocateScalar(RILL_FP64)) = 2.5;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(scalar.data()) % 64, 0u);
  if (kSmallObjectCaches) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(scalar.data()) % 128, 64u) << "inside its Buffer's 128-byte block";
  }
  Tensor sharer = scalar;
  scalar = Tensor();
  EXPECT_EQ(*sharer.data_as<double>(), 2.5) << "a scalar's memory lives as long as a sharer";
}

// Shapes up to Dims::kInline live inside the tensor, longer ones on the heap; a tensor
// moving between the two, copied, moved or swapped with one of the other kind keeps its
// shape exactly.
// A buffer of 2 MiB or more starts on a huge-page boundary and its whole huge pages carry
// the kernel's huge-page advice ("hg" in the mapping's VmFlags); the tail past them, and
// smaller buffers, do not, so no buffer holds more memory than it asks for.
TEST(Tensor, LargeBuffersAskForHugePagesOverTheirWholeHugePagesOnly) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  std::string thp;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled") >> std::ws, thp);
  if (thp.empty() || thp.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "this kernel offers no transparent huge pages (" << (thp.empty() ? "not built in" : thp) << ")";
  }
  // The VmFlags of the mapping (VMA) holding `addr`, from /proc/self/smaps.
  const auto flags_at = [](uintptr_t addr) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
      uintptr_t lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
        inside = lo <= addr && addr < hi;
      } else if (inside && line.rfind("VmFlags:", 0) == 0) {
        return line;
      }
    }
    return std::string("no mapping");
  };
  const auto advised = [&](uintptr_t addr) { return flags_at(addr).find(" hg") != std::string::npos; };
  Tensor large;
  large.Allocate(RILL_UINT8, {static_cast<int64_t>(2 * kHuge + 4096)});  // two huge pages and a tail
  const auto at = reinterpret_cast<uintptr_t>(large.data());
  EXPECT_EQ(at % kHuge, 0u);
  EXPECT_TRUE(advised(at)) << flags_at(at);
  EXPECT_TRUE(advised(at + 2 * kHuge - 1)) << flags_at(at + 2 * kHuge - 1);
  EXPECT_FALSE(advised(at + 2 * kHuge)) << "the tail: " << flags_at(at + 2 * kHuge);
  Tensor small;
  small.Allocate(RILL_UINT8, {static_cast<int64_t>(kHuge - 4096)});
  EXPECT_FALSE(advised(reinterpret_cast<uintptr_t>(small.data())));
}

// Tensors allocated together (a model's parameters) each get their own aligned slice of
// one allocation, which lives while any of them does; writing one leaves the others be.
TEST(Tensor, TensorsAllocatedTogetherHoldTheirOwnSlicesOfOneAllocation) {
  std::vector<Tensor> ts =
      Tensor::AllocateTogether({{RILL_FP32, {3, 5}}, {RILL_INT8, {1}}, {RILL_FP64, {0}}, {RILL_INT64, {7}}});
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_EQ(ts[0].dims().ToVector(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(ts[2].numel(), 0);
  EXPECT_EQ(ts[3].dtype(), RILL_INT64);
  for (const auto& t : ts) EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % Buffer::kAlignment, 0u);
  EXPECT_GE(static_cast<char*>(ts[1].data()), static_cast<char*>(ts[0].data()) + 60) << "slices do not overlap";
  for (int i = 0; i < 15; ++i) ts[0].data_as<float>()[i] = static_cast<float>(i);
  for (int i = 0; i < 7; ++i) ts[3].data_as<int64_t>()[i] = -i;
  *ts[1].data_as<int8_t>() = 9;
  EXPECT_EQ(ts[0].ValuesToString(), "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14");
  Tensor last = ts[3];
  ts.clear();  // the allocation stays while `last` holds its slice
  EXPECT_EQ(last.ValuesToString(), "0 -1 -2 -3 -4 -5 -6");
  last.Allocate(RILL_INT64, {7});  // its sole owner rewrites its own slice in place
  EXPECT_EQ(last.ValuesToString(), "0 -1 -2 -3 -4 -5 -6");
  EXPECT_THROW(Tensor::AllocateTogether({{RILL_FP32, {int64_t{1} << 62}}}), Error);
}

TEST(Tensor, ShapesOfAnyRankSurviveCopiesMovesAndSwaps) {
  const std::vector<int64_t> small{2, 3};
  const std::vector<int64_t> large{1, 2, 3, 4, 5, 6};
  Tensor a, b;
  a.Allocate(RILL_FP32, small);
  b.Allocate(RILL_FP32, large);
  a.swap(b);
  EXPECT_EQ(a.dims().ToVector(), large);
  EXPECT_EQ(b.dims().ToVector(), small);
  EXPECT_EQ(a.numel(), 720);
  Tensor c = a;  // shares the buffer, copies the shape
  a.Allocate(RILL_FP32, small);
  EXPECT_EQ(c.dims().ToVector(), large);
  EXPECT_EQ(a.dims().ToVector(), small);
  EXPECT_TRUE(a.dims() == b.dims());
  EXPECT_TRUE(a.dims() != c.dims());
  Tensor d = std::move(c);
  EXPECT_EQ(d.dims().ToVector(), large);
  c = std::move(b);
  EXPECT_EQ(c.dims().ToVector(), small);
  d.Allocate(RILL_INT8, {7});  // from the heap back to one dimension
  EXPECT_EQ(d.dims().ToVector(), std::vector<int64_t>{7});
  EXPECT_EQ(d.numel(), 7);
  d.Allocate(RILL_INT8, d.dims().data(), d.dims().size());  // its own shape again
  EXPECT_EQ(d.dims().ToVector(), std::vector<int64_t>{7});
}

// The native steps' scalar test (one element on the CPU, its rank) follows every way a
// tensor's shape changes: allocation, reshaping, AllocateScalar, swap, copy and move.
TEST(Tensor, AOneElementHostTensorKnowsItsRank) {
  Tensor t;
  EXPECT_EQ(t.host_scalar_rank(), -1);
  EXPECT_FALSE(t.is_scalar());
  t.Allocate(RILL_INT64, {1});
  EXPECT_EQ(t.host_scalar_rank(), 1);
  EXPECT_TRUE(t.is_scalar());
  t.Allocate(RILL_INT64, {1, 1, 1});
  EXPECT_EQ(t.host_scalar_rank(), 3);
  EXPECT_FALSE(t.is_scalar());
  t.Allocate(RILL_INT64, {});
  EXPECT_EQ(t.host_scalar_rank(), 0);
  t.Allocate(RILL_INT64, {2});
  EXPECT_EQ(t.host_scalar_rank(), -1);
  t.Allocate(RILL_INT64, {1, 0});
  EXPECT_EQ(t.host_scalar_rank(), -1) << "no element";
  Tensor fresh;
  fresh.AllocateScalar(RILL_FP32);
  EXPECT_EQ(fresh.host_scalar_rank(), 1);
  EXPECT_TRUE(fresh.is_scalar());
  fresh.swap(t);
  EXPECT_EQ(fresh.host_scalar_rank(), -1);
  EXPECT_EQ(t.host_scalar_rank(), 1);
  const Tensor copy = t;
  EXPECT_EQ(copy.host_scalar_rank(), 1);
  Tensor moved = std::move(fresh);
  EXPECT_EQ(moved.host_scalar_rank(), -1);
  t.mutable_lod().push_back({0, 1});
  EXPECT_EQ(t.host_scalar_rank(), 1) << "LoD is not part of it";
  EXPECT_FALSE(t.is_scalar()) << "a scalar has no LoD";
  EXPECT_EQ(t.host_scalar_key(), Tensor::HostScalarKey(RILL_FP32, 1));
  EXPECT_NE(t.host_scalar_key(), Tensor::HostScalarKey(RILL_INT32, 1));
  EXPECT_NE(t.host_scalar_key(), Tensor::HostScalarKey(RILL_FP32, 2));
  EXPECT_LT(moved.host_scalar_key(), 0);
  EXPECT_LT(Tensor::HostScalarKey(0x100 | RILL_FP32, 0), 0) << "no dtype past 255 matches a tensor's key";
}

TEST(Tensor, ReusesMemoryOnlyWhenSoleOwnerAndSameSize) {
  Tensor t;
  void* p = t.Allocate(RILL_FP32, {4});
  EXPECT_EQ(t.Allocate(RILL_INT32, {2, 2}), p) << "same byte size, sole owner: memory kept";
  Tensor shared = t;  // shares the buffer
  EXPECT_NE(t.Allocate(RILL_INT32, {4}), p) << "a shared buffer is never written behind a sharer's back";
  EXPECT_EQ(shared.data(), p);
  EXPECT_EQ(shared.OwnData(), p) << "t took new memory: shared is the sole owner";
  Tensor again = shared;
  EXPECT_EQ(shared.OwnData(), nullptr) << "shared with again";
  again = Tensor();
  EXPECT_EQ(shared.OwnData(), p) << "the sole owner again";
  EXPECT_EQ(Tensor().OwnData(), nullptr) << "no memory";
}

TEST(Tensor, DeepCopyIsIndependent) {
  Tensor a;
  a.Allocate(RILL_INT64, {3});
  for (int i = 0; i < 3; ++i) a.data_as<int64_t>()[i] = i + 1;
  a.mutable_lod() = {{0, 1, 3}};
  Tensor b = a.DeepCopy();
  a.data_as<int64_t>()[0] = 100;
  EXPECT_EQ(b.data_as<int64_t>()[0], 1);
  EXPECT_EQ(b.lod(), a.lod());
  EXPECT_EQ(b.Describe(), "int64[3] {1, 2, 3}");
}

// A tensor keeps its LoD apart (one pointer, none for most tensors) with a value's
// semantics: a copy has its own, a move or swap takes it, and an empty one reads empty.
TEST(Tensor, LoDIsCopiedMovedAndSwappedAsAValue) {
  Tensor a;
  a.Allocate(RILL_INT64, {3});
  EXPECT_TRUE(a.lod().empty());
  a.mutable_lod() = {{0, 1, 3}};
  Tensor b = a;  // shares the buffer, copies the LoD
  b.mutable_lod()[0][1] = 2;
  EXPECT_EQ(a.lod(), (LoD{{0, 1, 3}})) << "the copy's LoD is its own";
  EXPECT_EQ(b.lod(), (LoD{{0, 2, 3}}));
  Tensor plain;
  plain.Allocate(RILL_INT64, {3});
  b = plain;
  EXPECT_TRUE(b.lod().empty()) << "assigning a tensor without LoD clears it";
  Tensor c = std::move(a);
  EXPECT_EQ(c.lod(), (LoD{{0, 1, 3}}));
  c.swap(b);
  EXPECT_TRUE(c.lod().empty());
  EXPECT_EQ(b.lod(), (LoD{{0, 1, 3}}));
  EXPECT_FALSE(b.is_scalar());
}

TEST(Tensor, BadShapesAndPlacesAreErrors) {
  Tensor t;
  EXPECT_THROW(t.Allocate(RILL_FP32, {2, -1}), Error);
  EXPECT_THROW(t.Allocate(42, {1}), Error);
  try {
    t.Allocate(RILL_FP32, {1}, Place{7, 0});  // a device type no plugin provides
    FAIL() << "allocation on a device nobody drives must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RILL_UNIMPLEMENTED);
    EXPECT_EQ(std::string(e.what()), "cannot allocate on device(7):0: no loaded plugin provides that device");
  }
  EXPECT_FALSE(t.initialized()) << "a failed allocation leaves the tensor as it was";
}

TEST(Variable, HoldsOneKindOfValue) {
  static int destroyed = 0;
  static const CustomType kType{nullptr, "test.thing", "test",
                                [](void* v) {
                                  ++destroyed;
                                  delete static_cast<int*>(v);
                                },
                                nullptr};
  Variable v;
  EXPECT_EQ(v.Describe(), "empty");
  v.SetCustom(&kType, new int(5));
  EXPECT_EQ(v.KindName(), "test.thing");
  EXPECT_THROW(v.GetMutableTensor(), Error);
  Variable copy;
  EXPECT_THROW(copy.CopyFrom(v), Error) << "custom values move, they do not copy";
  Variable moved;
  moved.MoveFrom(v);
  EXPECT_FALSE(v.initialized());
  EXPECT_EQ(destroyed, 0);
  moved.Clear();
  EXPECT_EQ(destroyed, 1) << "the plugin's destroy callback runs when the value goes";
}

// A move over a variable's tensor leaves its memory to the thread's next allocation of
// that size (Tensor::RecycleBuffer), unless another tensor still shares it.
TEST(Variable, AMoveLeavesTheOverwrittenMemoryToTheNextAllocationUnlessShared) {
  Variable a, b;
  a.GetMutableTensor()->Allocate(RILL_INT64, {1});
  void* overwritten = a.GetTensor()->data();
  b.GetMutableTensor()->Allocate(RILL_INT64, {1});
  *b.GetTensor()->data_as<int64_t>() = 7;
  a.MoveFrom(b);
  EXPECT_EQ(*a.GetTensor()->data_as<int64_t>(), 7);
  Tensor other_size;
  EXPECT_NE(other_size.Allocate(RILL_INT32, {1}), overwritten) << "4 bytes: the 8-byte spare stays";
  Tensor next;
  EXPECT_EQ(next.Allocate(RILL_INT64, {1}), overwritten);

  const Tensor keep = *a.GetTensor();  // shares a's memory
  Variable c;
  c.GetMutableTensor()->Allocate(RILL_INT64, {1});
  a.MoveFrom(c);
  Tensor after;
  EXPECT_NE(after.Allocate(RILL_INT64, {1}), keep.data()) << "memory another tensor shares is never handed out";
  EXPECT_EQ(*keep.data_as<int64_t>(), 7);
}

// Sizes from untrusted shapes never wrap: 2^62 fp32 elements fit int64 but their bytes
// do not, and must not be allocated as a 0-byte buffer.
TEST(Tensor, AShapeWhoseSizeDoesNotFitIsAnError) {
  const auto expect_refused = [](int32_t dtype, const std::vector<int64_t>& dims, const std::string& why) {
    Tensor t;
    try {
      t.Allocate(dtype, dims);
      ADD_FAILURE() << "allocated " << t.nbytes() << " bytes; expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), RILL_INVALID_ARGUMENT);
    }
    EXPECT_FALSE(t.initialized());
  };
  expect_refused(
      RILL_FP32, {int64_t{1} << 62},
      "tensor of fp32: shape [4611686018427387904] of 4-byte elements is more bytes than memory can address");
  expect_refused(RILL_INT8, {int64_t{1} << 32, int64_t{1} << 32}, "has more elements than int64 can count");
  expect_refused(RILL_FP32, {3, -2}, "shape [3, -2] has a negative dimension");
  Tensor empty;
  empty.Allocate(RILL_FP32, {int64_t{1} << 40, int64_t{1} << 40, 0});
  EXPECT_EQ(empty.numel(), 0) << "a 0 dimension makes any shape empty";
  try {
    Tensor huge;
    huge.Allocate(RILL_UINT8, {int64_t{1} << 50});
    ADD_FAILURE() << "allocated a petabyte";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), RILL_RESOURCE_EXHAUSTED);
    EXPECT_NE(std::string(e.what()).find("1125899906842624 bytes"), std::string::npos) << "the true size: " << e.what();
  }
}

TEST(Npy, RoundTripsEveryShape) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 1, 4}}) {
    Tensor t;
    t.Allocate(RILL_FP32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = 0.5f * static_cast<float>(i);
    const std::string path = test::TempPath("rt.npy");
    WriteNpy(t, path);
    Tensor back = ReadNpy(path);
    EXPECT_EQ(back.dims().ToVector(), dims);
    EXPECT_EQ(back.dtype(), RILL_FP32);
    EXPECT_EQ(back.ValuesToString(), t.ValuesToString());
  }
}

TEST(Npy, MalformedFilesAreClearErrors) {
  const std::string bad = test::TempPath("bad.npy");
  test::WriteFile(bad, "not numpy at all");
  EXPECT_THROW(ReadNpy(bad), Error);
  Tensor t;
  t.Allocate(RILL_INT64, {100});
  const std::string good = test::TempPath("trunc.npy");
  WriteNpy(t, good);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  test::WriteFile(good, bytes.substr(0, bytes.size() - 8));
  const auto expect_refused = [](const std::string& path, const std::string& why) {
    try {
      ReadNpy(path);
      ADD_FAILURE() << "read " << path << "; expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  expect_refused(good, "shorter than its shape says (792 of 800 bytes)");
  // Headers that claim more than the file holds, or more than memory can: refused from
  // the header, before anything that large is allocated.
  const auto npy_with_shape = [](const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.append(64 - (10 + header.size()) % 64 - 1, ' ').push_back('\n');
    const std::string path = test::TempPath("shape.npy");
    test::WriteFile(path, std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
                              static_cast<char>(header.size() >> 8) + header + data);
    return path;
  };
  expect_refused(npy_with_shape("4611686018427387904,", ""), "more bytes than memory can address");
  expect_refused(npy_with_shape("1000000000000,", "abcd"), "shorter than its shape says (4 of 4000000000000 bytes)");
  expect_refused(npy_with_shape("2, -3", ""), "has a negative dimension");
  expect_refused(npy_with_shape("2L, 3", ""), "bad shape entry '2L'");
  EXPECT_EQ(ReadNpy(npy_with_shape("1, 2", std::string(8, '\0'))).dims().ToVector(), (std::vector<int64_t>{1, 2}));
}

// A borrowed tensor uses the given memory as it is, shares it with its copies, and drops
// its keeper with the last of them; memory the ABI's promise does not cover is refused.
TEST(Tensor, BorrowUsesTheMemoryAndDropsItsKeeperWithTheLastCopy) {
  alignas(64) float data[32];
  for (int i = 0; i < 32; ++i) data[i] = static_cast<float>(i);
  auto kept = std::make_shared<int>(0);
  std::weak_ptr<int> watch = kept;
  {
    Tensor t = Tensor::Borrow(RILL_FP32, {4, 8}, data, std::move(kept));
    EXPECT_EQ(t.data(), static_cast<void*>(data));
    EXPECT_EQ(t.numel(), 32);
    EXPECT_EQ(t.OwnData(), static_cast<void*>(data));
    Tensor copy = t;
    EXPECT_EQ(copy.OwnData(), nullptr);  // shared now: nobody writes it in place
    EXPECT_EQ(copy.data_as<float>()[31], 31.0f);
    t = Tensor();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
  EXPECT_THROW(Tensor::Borrow(RILL_FP32, {8}, data + 1, nullptr), Error);  // 4 bytes past alignment
  EXPECT_THROW(Tensor::Borrow(RILL_FP32, {2}, data, nullptr), Error);      // 8 bytes: under 64
}

}  // namespace
}  // namespace rill::core
