#include "core/runtime/counter_step.h"

namespace rill::core {
namespace {

// The single argument of `slot` in `args`, or nullptr when there is not exactly one.
const RillOpInfo::Args* Single(const RillOpInfo::Args* args) {
  return args != nullptr && args->ids.size() == 1 ? args : nullptr;
}

// A one-element CPU tensor, or nullptr.
const Tensor* Scalar(const Variable* v) {
  const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
  if (t == nullptr || !t->initialized() || t->numel() != 1 || t->place().device_type != RILL_CPU) return nullptr;
  return t;
}

// The tensor an output writes into: the variable's, or a new one in an empty variable
// (what ctx_output_tensor gives a kernel); nullptr when it holds another kind of value.
// Inline up to the usual case, a variable that holds its tensor already.
Tensor* Writable(Variable* v) {
  if (v == nullptr) return nullptr;
  if (Tensor* t = v->GetTensor()) return t;
  return v->initialized() ? nullptr : v->GetMutableTensor();
}

template <class T>
bool TakeStep(const Tensor& i, const Tensor& n, Tensor& j, Tensor& cond, T step) {
  const T next = *i.data_as<T>() + step;
  const T limit = *n.data_as<T>();
  const size_t ndim = i.dims().size();
  *static_cast<T*>(ScalarSlot(j, i.dtype(), ndim)) = next;
  return *static_cast<bool*>(ScalarSlot(cond, RILL_BOOL, ndim)) = next < limit;
}

}  // namespace

std::optional<CounterStep> CounterStep::Match(const RillOpInfo& increment, const RillOpInfo& less_than,
                                              const Registry& registry) {
  if (increment.type != "increment" || less_than.type != "less_than") return std::nullopt;
  const RillOpInfo::Args* i = Single(increment.FindInput("X"));
  const RillOpInfo::Args* j = Single(increment.FindOutput("Out"));
  const RillOpInfo::Args* x = Single(less_than.FindInput("X"));
  const RillOpInfo::Args* n = Single(less_than.FindInput("Y"));
  const RillOpInfo::Args* cond = Single(less_than.FindOutput("Out"));
  const AttrValue* step = increment.FindAttr("step");
  if (!i || !j || !x || !n || !cond || !step || x->ids[0] != j->ids[0]) return std::nullopt;
  // Run reads i and n before it writes j and cond; the kernels, one after the other, would
  // see a limit the increment wrote, or write a condition over what the compare reads.
  if (n->ids[0] == j->ids[0] || cond->ids[0] == j->ids[0] || cond->ids[0] == n->ids[0] ||
      cond->ids[0] == i->ids[0]) {
    return std::nullopt;
  }
  CounterStep s;
  s.counter = i->ids[0];
  s.next = j->ids[0];
  s.limit = n->ids[0];
  s.cond = cond->ids[0];
  const float as_float = static_cast<float>(step->f);
  s.step_i64 = static_cast<int64_t>(as_float);
  s.step_f64 = static_cast<double>(as_float);
  s.step_i32 = static_cast<int32_t>(as_float);
  s.step_f32 = as_float;
  s.dtypes = NativeScalarDtypes(registry, "increment") & NativeScalarDtypes(registry, "less_than");
  if (s.dtypes == 0) return std::nullopt;
  return s;
}

int CounterStep::RunGeneral(Variable* const* frame) const {
  const Tensor* i = Scalar(frame[counter]);
  const Tensor* n = Scalar(frame[limit]);
  if (i == nullptr || n == nullptr) return -1;
  // One element each, so every dim is 1: the shapes match when the ranks do.
  const int32_t dtype = i->dtype();
  const size_t ndim = i->dims().size();
  if (n->dtype() != dtype || n->dims().size() != ndim || ndim > kMaxScalarDims || (dtypes & (1u << dtype)) == 0) {
    return -1;
  }
  Tensor* j = Writable(frame[next]);
  Tensor* c = Writable(frame[cond]);
  if (j == nullptr || c == nullptr) return -1;
  int wrote = -1;
  WithNativeScalarType(dtype, [&](auto type) {
    using T = decltype(type);
    wrote = TakeStep<T>(*i, *n, *j, *c, Step<T>());
  });
  return wrote;
}

}  // namespace rill::core
