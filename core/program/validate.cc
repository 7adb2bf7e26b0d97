#include "core/program/validate.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/errors.h"

namespace rill::core {

namespace {

class Checker {
 public:
  Checker(const Program& p, const Registry& r, MissingOps* missing) : program_(p), registry_(r), missing_(missing) {}

  std::vector<std::string> Run() {
    const int n = program_.blocks_size();
    if (n == 0) {
      problems_.push_back("program has no blocks");
      return problems_;
    }
    ResolveDepths();
    for (int b = 0; b < n; ++b) CheckBlock(b);
    if (missing_ != nullptr) {
      missing_->assign(missing_counts_.begin(), missing_counts_.end());
      std::stable_sort(missing_->begin(), missing_->end(),
                       [](const auto& x, const auto& y) { return x.second > y.second; });
    }
    return problems_;
  }

 private:
  void CheckBlock(int b) {
    const ProgramBlock& block = program_.block(b);
    const std::string where = "block " + std::to_string(b);
    if (block.has_idx && block.idx != b) {
      problems_.push_back(where + ": idx is " + std::to_string(block.idx) + " but the block is at position " +
                          std::to_string(b));
    }
    if (b == 0 && block.parent_idx != -1) {
      problems_.push_back(where + ": the root block must have parent_idx -1, not " + std::to_string(block.parent_idx));
    } else if (b > 0 && depth_[b] < 0) {
      problems_.push_back(where + ": " + chain_problem_[b]);
    }
    std::unordered_set<StrId> var_names;
    for (const ProgramVar& v : program_.vars(block)) {
      if (program_.str(v.name).empty()) problems_.push_back(where + ": a variable has no name");
      else if (!var_names.insert(v.name).second) {
        problems_.push_back(where + ": variable '" + Str(v.name) + "' declared twice");
      }
    }
    const auto ops = program_.ops(block);
    for (size_t i = 0; i < ops.size(); ++i) CheckOp(b, static_cast<int>(i), ops[i]);
  }

  // Every block's distance from the root along its parent chain, or -1 when the chain
  // does not reach the root (chain_problem_ says why). Each walk stops at the first block
  // already resolved, so this is one pass however deep the blocks nest.
  void ResolveDepths() {
    const int n = program_.blocks_size();
    depth_.assign(static_cast<size_t>(n), kUnresolved);
    chain_problem_.assign(static_cast<size_t>(n), "");
    std::vector<int> walked_by(static_cast<size_t>(n), -1);  // the walk that passed a block
    depth_[0] = 0;
    for (int b = 1; b < n; ++b) {
      if (depth_[b] != kUnresolved) continue;
      std::vector<int> path{b};
      walked_by[b] = b;
      int base = -1;  // the depth the walk ended at; -1: the chain does not reach the root
      std::string problem;
      for (int p = program_.block(b).parent_idx;; p = program_.block(p).parent_idx) {
        if (p == -1) {
          problem = "has no parent (parent_idx -1); only block 0 is a root";
        } else if (p < 0 || p >= n) {
          problem = "parent block " + std::to_string(p) + " does not exist";
        } else if (depth_[p] != kUnresolved) {
          base = depth_[p];
          problem = chain_problem_[p];
        } else if (walked_by[p] == b) {
          problem = "parent chain has a cycle through block " + std::to_string(p);
        } else {
          walked_by[p] = b;
          path.push_back(p);
          continue;
        }
        break;
      }
      for (size_t k = path.size(); k-- > 0;) {
        depth_[path[k]] = base < 0 ? -1 : base + static_cast<int>(path.size() - k);
        chain_problem_[path[k]] = problem;
      }
    }
  }

  // `x`'s ancestor `steps` levels up; REQUIRES depth_[x] >= steps.
  int Up(int x, int steps) const {
    for (; steps > 0; --steps) x = program_.block(x).parent_idx;
    return x;
  }

  std::string Str(StrId id) const { return std::string(program_.str(id)); }

