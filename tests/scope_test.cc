#include "core/runtime/scope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace rill::core {
namespace {

TEST(Scope, VarCreatesLocallyAndFindWalksUp) {
  auto root = Scope::NewRoot();
  Variable* x = root->Var("x");
  auto child = root->NewChild();
  EXPECT_EQ(child->FindVar("x"), x);
  EXPECT_EQ(child->FindLocalVar("x"), nullptr);
  Variable* shadow = child->Var("x");
  EXPECT_NE(shadow, x);
  EXPECT_EQ(child->FindVar("x"), shadow);
  EXPECT_EQ(root->FindVar("x"), x);
  EXPECT_EQ(root->Var("x"), x) << "Var returns the existing variable";
  EXPECT_EQ(child->FindVar("missing"), nullptr);
  EXPECT_EQ(child->root(), root.get());
}

// Names up to 15 characters are kept in the variable's entry, longer ones apart: both are
// found, listed and told apart exactly.
TEST(Scope, ShortAndLongNamesAreFoundAndListed) {
  auto scope = Scope::NewRoot();
  const std::vector<std::string> names = {
      "", "x", "fifteen_chars__", "sixteen_chars___", std::string(300, 'n'), std::string(300, 'n') + "m"};
  std::vector<Variable*> made;
  for (const std::string& name : names) made.push_back(scope->Var(name));
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(scope->FindLocalVar(names[i]), made[i]) << names[i].size() << " characters";
    for (size_t j = 0; j < i; ++j) EXPECT_NE(made[i], made[j]);
  }
  EXPECT_EQ(scope->FindLocalVar("fifteen_chars_"), nullptr) << "a prefix is another name";
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(scope->LocalVarNames(), sorted);
}

TEST(Scope, ChildKeepsParentChainAlive) {
  auto root = Scope::NewRoot();
  root->Var("x")->GetMutableTensor()->Allocate(RILL_INT32, {1});
  *root->FindVar("x")->GetMutableTensor()->data_as<int32_t>() = 7;
  std::weak_ptr<Scope> weak_root = root;
  auto grandchild = root->NewChild()->NewChild();
  root.reset();
  ASSERT_FALSE(weak_root.expired()) << "a grandchild holds its ancestors";
  EXPECT_EQ(*grandchild->FindVar("x")->GetTensor()->data_as<int32_t>(), 7);
  grandchild.reset();
  EXPECT_TRUE(weak_root.expired()) << "the chain is freed with its last holder";
}

TEST(Scope, ScopeOutlivesItsCreatorOnAnotherThread) {
  auto root = Scope::NewRoot();
  root->Var("v")->GetMutableTensor()->Allocate(RILL_INT64, {1});
  *root->FindVar("v")->GetMutableTensor()->data_as<int64_t>() = 41;
  std::weak_ptr<Scope> weak_root = root;
  std::atomic<bool> released{false};
  std::atomic<int64_t> seen{0};
  std::thread worker([child = root->NewChild(), &released, &seen]() mutable {
    while (!released.load()) std::this_thread::yield();
    // The thread that made these scopes has dropped them; ours must still be valid.
    auto* t = child->FindVar("v")->GetMutableTensor();
    seen = ++*t->data_as<int64_t>();
    child.reset();
  });
  root.reset();
  released = true;
  worker.join();
  EXPECT_EQ(seen.load(), 42);
  EXPECT_TRUE(weak_root.expired());
}

TEST(Scope, ConcurrentVarCreationYieldsOneVariablePerName) {
  auto root = Scope::NewRoot();
  constexpr int kThreads = 8, kNames = 200;
  std::vector<std::vector<Variable*>> got(kThreads, std::vector<Variable*>(kNames));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto child = root->NewChild();
      for (int i = 0; i < kNames; ++i) {
        got[t][i] = root->Var("v" + std::to_string(i));
        EXPECT_EQ(child->FindVar("v" + std::to_string(i)), got[t][i]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[t], got[0]);
  EXPECT_EQ(root->LocalVarNames().size(), static_cast<size_t>(kNames));
}

// Lookups that carry a name's filter bits find exactly what plain lookups find: in a
// scope past the index size, in one of a few, and for names nowhere (most skip every scope
// on the filter alone).
TEST(Scope, LookupsWithNameBitsFindWhatPlainLookupsFind) {
  auto root = Scope::NewRoot();
  for (int i = 0; i < 40; ++i) root->Var("param_" + std::to_string(i));
  auto mid = root->NewChild();
  mid->Var("i");
  mid->Var("i.limit");
  auto child = mid->NewChild();
  child->Var("one");
  child->Var("left");
  std::vector<std::string> names = {"one", "left", "i", "i.limit"};
  for (int i = 0; i < 40; ++i) {
    names.push_back("param_" + std::to_string(i));
    names.push_back("absent_" + std::to_string(i));
  }
  for (const std::string& name : names) {
    const uint64_t bits = Scope::NameBits(name);
    EXPECT_EQ(child->FindVar(name, bits), child->FindVar(name)) << name;
    EXPECT_EQ(child->FindLocalVar(name, bits), child->FindLocalVar(name)) << name;
    EXPECT_EQ(root->FindVar(name, bits), root->FindVar(name)) << name;
  }
  EXPECT_NE(child->FindLocalVar("one", Scope::NameBits("one")), nullptr);
  // As when another thread made it between the caller's miss and the lock: the caller
  // read an older version, so the scope looks again.
  const uint64_t version = child->version();
  EXPECT_EQ(child->VarAfterMiss("left", Scope::NameBits("left"), version - 1), child->FindLocalVar("left"))
      << "found, not made again";
  EXPECT_EQ(child->version(), version);
}

TEST(Scope, AChildIsReusableWhileNothingElseHoldsItAndNoAncestorGainsAVariable) {
  auto root = Scope::NewRoot();
  auto child = root->NewChild();
  child->Var("mine");
  EXPECT_TRUE(Scope::Reusable(child, root->ChainVersion()));
  auto go_block = child->NewChild();  // holds the child
  EXPECT_FALSE(Scope::Reusable(child, root->ChainVersion())) << "another holder sees its variables";
  go_block.reset();
  root->Var("shadow");
  EXPECT_FALSE(Scope::Reusable(child, root->ChainVersion())) << "a name made in it may now resolve above";
  EXPECT_FALSE(Scope::Reusable(nullptr, 0));
}

// A loop step that only starts go blocks may run its next step in the same scope while
// they hold it: with no variables of its own, it shows them only what its parent does.
TEST(Scope, AnEmptyScopeIsShareableUntilItOrAnAncestorGainsAVariable) {
  auto root = Scope::NewRoot();
  auto step = root->NewChild();
  auto go_block = step->NewChild();  // holds the step
  EXPECT_FALSE(Scope::Reusable(step, root->ChainVersion()));
  EXPECT_TRUE(Scope::Shareable(step, root->ChainVersion()));
  root->Var("shadow");
  EXPECT_FALSE(Scope::Shareable(step, root->ChainVersion())) << "the chain changed since the step was made";
  auto next = root->NewChild();
  EXPECT_TRUE(Scope::Shareable(next, root->ChainVersion()));
  next->Var("local");
  EXPECT_FALSE(Scope::Shareable(next, root->ChainVersion())) << "a go block would see the next step's variable";
  EXPECT_FALSE(Scope::Shareable(nullptr, 0));
}

}  // namespace
}  // namespace rill::core
