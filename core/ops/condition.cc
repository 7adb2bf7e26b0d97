// Reading a loop or branch condition that a device kernel may have left on its device.
#include "core/ops/control_flow.h"

namespace rill::core {

// The host's own op, so it reads the tensor behind the handle directly (as the host API
// does): a conditional_block reads its condition every time it runs, and this spares
// four host calls.
bool ReadConditionSlow(const Tensor& t, const char* slot) {
  if (t.dtype() != RILL_BOOL || t.numel() != 1) {
    throw rill::Error(std::string(slot) + " must be a bool tensor of one element, got " +
                      rill::DataTypeName(t.dtype()) + " with " + std::to_string(t.numel()) + " elements");
  }
  if (t.place().device_type == RILL_CPU) return *static_cast<const bool*>(t.data());
  return *static_cast<const bool*>(t.CopyTo(Place{}).data());
}

bool ReadCondition(rill::Tensor cond, const char* slot) {
  return ReadCondition(*reinterpret_cast<const Tensor*>(cond.handle()), slot);
}

}  // namespace rill::core
