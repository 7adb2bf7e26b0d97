// Reading a loop or branch condition that a device kernel may have left on its device.
#include "core/ops/control_flow.h"
#include "core/runtime/tensor.h"

namespace rill::core {

bool ReadCondition(rill::Tensor cond, const char* slot) {
  if (cond.dtype() != RILL_BOOL || cond.numel() != 1) {
    throw rill::Error(std::string(slot) + " must be a bool tensor of one element, got " +
                      rill::DataTypeName(cond.dtype()) + " with " + std::to_string(cond.numel()) + " elements");
  }
  if (cond.device_type() == RILL_CPU) return *cond.data<bool>();
  // The host's own op, so it may see the tensor behind the handle (as the host API does).
  const Tensor host = reinterpret_cast<const Tensor*>(cond.handle())->CopyTo(Place{});
  return *static_cast<const bool*>(host.data());
}

}  // namespace rill::core
