// The math plugin: CPU kernels on Eigen for the ops control-flow programs and training
// need. Each op lives in its own file and registers itself from here.
#include "ops.h"

namespace {
void Init(rill::Registrar& r) {
  rill::math::RegisterFillConstant(r);
  rill::math::RegisterAssign(r);
  rill::math::RegisterIncrement(r);
  rill::math::RegisterCompare(r);
  rill::math::RegisterElementwise(r);
  rill::math::RegisterPrint(r);
}
}  // namespace

RILL_PLUGIN("math", "0.1.0", Init)
