#include "core/program/validate.h"

#include <set>

#include "core/errors.h"

namespace rill::core {

namespace {

class Checker {
 public:
  Checker(const proto::ProgramDesc& p, const Registry& r) : program_(p), registry_(r) {}

  std::vector<std::string> Run() {
    const int n = program_.blocks_size();
    if (n == 0) {
      problems_.push_back("program has no blocks");
      return problems_;
    }
    for (int b = 0; b < n; ++b) CheckBlock(b);
    return problems_;
  }

 private:
  void CheckBlock(int b) {
    const auto& block = program_.blocks(b);
    const int n = program_.blocks_size();
    const std::string where = "block " + std::to_string(b);
    if (block.has_idx() && block.idx() != b) {
      problems_.push_back(where + ": idx is " + std::to_string(block.idx()) +
                          " but the block is at position " + std::to_string(b));
    }
    if (b == 0 && block.parent_idx() != -1) {
      problems_.push_back(where + ": the root block must have parent_idx -1, not " +
                          std::to_string(block.parent_idx()));
    } else if (b > 0) {
      // Walk the parent chain: every link must exist and the chain must reach the root.
      std::set<int> seen{b};
      for (int p = block.parent_idx();; p = program_.blocks(p).parent_idx()) {
        if (p == -1) {
          problems_.push_back(where + ": has no parent (parent_idx -1); only block 0 is a root");
          break;
        }
        if (p < 0 || p >= n) {
          problems_.push_back(where + ": parent block " + std::to_string(p) + " does not exist");
          break;
        }
        if (!seen.insert(p).second) {
          problems_.push_back(where + ": parent chain has a cycle through block " + std::to_string(p));
          break;
        }
        if (p == 0) break;
      }
    }
    std::set<std::string> var_names;
    for (const auto& v : block.vars()) {
      if (v.name().empty()) problems_.push_back(where + ": a variable has no name");
      else if (!var_names.insert(v.name()).second) {
        problems_.push_back(where + ": variable '" + v.name() + "' declared twice");
      }
    }
    for (int i = 0; i < block.ops_size(); ++i) CheckOp(b, i, block.ops(i));
  }

  void CheckOp(int b, int i, const proto::OpDesc& op) {
    const std::string where = "block " + std::to_string(b) + ", op " + std::to_string(i) +
                              " (" + (op.type().empty() ? "<no type>" : op.type()) + ")";
    if (op.type().empty()) {
      problems_.push_back(where + ": op has no type");
      return;
    }
    const OpSchemaEntry* schema = registry_.FindOp(op.type());
    if (schema == nullptr) {
      problems_.push_back(where + ": " + registry_.UnknownOpMessage(op.type()));
      return;
    }
    CheckSlots(where, "input", op.inputs(), schema->inputs);
    CheckSlots(where, "output", op.outputs(), schema->outputs);

    std::set<std::string> set_attrs;
    for (const auto& a : op.attrs()) {
      if (!set_attrs.insert(a.name()).second) {
        problems_.push_back(where + ": attribute '" + a.name() + "' set twice");
        continue;
      }
      const int k = schema->AttrIndex(a.name());
      if (k < 0) continue;  // undeclared attributes are Fluid bookkeeping; ignored
      const AttrSpec& spec = schema->attrs[static_cast<size_t>(k)];
      if (!a.has_type() || !AttrTypeCompatible(spec.type, a.type())) {
        problems_.push_back(where + ": attribute '" + a.name() + "' must be " +
                            AttrTypeName(spec.type) + ", the program gives " +
                            (a.has_type() ? AttrTypeName(a.type()) : "no type"));
        continue;
      }
      CheckBlockRefs(where, a);
    }
    for (const auto& spec : schema->attrs) {
      if (spec.required && !set_attrs.count(spec.name)) {
        problems_.push_back(where + ": required attribute '" + spec.name + "' (" +
                            AttrTypeName(spec.type) + ") is not set");
      }
    }
  }

  void CheckBlockRefs(const std::string& where, const proto::OpDesc::Attr& a) {
    const int n = program_.blocks_size();
    const auto check = [&](int idx) {
      if (idx <= 0 || idx >= n) {
        problems_.push_back(where + ": attribute '" + a.name() + "' refers to block " +
                            std::to_string(idx) + ", which " +
                            (idx == 0 ? "is the root block" : "does not exist") + " (program has " +
                            std::to_string(n) + " blocks)");
      }
    };
    if (a.type() == proto::BLOCK) check(a.block_idx());
    if (a.type() == proto::BLOCKS) for (int idx : a.blocks_idx()) check(idx);
  }

  void CheckSlots(const std::string& where, const char* kind,
                  const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& given,
                  const std::vector<SlotSpec>& declared) {
    std::set<std::string> seen;
    for (const auto& var : given) {
      const SlotSpec* spec = nullptr;
      for (const auto& s : declared) if (s.name == var.parameter()) spec = &s;
      if (spec == nullptr) {
        std::string names;
        for (const auto& s : declared) names += (names.empty() ? "" : ", ") + s.name;
        problems_.push_back(where + ": unknown " + kind + " slot '" + var.parameter() +
                            "' (declared: " + (names.empty() ? "none" : names) + ")");
        continue;
      }
      if (!seen.insert(var.parameter()).second) {
        problems_.push_back(where + ": " + kind + " slot '" + var.parameter() + "' given twice");
      }
      if (!spec->duplicable() && var.arguments_size() > 1) {
        problems_.push_back(where + ": " + kind + " slot '" + var.parameter() + "' takes one variable, " +
                            std::to_string(var.arguments_size()) + " given");
      }
      for (const auto& arg : var.arguments()) {
        if (arg.empty()) problems_.push_back(where + ": " + kind + " slot '" + var.parameter() +
                                             "' has an empty variable name");
      }
    }
    for (const auto& s : declared) {
      if (s.optional()) continue;
      bool present = false;
      for (const auto& var : given) {
        if (var.parameter() == s.name && var.arguments_size() > 0) present = true;
      }
      if (!present) {
        problems_.push_back(where + ": required " + std::string(kind) + " '" + s.name + "' is missing");
      }
    }
  }

  const proto::ProgramDesc& program_;
  const Registry& registry_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> ValidateProgram(const proto::ProgramDesc& program, const Registry& registry) {
  return Checker(program, registry).Run();
}

void ValidateProgramOrThrow(const proto::ProgramDesc& program, const Registry& registry) {
  const auto problems = ValidateProgram(program, registry);
  if (problems.empty()) return;
  std::string message = problems.front();
  if (problems.size() > 1) {
    message += " (and " + std::to_string(problems.size() - 1) + " more; `rill check` lists them)";
  }
  throw Error(message);
}

}  // namespace rill::core
