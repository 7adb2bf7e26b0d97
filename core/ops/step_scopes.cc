// The variable type that holds a training loop's step scopes (StepScopeList, builtin_ops.h),
// shared by `while` and `recurrent` and their gradients.
#include <cstdio>

#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

constexpr const char* kStepScopesType = "core.step_scopes";

void DescribeStepScopes(const void* value, char* buf, size_t cap) {
  std::snprintf(buf, cap, "%zu step scopes", static_cast<const StepScopeList*>(value)->scopes.size());
}

}  // namespace

const rill::VarType& StepScopesType() {
  static const rill::VarType type = rill::VarType::Find(kStepScopesType);
  return type;
}

void RegisterStepScopes(rill::Registrar& r) {
  RillVarTypeDef steps{};  // no copy: a step's scope belongs to one loop run
  steps.name = kStepScopesType;
  steps.destroy = [](void* value) { delete static_cast<StepScopeList*>(value); };
  steps.describe = &DescribeStepScopes;
  r.VarType(steps);
}

}  // namespace rill::core
