#include "core/runtime/fill_scalar_step.h"

#include <cstring>
#include <limits>

#include "core/runtime/dtype.h"
#include "core/runtime/native_scalar.h"

namespace rill::core {

std::optional<FillScalarStep> FillScalarStep::Match(const RillOpInfo& op, const Registry& registry) {
  if (op.type != "fill_constant") return std::nullopt;
  const RillOpInfo::Args* out = op.FindOutput("Out");
  const AttrValue* shape = op.FindAttr("shape");
  const AttrValue* dtype = op.FindAttr("dtype");
  const AttrValue* value = op.FindAttr("value");
  if (!out || out->ids.size() != 1 || !shape || shape->ints != std::vector<int64_t>{1} || !dtype || !value) {
    return std::nullopt;
  }
  FillScalarStep s;
  s.out = out->ids[0];
  s.dtype = static_cast<int32_t>(dtype->i);
  if (s.dtype < 0 || s.dtype >= 32 || (NativeScalarDtypes(registry, op.type) & (1u << s.dtype)) == 0) {
    return std::nullopt;
  }
  // As the kernel reads it: the attribute as a float, widened to double, cast to T.
  const double v = static_cast<float>(value->f);
  bool representable = true;
  WithNativeScalarType(s.dtype, [&](auto type) {
    using T = decltype(type);
    // An integer out of T's range is the kernel's to cast (undefined in C++), not ours.
    if (std::numeric_limits<T>::is_integer &&
        !(v >= static_cast<double>(std::numeric_limits<T>::min()) && v <= static_cast<double>(std::numeric_limits<T>::max()))) {
      representable = false;
      return;
    }
    const T typed = static_cast<T>(v);
    std::memcpy(&s.bits, &typed, sizeof(typed));
  });
  if (!representable) return std::nullopt;
  return s;
}

bool FillScalarStep::Run(Variable* const* frame) const {
  Tensor* t = ScalarOutput(frame[out]);
  if (t == nullptr) return false;
  std::memcpy(ScalarSlot(*t, dtype, 1), &bits, DataTypeSize(dtype));
  return true;
}

}  // namespace rill::core
