// The task stack pool: stacks come back warm to the next lessee, and an idle pool gives
// its pages back only after its release delay (core/tasks/stack_pool.h).
#include "core/tasks/stack_pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace rill::core {
namespace {

using namespace std::chrono_literals;

// Hands out `slabs` slabs' worth of stacks, writes to each, and takes them back.
void UseStacks(StackPool& pool, size_t slabs) {
  std::vector<Stack> stacks;
  for (size_t i = 0; i < slabs * StackPool::kStacksPerSlab; ++i) {
    stacks.push_back(pool.Allocate());
    static_cast<char*>(stacks.back().base)[stacks.back().size - 1] = 1;
  }
  for (const Stack& s : stacks) pool.Release(s);
}

// Polls `pool` until only `warm` slabs are warm; returns how long that took (or `limit`).
std::chrono::steady_clock::duration WaitForWarmSlabs(StackPool& pool, size_t warm, std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  while (pool.warm_slabs() != warm && std::chrono::steady_clock::now() - start < limit) {
    std::this_thread::sleep_for(10ms);
  }
  return std::chrono::steady_clock::now() - start;
}

TEST(StackPool, AnIdlePoolGivesItsPagesBackOnlyAfterItsDelay) {
  StackPool pool(16 * 1024, /*kept_slabs=*/1, /*release_after=*/2s);
  UseStacks(pool.Lease(), 3);
  pool.Unlease();
  EXPECT_EQ(pool.warm_slabs(), 3u) << "released at once: the next run would fault its stacks in again";

  // A run that comes back within the delay finds them warm, and restarts the clock.
  UseStacks(pool.Lease(), 3);
  EXPECT_EQ(pool.warm_slabs(), 3u);
  pool.Unlease();
  const auto waited = WaitForWarmSlabs(pool, 1, 10s);
  EXPECT_EQ(pool.warm_slabs(), 1u) << "the slabs past the kept one were never given back";
  EXPECT_GE(waited, 1900ms) << "given back before the pool had been idle for its delay";
}

TEST(StackPool, ALeasedPoolKeepsItsPages) {
  StackPool pool(16 * 1024, /*kept_slabs=*/0, /*release_after=*/50ms);
  UseStacks(pool.Lease(), 2);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(pool.warm_slabs(), 2u);
  pool.Unlease();
  WaitForWarmSlabs(pool, 0, 10s);
  EXPECT_EQ(pool.warm_slabs(), 0u);
  // Used again after the release, a slab is warm (and will be given back) again.
  UseStacks(pool.Lease(), 1);
  EXPECT_EQ(pool.warm_slabs(), 1u);
  pool.Unlease();
}

TEST(StackPool, APoolDestroyedWhileWatchedIsForgotten) {
  for (int i = 0; i < 3; ++i) {
    StackPool pool(16 * 1024, 0, 1ms);
    UseStacks(pool.Lease(), 1);
    pool.Unlease();  // watched by the scavenger, then destroyed under it
  }
  StackPool survivor(16 * 1024, 0, 1ms);
  UseStacks(survivor.Lease(), 1);
  survivor.Unlease();
  WaitForWarmSlabs(survivor, 0, 10s);
  EXPECT_EQ(survivor.warm_slabs(), 0u);
}

}  // namespace
}  // namespace rill::core
