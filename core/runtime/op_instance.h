// core/runtime/op_instance.h — one op of a prepared block, as plugins see it.
//
// This is the host's definition of the ABI's opaque RillOpInfo: the op's type, its
// arguments per slot (with each name's index into the block's variable frame) and its
// attributes in schema order with defaults filled in. Immutable once prepared.
#ifndef RILL_CORE_RUNTIME_OP_INSTANCE_H_
#define RILL_CORE_RUNTIME_OP_INSTANCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/registry/registry.h"

namespace rill::core {
class Executor;

// name == s. Slot and type names are a few characters: an inline loop beats strlen and
// memcmp here, which run for every argument a kernel asks for and every channel op.
inline bool NameIs(const char* p, const char* s) {
  while (*p != '\0' && *p == *s) ++p, ++s;
  return *p == *s;
}
inline bool NameIs(const std::string& name, const char* s) { return NameIs(name.c_str(), s); }
}  // namespace rill::core

struct RillOpInfo {
  struct Args {
    std::string slot;
    std::vector<std::string> names;
    std::vector<uint32_t> ids;  // index of each name in the block's variable frame
  };

  std::string type;
  int32_t block_idx = 0;
  int32_t op_idx = 0;
  uint64_t serial = 0;  // unique in the process, never reused (keys the op's child scopes)
  const rill::core::OpSchemaEntry* schema = nullptr;
  rill::core::Executor* executor = nullptr;  // that prepared it (op_block_ops reads its blocks)
  std::vector<Args> inputs, outputs;
  std::vector<rill::core::AttrValue> attrs;  // parallel to schema->attrs

  const Args* FindInput(const char* slot) const { return Find(inputs, slot); }
  const Args* FindOutput(const char* slot) const { return Find(outputs, slot); }

  // The frame index of argument `i` of an input (output) slot; kNoArg when the op has no
  // such argument. Kernels ask for their arguments by slot name on every run, so the first
  // slots' names and first indices are kept inline (IndexSlots): the usual lookup reads
  // the op itself instead of following its Args vectors through three more loads.
  static constexpr uint32_t kNoArg = UINT32_MAX;
  uint32_t InputId(const char* slot, size_t i) const { return Id(fast_inputs_, inputs, slot, i); }
  uint32_t OutputId(const char* slot, size_t i) const { return Id(fast_outputs_, outputs, slot, i); }
  // The same for the slot at index `slot` of inputs (outputs), as op_input_slot gives it:
  // no names compared.
  uint32_t InputIdAt(int32_t slot, size_t i) const { return IdAt(fast_inputs_, inputs, slot, i); }
  uint32_t OutputIdAt(int32_t slot, size_t i) const { return IdAt(fast_outputs_, outputs, slot, i); }
  // The index of a slot in inputs (outputs); -1 if the op lists no such slot.
  int32_t InputSlot(const char* slot) const { return SlotIndex(inputs, slot); }
  int32_t OutputSlot(const char* slot) const { return SlotIndex(outputs, slot); }
  // The slot at an index from InputSlot (OutputSlot); nullptr for -1 or past the end.
  const Args* InputAt(int32_t slot) const { return At(inputs, slot); }
  const Args* OutputAt(int32_t slot) const { return At(outputs, slot); }
  // Builds the inline slots; call once inputs and outputs are final. Until then lookups
  // take the long way.
  void IndexSlots() {
    Index(inputs, fast_inputs_);
    Index(outputs, fast_outputs_);
  }
  const rill::core::AttrValue* FindAttr(const char* name) const {
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (schema->attrs[i].name == name) return &attrs[i];
    }
    return nullptr;
  }
  // "block 0, op 3 (elementwise_add X=[a] Y=[b] -> Out=[c])", for error messages.
  std::string Where() const;

 private:
  struct FastSlot {
    char name[11];      // NUL-terminated
    uint32_t first_id;  // frame index of argument 0; kNoArg for an empty slot
  };
  // The first slots, in order, up to the first whose name does not fit; `complete` when
  // that is all of them.
  struct FastSlots {
    static constexpr size_t kMax = 4;
    FastSlot slot[kMax];
    uint8_t size = 0;
    bool complete = false;
  };

  static const Args* Find(const std::vector<Args>& all, const char* slot) {
    for (const auto& a : all) {
      if (rill::core::NameIs(a.slot, slot)) return &a;
    }
    return nullptr;
  }
  static uint32_t Id(const FastSlots& fast, const std::vector<Args>& all, const char* slot, size_t i) {
    for (uint8_t k = 0; k < fast.size; ++k) {
      const FastSlot& f = fast.slot[k];
      if (!rill::core::NameIs(f.name, slot)) continue;
      if (i == 0) return f.first_id;
      return i < all[k].ids.size() ? all[k].ids[i] : kNoArg;
    }
    if (fast.complete) return kNoArg;
    const Args* a = Find(all, slot);
    return a != nullptr && i < a->ids.size() ? a->ids[i] : kNoArg;
  }
  static int32_t SlotIndex(const std::vector<Args>& all, const char* slot) {
    const Args* a = Find(all, slot);
    return a == nullptr ? -1 : static_cast<int32_t>(a - all.data());
  }
  static const Args* At(const std::vector<Args>& all, int32_t slot) {
    return slot >= 0 && static_cast<size_t>(slot) < all.size() ? &all[static_cast<size_t>(slot)] : nullptr;
  }
  static uint32_t IdAt(const FastSlots& fast, const std::vector<Args>& all, int32_t slot, size_t i) {
    if (i == 0 && slot >= 0 && slot < fast.size) return fast.slot[slot].first_id;  // fast.slot[k] is all[k]
    const Args* a = At(all, slot);
    return a != nullptr && i < a->ids.size() ? a->ids[i] : kNoArg;
  }
  static void Index(const std::vector<Args>& all, FastSlots& fast) {
    fast.size = 0;
    for (const Args& a : all) {
      if (fast.size == FastSlots::kMax || a.slot.size() >= sizeof(FastSlot::name)) break;
      FastSlot& f = fast.slot[fast.size++];
      a.slot.copy(f.name, a.slot.size());
      f.name[a.slot.size()] = '\0';
      f.first_id = a.ids.empty() ? kNoArg : a.ids[0];
    }
    fast.complete = fast.size == all.size();
  }

  FastSlots fast_inputs_, fast_outputs_;
};

namespace rill::core {
using OpInstance = ::RillOpInfo;
}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_OP_INSTANCE_H_
