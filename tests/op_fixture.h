// tests/op_fixture.h — a fixture for op tests: set input tensors in a scope, append ops to
// block 0, run with the shipped plugins, read results back as doubles.
#ifndef RILL_TESTS_OP_FIXTURE_H_
#define RILL_TESTS_OP_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/program/builder.h"
#include "core/runtime/executor.h"
#include "rill/sdk.hpp"  // DataTypeOf and VisitDataType, for the element type of T
#include "test_util.h"

namespace rill::test {

class __attribute__((visibility("hidden"))) OpFixture : public ::testing::Test {  // hidden: holds a Scope
 protected:
  // Sets `name` before the run: a tensor of element type T with these dims and values.
  template <class T> void Set(const std::string& name, std::vector<int64_t> dims, const std::vector<double>& values) {
    core::Tensor* t = scope()->Var(name)->GetMutableTensor();
    t->Allocate(rill::DataTypeOf<T>::value, dims);
    ASSERT_EQ(static_cast<size_t>(t->numel()), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) t->data_as<T>()[i] = static_cast<T>(values[i]);
  }
  core::BlockBuilder& main() { return pb_.block(0); }
  core::OpBuilder Op(const std::string& type) { return main().Op(type); }

  // Runs block 0 (once per call, in the same scope); returns the error message or "".
  std::string Run() {
    exec_ =
        std::make_unique<core::Executor>(ShippedRegistry(), std::make_shared<rill::proto::ProgramDesc>(pb_.Build()));
    try {
      exec_->Run(0, scope());
    } catch (const core::Error& e) {
      return e.what();
    }
    return "";
  }
  const core::Tensor& Get(const std::string& name) {
    const core::Variable* v = scope()->FindVar(name);
    if (v == nullptr || v->GetTensor() == nullptr) throw core::Error("no tensor '" + name + "'");
    return *v->GetTensor();
  }
  // The values of `name` converted to double.
  std::vector<double> Values(const std::string& name) {
    const core::Tensor& t = Get(name);
    std::vector<double> out;
    rill::VisitDataType<bool, uint8_t, int8_t, int16_t, int32_t, int64_t, float, double>(
        t.dtype(), "test", [&](auto x) {
          using T = decltype(x);
          for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<double>(t.data_as<T>()[i]));
        });
    return out;
  }
  std::vector<int64_t> Dims(const std::string& name) { return Get(name).dims().ToVector(); }
  std::shared_ptr<core::Scope>& scope() {
    if (!scope_) scope_ = core::Scope::NewRoot();
    return scope_;
  }

  core::ProgramBuilder pb_;
  std::unique_ptr<core::Executor> exec_;
  std::shared_ptr<core::Scope> scope_;
};

inline void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace rill::test

#endif  // RILL_TESTS_OP_FIXTURE_H_
