// core/runtime/variable.h — a named slot in a scope holding one typed value.
//
// A Variable holds nothing, a LoD tensor, SelectedRows, a tensor array, or a value of a plugin-defined
// type (a channel, say) that the host holds as an opaque pointer and frees through the
// plugin's destroy callback. Like Tensor, it is not internally synchronized.
#ifndef RILL_CORE_RUNTIME_VARIABLE_H_
#define RILL_CORE_RUNTIME_VARIABLE_H_

#include <cstddef>
#include <memory>
#include <string>
#include <variant>

#include "core/runtime/small_objects.h"
#include "core/runtime/tensor.h"

struct RillVarType;  // the ABI's handle of a variable type (core/registry/registry.cc)

namespace rill::core {

// A plugin-defined variable type, as registered (see RillVarTypeDef). Every var_custom
// call (each channel op's) reads `handle`: first, on a line of its own, which no
// neighbouring allocation's writes can take away from the readers' caches.
struct alignas(64) CustomType {
  const RillVarType* handle = nullptr;  // one per name in the process (var_type_find)
  std::string name;
  std::string plugin;
  void (*destroy)(void* value) = nullptr;
  void (*describe)(const void* value, char* buf, size_t cap) = nullptr;
  void* (*copy)(const void* value) = nullptr;  // null: not copyable
};

// Owns one value of a CustomType.
class CustomValue {
 public:
  CustomValue(const CustomType* type, void* value) : type_(type), value_(value) {}
  CustomValue(CustomValue&& o) noexcept : type_(o.type_), value_(o.value_) { o.value_ = nullptr; }
  CustomValue& operator=(CustomValue&& o) noexcept;
  CustomValue(const CustomValue&) = delete;
  CustomValue& operator=(const CustomValue&) = delete;
  ~CustomValue() { Reset(); }

  const CustomType* type() const { return type_; }
  void* value() const { return value_; }

 private:
  void Reset();
  const CustomType* type_;
  void* value_;
};

class Variable {
 public:
  // From the small-object caches: a go block's variables are made on one worker and
  // freed on another.
  static void* operator new(size_t bytes) { return AllocateSmall(bytes); }
  static void operator delete(void* p, size_t bytes) { FreeSmall(p, bytes); }

  bool initialized() const { return !std::holds_alternative<std::monostate>(value_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value_); }
  bool is_selected_rows() const { return std::holds_alternative<BoxedRows>(value_); }
  bool is_custom() const { return std::holds_alternative<CustomValue>(value_); }
  bool is_tensor_array() const { return std::holds_alternative<BoxedArray>(value_); }

  // The tensor held; an empty variable becomes an empty tensor. Throws Error if it holds
  // another kind of value.
  Tensor* GetMutableTensor();
  // The tensor held, or nullptr; inline, for the per-op paths of the executor and host API.
  Tensor* GetTensor() { return std::get_if<Tensor>(&value_); }
  const Tensor* GetTensor() const { return std::get_if<Tensor>(&value_); }
  SelectedRows* GetMutableSelectedRows();
  // The tensor array held; an empty variable becomes an empty array. Throws Error if it
  // holds another kind of value.
  TensorArray* GetMutableTensorArray();
  const TensorArray* GetTensorArray() const {  // nullptr if not one
    const BoxedArray* a = std::get_if<BoxedArray>(&value_);
    return a != nullptr ? a->get() : nullptr;
  }
  const CustomValue* GetCustom() const { return std::get_if<CustomValue>(&value_); }  // nullptr if not one

  void SetCustom(const CustomType* type, void* value);
  // Moves `src`'s value here, leaving `src` empty.
  void MoveFrom(Variable& src);
  void Swap(Variable& other);
  // Deep-copies tensors (into this variable's tensor memory when it fits), selected rows
  // and tensor arrays; custom values through their type's copy.
  void CopyFrom(const Variable& src);
  void Clear() { value_ = std::monostate{}; }

  // Scalars (abi.h's RillScalar: a [1] CPU tensor without LoD, of at most 8 bytes).
  // GetScalar: the scalar held, as its dtype and bits; false for anything else.
  bool GetScalar(int32_t* dtype, uint64_t* bits) const {
    const Tensor* t = GetTensor();
    if (t == nullptr || !t->is_scalar()) return false;
    *bits = t->scalar_bits();
    *dtype = t->dtype();
    return true;
  }
  // TakesScalar: whether a kernel's one-element output may be written here as a scalar,
  // replacing nothing a tensor output would keep: empty, a tensor not allocated yet and
  // without LoD, or a scalar.
  bool TakesScalar() const {
    if (const Tensor* t = GetTensor()) return t->is_scalar() || (!t->initialized() && !t->has_lod());
    return !initialized();
  }
  // ScalarInPlace: the tensor a scalar of `dtype` is written into in place, SetScalar's
  // usual case: a scalar of that dtype whose memory no other tensor shares. Else null.
  Tensor* ScalarInPlace(int32_t dtype) {
    Tensor* t = GetTensor();
    return t != nullptr && t->host_scalar_key() == Tensor::HostScalarKey(dtype, 1) && !t->has_lod() &&
                   t->OwnData() != nullptr
               ? t
               : nullptr;
  }
  // SetScalar: makes the variable hold that scalar, replacing what it held (LoD, selected
  // rows, a custom value). Written in place where ScalarInPlace allows, so a variable set
  // step after step allocates nothing. Throws Error (INVALID_ARGUMENT) for a dtype that is
  // no element type of at most 8 bytes.
  void SetScalar(int32_t dtype, uint64_t bits) {
    if (Tensor* t = ScalarInPlace(dtype)) {
      t->set_scalar_bits(bits);
      return;
    }
    SetScalarAnew(dtype, bits);
  }

  // "fp32[1] {3}", "selected_rows ...", "tensor_array of 2 ...", "csp.channel (cap 0, open)", "empty".
  std::string Describe(size_t max_values = 16) const;
  // Kind of value, for error messages: "empty", "tensor", "selected_rows", "tensor_array", or
  // the type name.
  std::string KindName() const;

 private:
  // Selected rows are rare and larger than a tensor: held behind a pointer, they do not
  // widen every variable, so a scope's entry (a name and a variable) stays within its
  // small-object class (Scope::VarList::Entry's static_assert).
  using BoxedRows = std::unique_ptr<SelectedRows>;
  using BoxedArray = std::unique_ptr<TensorArray>;  // likewise
  // SetScalar's every case but the in-place one.
  void SetScalarAnew(int32_t dtype, uint64_t bits);
  std::variant<std::monostate, Tensor, BoxedRows, CustomValue, BoxedArray> value_;
};
static_assert(sizeof(Variable) <= kMaxSmallBytes);

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_VARIABLE_H_
