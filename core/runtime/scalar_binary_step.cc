#include "core/runtime/scalar_binary_step.h"

namespace rill::core {
namespace {

// What var_scalar reads (Tensor::is_scalar).
const Tensor* Scalar(const Variable* v) {
  const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
  return t != nullptr && t->is_scalar() ? t : nullptr;
}

}  // namespace

std::optional<ScalarBinaryStep> ScalarBinaryStep::Match(const RillOpInfo& op, const Registry& registry) {
  ScalarBinaryStep s;
  if (op.type == "elementwise_add") {
    s.kind = Kind::kAdd;
  } else if (op.type == "elementwise_sub") {
    s.kind = Kind::kSub;
  } else if (op.type == "elementwise_mul") {
    s.kind = Kind::kMul;
  } else {
    return std::nullopt;
  }
  const RillOpInfo::Args* x = op.FindInput("X");
  const RillOpInfo::Args* y = op.FindInput("Y");
  const RillOpInfo::Args* out = op.FindOutput("Out");
  if (!x || !y || !out || x->ids.size() != 1 || y->ids.size() != 1 || out->ids.size() != 1) return std::nullopt;
  s.x = x->ids[0];
  s.y = y->ids[0];
  s.out = out->ids[0];
  s.dtypes = NativeScalarDtypes(registry, op.type);
  if (s.dtypes == 0) return std::nullopt;
  return s;
}

bool ScalarBinaryStep::RunGeneral(Variable* const* frame) const {
  const Tensor* x = Scalar(frame[this->x]);
  const Tensor* y = Scalar(frame[this->y]);
  if (x == nullptr || y == nullptr) return false;
  const int32_t dtype = x->dtype();
  if (y->dtype() != dtype || (dtypes & (1u << dtype)) == 0) return false;
  // Out a scalar of that dtype already, not shared (a running sum): written in place.
  Tensor* o = frame[out] != nullptr ? frame[out]->GetTensor() : nullptr;
  void* in_place = InPlaceScalar(o, dtype);
  if (in_place == nullptr && (o = ScalarOutput(frame[out])) == nullptr) return false;
  return WithNativeScalarType(dtype, [&](auto type) {
    using T = decltype(type);
    const T r = Apply<T>(*x->data_as<T>(), *y->data_as<T>());  // read before writing: Out may be X or Y
    *static_cast<T*>(in_place != nullptr ? in_place : ScalarSlot(*o, dtype, 1)) = r;
  });
}

}  // namespace rill::core
