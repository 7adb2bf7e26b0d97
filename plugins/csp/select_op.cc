// select: Fluid's select op. `cases` lists "idx,type,channel,value" (type 0 default, 1 send,
// 2 receive); the op runs the select (select.h), writes the chosen case's idx into
// case_to_execute (int32 [1]) and runs sub_block, whose conditional_blocks run that case.
//
// Two shortcuts keep a select in a loop close to the channel API's cost, each taken only
// where it cannot change what the program computes:
//  - When sub_block has the seed's layout (per case: fill_constant of the case's idx,
//    equal of it and case_to_execute, a scalar conditional_block on that), the op runs only
//    the chosen case's block, in a child scope of its own, instead of the whole sub_block.
//    The per-case idx and condition temporaries are then never made.
//  - A case's channel or value named in the op's X or Out (as the seed's Python API and
//    csp_builder list them) is read as the op's argument, which the host resolves once,
//    instead of being looked up by name up the scope chain on every round.
#include <climits>
#include <optional>
#include <set>
#include <utility>

#include "ops.h"
#include "select.h"
#include "select_case.h"

namespace rill::csp {
namespace {

// Where a case finds a variable each round: argument `i` of the op's X (or of Out) when
// the op lists it there, else by name up the scope chain.
struct ArgRef {
  enum Slot { kByName, kX, kOut };
  Slot slot = kByName;
  size_t i = 0;
};

struct CaseSpec : CaseText {
  explicit CaseSpec(CaseText parsed) : CaseText(std::move(parsed)) {}
  ArgRef channel_arg, value_arg;
  int32_t body = -1;  // the case's own block, when sub_block has the seed's layout
};

ArgRef FindArg(const OpInfo& op, const std::string& name) {
  const std::vector<std::string> x = op.InputNames("X");
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == name) return ArgRef{ArgRef::kX, i};
  }
  const std::vector<std::string> out = op.OutputNames("Out");
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == name) return ArgRef{ArgRef::kOut, i};
  }
  return ArgRef{};
}

// Reads the block of case idx `idx` from a conditional_block's sub_block when `ops`
// (three ops of sub_block) are the seed's shape for one case: I = fill_constant(idx);
// C = equal(I, case_to_execute) (either order); conditional_block(C, scalar). Returns false
// when they are anything else.
bool ReadSeedCase(const std::vector<OpInfo>& ops, size_t at, const std::string& case_var, int32_t* idx, int32_t* body) {
  const OpInfo& fill = ops[at];
  const OpInfo& equal = ops[at + 1];
  const OpInfo& cond = ops[at + 2];
  if (fill.type() != "fill_constant" || equal.type() != "equal" || cond.type() != "conditional_block") return false;
  if (fill.OutputCount("Out") != 1 || fill.Attr<std::vector<int64_t>>("shape") != std::vector<int64_t>{1}) return false;
  const int64_t dtype = fill.Attr<int64_t>("dtype");
  const double value = fill.Attr<double>("value");
  if (dtype != RILL_INT32 || !(value >= INT32_MIN && value <= INT32_MAX) || value != static_cast<int32_t>(value)) {
    return false;
  }
  const std::string index_var = fill.OutputName("Out");
  if (equal.InputCount("X") != 1 || equal.InputCount("Y") != 1 || equal.OutputCount("Out") != 1) return false;
  const std::pair operands{equal.InputName("X"), equal.InputName("Y")};
  if (operands != std::pair{index_var, case_var} && operands != std::pair{case_var, index_var}) return false;
  const char* slot = cond.InputCount("Cond") > 0 ? "Cond" : "X";
  if (cond.InputCount("Cond") + cond.InputCount("X") != 1 || cond.InputName(slot) != equal.OutputName("Out") ||
      !cond.Attr<bool>("is_scalar_condition")) {
    return false;
  }
  *idx = static_cast<int32_t>(value);
  *body = cond.BlockAttr("sub_block");
  return true;
}

class Select {
 public:
  explicit Select(const OpInfo& op)
      : block_(op.BlockAttr("sub_block")),
        x_(op.InputSlot("X")),
        out_(op.OutputSlot("Out")),
        case_to_execute_(op.InputSlot("case_to_execute")) {
    std::set<int32_t> seen;
    int defaults = 0;
    for (const std::string& text : op.Attr<std::vector<std::string>>("cases")) {
      specs_.emplace_back(ParseCase(text));
      if (!seen.insert(specs_.back().idx).second) {
        throw Error("select: case idx " + std::to_string(specs_.back().idx) + " appears twice");
      }
      defaults += specs_.back().kind == SelectCase::kDefault;
      if (specs_.back().kind != SelectCase::kDefault) {
        what_ += (what_.empty() ? "in select on " : ", ") +
                 std::string(specs_.back().kind == SelectCase::kSend ? "send to '" : "receive from '") +
                 specs_.back().channel + "'";
      }
    }
    if (defaults > 1) throw Error("select: more than one default case");
    if (what_.empty()) what_ = "in select with no cases";
    for (CaseSpec& spec : specs_) {
      if (spec.kind == SelectCase::kDefault) continue;
      spec.channel_arg = FindArg(op, spec.channel);
      spec.value_arg = FindArg(op, spec.value);
    }
    direct_ = ReadSeedLayout(op);
  }

