#include "core/runtime/op_instance.h"

namespace {

// " X=[a, b] Y=[c]"
std::string FormatArgs(const RillOpInfo& op, const std::vector<RillOpInfo::Args>& all) {
  std::string out;
  for (const auto& a : all) {
    out += " " + a.slot + "=[";
    for (size_t i = 0; i < a.ids.size(); ++i) out += (i ? ", " : "") + op.Name(a, i);
    out += "]";
  }
  return out;
}

}  // namespace

std::string RillOpInfo::Where() const {
  return "block " + std::to_string(block_idx) + ", op " + std::to_string(op_idx) + " (" + type +
         FormatArgs(*this, inputs) + (outputs.empty() ? "" : " ->") + FormatArgs(*this, outputs) + ")";
}
