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
inline bool NameIs(const std::string& name, const char* s) {
  const char* p = name.c_str();
  while (*p != '\0' && *p == *s) ++p, ++s;
  return *p == *s;
}
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
  const rill::core::AttrValue* FindAttr(const char* name) const {
    for (size_t i = 0; i < attrs.size(); ++i) {
      if (schema->attrs[i].name == name) return &attrs[i];
    }
    return nullptr;
  }
  // "block 0, op 3 (elementwise_add X=[a] Y=[b] -> Out=[c])", for error messages.
  std::string Where() const;

 private:
  static const Args* Find(const std::vector<Args>& all, const char* slot) {
    for (const auto& a : all) {
      if (rill::core::NameIs(a.slot, slot)) return &a;
    }
    return nullptr;
  }
};

namespace rill::core {
using OpInstance = ::RillOpInfo;
}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_OP_INSTANCE_H_