  void Compute(KernelContext& ctx) {
    std::optional<Scope> scope;  // asked for only by a case not in X or Out
    PerCase<SelectCase> cases(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) {
      const CaseSpec& spec = specs_[i];
      cases[i].kind = spec.kind;
      if (spec.kind == SelectCase::kDefault) continue;
      Variable ch = Lookup(ctx, scope, spec.channel_arg, spec.channel);
      if (!ch) throw Error("select: channel '" + spec.channel + "' does not exist in any scope", RILL_NOT_FOUND);
      cases[i].channel = &ChannelOf(ch, spec.channel);
      Variable value = Lookup(ctx, scope, spec.value_arg, spec.value);
      if (!value && spec.kind == SelectCase::kRecv) value = OpScope(ctx, scope).Var(spec.value);
      if (!value) throw Error("select: value '" + spec.value + "' to send does not exist in any scope", RILL_NOT_FOUND);
      cases[i].var = value.handle();
    }
    const size_t chosen = RunSelect(cases.data(), cases.size(), ctx.handle(), what_.c_str());
    // One host call that writes the int32 [1] in place, not a described tensor and an
    // allocate call.
    ctx.InputVar(case_to_execute_).SetScalar(specs_[chosen].idx);
    const int32_t run = direct_ ? specs_[chosen].body : block_;
    if (run >= 0) ctx.RunSubBlock(run);
  }

 private:
  // An argument's variable is null only when no scope holds it.
  Variable Lookup(KernelContext& ctx, std::optional<Scope>& scope, const ArgRef& arg, const std::string& name) const {
    switch (arg.slot) {
      case ArgRef::kX: return ctx.InputVarOrNull(x_, arg.i);
      case ArgRef::kOut: return ctx.OutputVar(out_, arg.i);
      case ArgRef::kByName: break;
    }
    return OpScope(ctx, scope).FindVar(name);
  }
  static Scope& OpScope(KernelContext& ctx, std::optional<Scope>& scope) {
    if (!scope) scope.emplace(ctx.scope());
    return *scope;
  }

  // True, with each case's body set, when sub_block holds exactly the seed's three ops per
  // case (see the top of this file) and nothing else. A block that cannot be read (one of
  // its ops unknown) is left to fail when it runs, as it did before.
  bool ReadSeedLayout(const OpInfo& op) {
    std::vector<int32_t> bodies(specs_.size(), -1);
    try {
      const std::vector<OpInfo> ops = op.BlockOps(block_);
      const std::string case_var = op.InputName("case_to_execute");
      if (ops.size() % 3 != 0) return false;
      for (size_t at = 0; at < ops.size(); at += 3) {
        int32_t idx = 0, body = -1;
        if (!ReadSeedCase(ops, at, case_var, &idx, &body)) return false;
        size_t k = 0;
        while (k < specs_.size() && specs_[k].idx != idx) ++k;
        if (k == specs_.size() || bodies[k] >= 0) return false;  // no such case, or two blocks for it
        bodies[k] = body;
      }
    } catch (const Error&) {
      return false;
    }
    for (size_t k = 0; k < specs_.size(); ++k) specs_[k].body = bodies[k];
    return true;
  }

  const int32_t block_;
  const Slot x_, out_, case_to_execute_;
  std::vector<CaseSpec> specs_;
  std::string what_;
  bool direct_ = false;
};

}  // namespace

void RegisterSelect(Registrar& r) {
  constexpr uint32_t kOptList = RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE;
  r.Op(OpSchema("select")
           .Doc("Go's select: waits until one of the send/receive cases can proceed (choosing "
                "uniformly at random among ready ones; the default case only when none is "
                "ready), performs it, writes its idx into case_to_execute and runs sub_block. "
                "When sub_block is laid out as Fluid's select writes it (per case: fill_constant "
                "of its idx, equal with case_to_execute, a scalar conditional_block), only the "
                "chosen case's block runs.")
           .Input("X", "variables the cases use", kOptList)
           .Input("case_to_execute", "int32 [1], written with the idx of the case that ran")
           .Output("Out", "variables the cases write", kOptList)
           .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the block holding each case's conditional_block")
           .RequiredAttr("cases", RILL_ATTR_STRINGS,
                         "one \"idx,type,channel,value\" per case; type 0 default, 1 send, 2 receive"));
  r.StatefulKernel<Select>("select", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::csp
