#include "core/runtime/variable.h"

#include "core/errors.h"
#include "core/runtime/dtype.h"

namespace rill::core {

CustomValue& CustomValue::operator=(CustomValue&& o) noexcept {
  if (this != &o) {
    Reset();
    type_ = o.type_;
    value_ = o.value_;
    o.value_ = nullptr;
  }
  return *this;
}

void CustomValue::Reset() {
  if (value_ != nullptr && type_->destroy != nullptr) type_->destroy(value_);
  value_ = nullptr;
}

Tensor* Variable::GetMutableTensor() {
  if (std::holds_alternative<std::monostate>(value_)) return &value_.emplace<Tensor>();
  if (auto* t = std::get_if<Tensor>(&value_)) return t;
  throw Error("variable holds " + KindName() + ", not a tensor");
}

SelectedRows* Variable::GetMutableSelectedRows() {
  if (std::holds_alternative<std::monostate>(value_)) {
    return value_.emplace<BoxedRows>(std::make_unique<SelectedRows>()).get();
  }
  if (auto* s = std::get_if<BoxedRows>(&value_)) return s->get();
  throw Error("variable holds " + KindName() + ", not selected rows");
}

TensorArray* Variable::GetMutableTensorArray() {
  if (std::holds_alternative<std::monostate>(value_)) {
    return value_.emplace<BoxedArray>(std::make_unique<TensorArray>()).get();
  }
  if (auto* a = std::get_if<BoxedArray>(&value_)) return a->get();
  throw Error("variable holds " + KindName() + ", not a tensor array");
}

void Variable::SetCustom(const CustomType* type, void* value) { value_ = CustomValue(type, value); }

void Variable::MoveFrom(Variable& src) {
  if (&src == this) return;
  if (Tensor* old = GetTensor()) old->RecycleBuffer();
  value_ = std::move(src.value_);
  src.value_ = std::monostate{};
}

void Variable::Swap(Variable& other) { value_.swap(other.value_); }

void Variable::CopyFrom(const Variable& src) {
  if (&src == this) return;
  if (const auto* t = std::get_if<Tensor>(&src.value_)) {
    if (auto* mine = std::get_if<Tensor>(&value_)) {
      t->CopyInto(*mine, t->place());  // keeps this variable's memory when it fits
      return;
    }
    if (!std::holds_alternative<std::monostate>(value_)) {
      value_ = t->DeepCopy();  // replaces another kind of value only once the copy is made
      return;
    }
    // An empty variable: copied in place, not into a temporary moved in after (a channel's
    // copy send into a variable a move left empty).
    Tensor& mine = value_.emplace<Tensor>();
    try {
      t->CopyInto(mine, t->place());
    } catch (...) {
      value_ = std::monostate{};  // as it was
      throw;
    }
  } else if (const auto* boxed = std::get_if<BoxedRows>(&src.value_)) {
    const SelectedRows& s = **boxed;
    value_ = std::make_unique<SelectedRows>(SelectedRows{s.rows, s.height, s.value.DeepCopy()});
  } else if (const auto* array = std::get_if<BoxedArray>(&src.value_)) {
    auto copy = std::make_unique<TensorArray>();
    copy->reserve((*array)->size());
    for (const Tensor& t : **array) copy->push_back(t.initialized() ? t.DeepCopy() : Tensor());
    value_ = std::move(copy);
  } else if (std::holds_alternative<std::monostate>(src.value_)) {
    value_ = std::monostate{};
  } else if (const auto* c = std::get_if<CustomValue>(&src.value_); c->type()->copy != nullptr) {
    value_ = CustomValue(c->type(), c->type()->copy(c->value()));
  } else {
    throw Error("cannot copy a variable holding " + src.KindName() + " (move it instead)");
  }
}

void Variable::SetScalarAnew(int32_t dtype, uint64_t bits) {
  const size_t size = ::rill::DataTypeSize(dtype);
  if (size == 0 || size > sizeof(bits)) {
    throw Error("data type " + std::to_string(dtype) + " is not a tensor element type of at most 8 bytes",
                RILL_INVALID_ARGUMENT);
  }
  Tensor* t = GetTensor();
  if (t == nullptr) {
    Clear();
    t = GetMutableTensor();
  }
  if (t->has_lod()) t->mutable_lod().clear();
  CopyHostBytes(t->AllocateScalar(dtype), &bits, size);
}

std::string Variable::KindName() const {
  if (std::holds_alternative<std::monostate>(value_)) return "empty";
  if (std::holds_alternative<Tensor>(value_)) return "tensor";
  if (std::holds_alternative<BoxedRows>(value_)) return "selected_rows";
  if (std::holds_alternative<BoxedArray>(value_)) return "tensor_array";
  return std::get<CustomValue>(value_).type()->name;
}

std::string Variable::Describe(size_t max_values) const {
  if (const auto* t = std::get_if<Tensor>(&value_)) return t->Describe(max_values);
  if (const auto* boxed = std::get_if<BoxedRows>(&value_)) {
    const SelectedRows& s = **boxed;
    return "selected_rows height " + std::to_string(s.height) + ", " + std::to_string(s.rows.size()) + " rows, value " +
           s.value.Describe(max_values);
  }
  if (const auto* array = std::get_if<BoxedArray>(&value_)) {
    std::string out = "tensor_array of " + std::to_string((*array)->size());
    for (size_t i = 0; i < (*array)->size() && i < 4; ++i) {
      const Tensor& t = (**array)[i];
      out += (i == 0 ? ": " : "; ") + (t.initialized() ? t.Describe(max_values) : std::string("empty"));
    }
    return out + ((*array)->size() > 4 ? "; ..." : "");
  }
  if (const auto* c = std::get_if<CustomValue>(&value_)) {
    if (c->type()->describe == nullptr) return c->type()->name;
    char buf[256] = {0};
    c->type()->describe(c->value(), buf, sizeof(buf));
    buf[sizeof(buf) - 1] = '\0';
    return buf;
  }
  return "empty";
}

}  // namespace rill::core