  void CheckOp(int b, int i, const ProgramOp& op) {
    const std::string type = Str(op.type);
    const std::string where =
        "block " + std::to_string(b) + ", op " + std::to_string(i) + " (" + (type.empty() ? "<no type>" : type) + ")";
    if (type.empty()) {
      problems_.push_back(where + ": op has no type");
      return;
    }
    const OpSchemaEntry* schema = Schema(op.type, type);
    if (schema == nullptr) {
      if (missing_ != nullptr) ++missing_counts_[type];
      else problems_.push_back(where + ": " + registry_.UnknownOpMessage(type));
      return;
    }
    CheckSlots(where, "input", program_.inputs(op), schema->inputs);
    CheckSlots(where, "output", program_.outputs(op), schema->outputs);

    std::unordered_set<StrId> set_attrs;
    for (AttrId id : program_.attrs(op)) {
      const ProgramAttr& a = program_.attr(id);
      if (!set_attrs.insert(a.name).second) {
        problems_.push_back(where + ": attribute '" + Str(a.name) + "' set twice");
        continue;
      }
      const int k = schema->AttrIndex(Str(a.name));
      if (k < 0) continue;  // undeclared attributes are Paddle's bookkeeping; ignored
      const AttrSpec& spec = schema->attrs[static_cast<size_t>(k)];
      if (!AttrCompatible(spec.type, a)) {
        problems_.push_back(where + ": attribute '" + Str(a.name) + "' must be " + AttrTypeName(spec.type) +
                            ", the program gives " + AttrDescription(program_, a));
        continue;
      }
      CheckBlockRefs(b, i, where, a);
    }
    for (const auto& spec : schema->attrs) {
      const auto name = program_.FindStr(spec.name);
      if (spec.required && (!name || !set_attrs.count(*name))) {
        problems_.push_back(where + ": required attribute '" + spec.name + "' (" + AttrTypeName(spec.type) +
                            ") is not set");
      }
    }
  }

  // The schema of op type `id` (`type`), looked up once per type: an unrolled program has
  // few op types and many ops.
  const OpSchemaEntry* Schema(StrId id, const std::string& type) {
    auto [it, fresh] = schemas_.try_emplace(id, nullptr);
    if (fresh) it->second = registry_.FindOp(type);
    return it->second;
  }

  // A block an op runs must be a strict descendant of the op's block `b`: then every op
  // runs blocks further down a finite tree, so no run recurses without end (the parent
  // chains themselves are checked in CheckBlock).
  void CheckBlockRefs(int b, int i, const std::string& where, const ProgramAttr& a) {
    const int n = program_.blocks_size();
    const auto check = [&](int idx) {
      if (idx <= 0 || idx >= n) {
        problems_.push_back(where + ": attribute '" + Str(a.name) + "' refers to block " + std::to_string(idx) +
                            ", which " + (idx == 0 ? "is the root block" : "does not exist") + " (program has " +
                            std::to_string(n) + " blocks)");
        return;
      }
      if (depth_[b] < 0 || depth_[idx] < 0) return;  // CheckBlock reports the broken chain
      if (depth_[idx] > depth_[b] && Up(idx, depth_[idx] - depth_[b]) == b) return;
      if (depth_[idx] <= depth_[b] && Up(b, depth_[b] - depth_[idx]) == idx) {
        problems_.push_back(where + ": attribute '" + Str(a.name) + "' runs block " + std::to_string(idx) + ", " +
                            (idx == b ? "the op's own block" : "an ancestor of the op's block") +
                            ", which recurses without end: " + CyclePath(idx, b, i));
        return;
      }
      std::string chain;
      for (int p : ParentChain(idx)) chain += (chain.empty() ? "" : " -> ") + std::to_string(p);
      problems_.push_back(where + ": attribute '" + Str(a.name) + "' runs block " + std::to_string(idx) +
                          ", which is not inside block " + std::to_string(b) + " (its parent chain: " + chain +
                          "); an op runs only blocks below its own");
    };
    if (a.type == proto::BLOCK) check(static_cast<int>(a.i));
    if (a.type == proto::BLOCKS)
      for (int64_t idx : program_.ints(a)) check(static_cast<int>(idx));
  }

  // `block`, its parent, and so on up to the root. REQUIRES depth_[block] >= 0.
  std::vector<int> ParentChain(int block) const {
    std::vector<int> chain{block};
    while (block != 0) chain.push_back(block = program_.block(block).parent_idx);
    return chain;
  }

