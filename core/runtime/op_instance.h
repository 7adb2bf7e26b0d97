// core/runtime/op_instance.h — one op of a prepared block, as plugins see it.
//
// This is the host's definition of the ABI's opaque RillOpInfo: the op's type, its
// arguments per slot (each an index into the block's variable frame, whose names the
// block keeps once) and its attributes in schema order with defaults filled in.
// Immutable once prepared.
#ifndef RILL_CORE_RUNTIME_OP_INSTANCE_H_
#define RILL_CORE_RUNTIME_OP_INSTANCE_H_

#include <algorithm>
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
    std::vector<uint32_t> ids;  // each argument's index in the block's variable frame
  };

  std::string type;
  int32_t block_idx = 0;
  int32_t op_idx = 0;
  const rill::core::OpSchemaEntry* schema = nullptr;
  rill::core::Executor* executor = nullptr;  // that prepared it (op_block_ops reads its blocks)
  std::vector<Args> inputs, outputs;
  const std::vector<std::string>* names = nullptr;  // the block's, by frame index
  // Parallel to schema->attrs: the schema's default, or the value the program sets, kept
  // once per executor for every op that sets the same (Executor::PrepareFirst).
  std::vector<const rill::core::AttrValue*> attrs;

  // The variable name of argument `i` of `args` (one of inputs or outputs).
  const std::string& Name(const Args& args, size_t i) const { return (*names)[args.ids[i]]; }
  // The index of a slot in inputs (outputs): the slot handle op_input_slot gives; -1 if the
  // op lists no such slot.
  int32_t InputSlot(const char* slot) const { return SlotIndex(inputs, slot); }
  int32_t OutputSlot(const char* slot) const { return SlotIndex(outputs, slot); }
  // The slot at a handle; nullptr for -1 or past the end.
  const Args* InputAt(int32_t slot) const { return At(inputs, slot); }
  const Args* OutputAt(int32_t slot) const { return At(outputs, slot); }
  // The frame index of argument `i` of the slot at a handle; kNoArg when the op has no
  // such argument. Kernels ask for every argument on every run, so the first arguments'
  // indices of the first slots are kept inline (IndexSlots): the usual lookup reads the op
  // itself instead of following its Args vectors through three more loads.
  static constexpr uint32_t kNoArg = UINT32_MAX;
  uint32_t InputIdAt(int32_t slot, size_t i) const { return IdAt(first_inputs_, inputs, slot, i); }
  uint32_t OutputIdAt(int32_t slot, size_t i) const { return IdAt(first_outputs_, outputs, slot, i); }
  // Builds the inline indices; call once inputs and outputs are final.
  void IndexSlots() {
    Index(inputs, first_inputs_);
    Index(outputs, first_outputs_);
  }
  const rill::core::AttrValue* FindAttr(const char* name) const {
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (schema->attrs[i].name == name) return attrs[i];
    }
    return nullptr;
  }
  // "block 0, op 3 (elementwise_add X=[a] Y=[b] -> Out=[c])", for error messages.
  std::string Where() const;

 private:
  // Argument 0's frame index of each of the first kMax slots (kNoArg for an empty slot).
  struct FirstIds {
    static constexpr size_t kMax = 4;
    uint32_t id[kMax];
    uint8_t size = 0;
  };

  static int32_t SlotIndex(const std::vector<Args>& all, const char* slot) {
    for (size_t k = 0; k < all.size(); ++k) {
      if (rill::core::NameIs(all[k].slot, slot)) return static_cast<int32_t>(k);
    }
    return -1;
  }
  static const Args* At(const std::vector<Args>& all, int32_t slot) {
    return slot >= 0 && static_cast<size_t>(slot) < all.size() ? &all[static_cast<size_t>(slot)] : nullptr;
  }
  static uint32_t IdAt(const FirstIds& first, const std::vector<Args>& all, int32_t slot, size_t i) {
    if (i == 0 && slot >= 0 && slot < first.size) return first.id[slot];  // first.id[k] is all[k].ids[0]
    const Args* a = At(all, slot);
    return a != nullptr && i < a->ids.size() ? a->ids[i] : kNoArg;
  }
  static void Index(const std::vector<Args>& all, FirstIds& first) {
    first.size = static_cast<uint8_t>(std::min(all.size(), FirstIds::kMax));
    for (size_t k = 0; k < first.size; ++k) first.id[k] = all[k].ids.empty() ? kNoArg : all[k].ids[0];
  }

  FirstIds first_inputs_, first_outputs_;
};

namespace rill::core {
using OpInstance = ::RillOpInfo;
}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_OP_INSTANCE_H_