  // The cycle op `op` of block `b` closes by running `ancestor`: for each block from
  // `ancestor` down to `b`, the op that runs the next one (when one does), then `op`.
  // "block 0, op 1 (while) -> block 1, op 0 (conditional_block) -> block 0".
  std::string CyclePath(int ancestor, int b, int op) const {
    std::vector<int> down = ParentChain(b);  // b ... ancestor ... root
    down.erase(std::find(down.begin(), down.end(), ancestor) + 1, down.end());
    std::reverse(down.begin(), down.end());  // ancestor ... b
    std::string path;
    for (size_t k = 0; k < down.size(); ++k) {
      const auto ops = program_.ops(program_.block(down[k]));
      path += "block " + std::to_string(down[k]);
      int runs = k + 1 == down.size() ? op : -1;
      for (size_t i = 0; runs < 0 && i < ops.size(); ++i) {
        if (RunsBlock(ops[i], down[k + 1])) runs = static_cast<int>(i);
      }
      if (runs >= 0) path += ", op " + std::to_string(runs) + " (" + Str(ops[static_cast<size_t>(runs)].type) + ")";
      path += " -> ";
    }
    return path + "block " + std::to_string(ancestor);
  }
  // Whether `op` names block `target` in a BLOCK or BLOCKS attribute.
  bool RunsBlock(const ProgramOp& op, int target) const {
    for (AttrId id : program_.attrs(op)) {
      const ProgramAttr& a = program_.attr(id);
      if (a.type == proto::BLOCK && a.i == target) return true;
      if (a.type == proto::BLOCKS) {
        const auto blocks = program_.ints(a);
        if (std::find(blocks.begin(), blocks.end(), target) != blocks.end()) return true;
      }
    }
    return false;
  }

  void CheckSlots(const std::string& where, const char* kind, Range<ProgramSlot> given,
                  const std::vector<SlotSpec>& declared) {
    std::unordered_set<StrId> seen;
    for (const ProgramSlot& var : given) {
      const std::string parameter = Str(var.parameter);
      const SlotSpec* spec = nullptr;
      for (const auto& s : declared)
        if (s.name == parameter) spec = &s;
      // Paddle writes every slot its own schema declares, empty when unused (scale's
      // ScaleTensor, reshape2's Shape): an empty slot says nothing, so only one holding
      // variables must be declared.
      if (spec == nullptr && var.args_size == 0) continue;
      if (spec == nullptr) {
        std::string names;
        for (const auto& s : declared) names += (names.empty() ? "" : ", ") + s.name;
        problems_.push_back(where + ": unknown " + kind + " slot '" + parameter +
                            "' (declared: " + (names.empty() ? "none" : names) + ")");
        continue;
      }
      if (!seen.insert(var.parameter).second) {
        problems_.push_back(where + ": " + kind + " slot '" + parameter + "' given twice");
      }
      if (!spec->duplicable() && var.args_size > 1) {
        problems_.push_back(where + ": " + kind + " slot '" + parameter + "' takes one variable, " +
                            std::to_string(var.args_size) + " given");
      }
      for (StrId arg : program_.arguments(var)) {
        if (program_.str(arg).empty()) {
          problems_.push_back(where + ": " + kind + " slot '" + parameter + "' has an empty variable name");
        }
      }
    }
    for (const auto& s : declared) {
      if (s.optional()) continue;
      bool present = false;
      for (const ProgramSlot& var : given) {
        if (var.args_size > 0 && program_.str(var.parameter) == s.name) present = true;
      }
      if (!present) {
        problems_.push_back(where + ": required " + std::string(kind) + " '" + s.name + "' is missing");
      }
    }
  }

  const Program& program_;
  const Registry& registry_;
  std::unordered_map<StrId, const OpSchemaEntry*> schemas_;  // Schema's
  MissingOps* missing_;
  std::map<std::string, int64_t> missing_counts_;  // by name, for MissingOps' tie order
  std::vector<std::string> problems_;
  static constexpr int kUnresolved = -2;
  std::vector<int> depth_;                  // see ResolveDepths
  std::vector<std::string> chain_problem_;  // why depth_[b] is -1
};

}  // namespace

std::vector<std::string> ValidateProgram(const Program& program, const Registry& registry, MissingOps* missing) {
  return Checker(program, registry, missing).Run();
}

std::vector<std::string> ValidateProgram(const proto::ProgramDesc& program, const Registry& registry,
                                         MissingOps* missing) {
  return ValidateProgram(*Program::FromProto(program), registry, missing);
}

void ValidateProgramOrThrow(const proto::ProgramDesc& program, const Registry& registry) {
  ValidateProgramOrThrow(*Program::FromProto(program), registry);
}

void ValidateProgramOrThrow(const Program& program, const Registry& registry) {
  const auto problems = ValidateProgram(program, registry);
  if (problems.empty()) return;
  std::string message = problems.front();
  if (problems.size() > 1) {
    message += " (and " + std::to_string(problems.size() - 1) + " more; `rill check` lists them)";
  }
  throw Error(message);
}

}  // namespace rill::core
