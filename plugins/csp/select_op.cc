// select: Fluid's select op. `cases` lists "idx,type,channel,value" (type 0 default, 1 send,
// 2 receive); the op runs the select (select.h), writes the chosen case's idx into
// case_to_execute (int32 [1]) and runs sub_block, whose conditional_blocks run that case.
//
// Two shortcuts keep a select in a loop close to the channel API's cost, each taken only
// where the program says it cannot change what it computes:
//  - When the op has `case_blocks` (each case's own block, in `cases`' order, as Rill's
//    builders write it beside sub_block), the op runs only the chosen case's block, in a
//    child scope of its own, instead of the whole sub_block, whose per-case condition
//    temporaries are then never made. Without it (a program Fluid wrote) sub_block runs.
//  - A case's channel or value named in the op's X or Out (as the seed's Python API and
//    csp_builder list them) is read as the op's argument, which the host resolves once,
//    instead of being looked up by name up the scope chain on every round.
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
  int32_t body = -1;  // the case's own block, when the op has case_blocks
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
    const std::vector<int32_t> bodies = op.BlocksAttr("case_blocks");
    if (!bodies.empty() && bodies.size() != specs_.size()) {
      throw Error("select: case_blocks names " + std::to_string(bodies.size()) + " blocks for " +
                  std::to_string(specs_.size()) + " cases");
    }
    for (size_t k = 0; k < bodies.size(); ++k) specs_[k].body = bodies[k];
    direct_ = !bodies.empty();
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
                "ready), performs it, writes its idx into case_to_execute and runs sub_block, "
                "or, when case_blocks names each case's block, only the chosen case's block.")
           .Input("X", "variables the cases use", kOptList)
           .Input("case_to_execute", "int32 [1], written with the idx of the case that ran")
           .Output("Out", "variables the cases write", kOptList)
           .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the block holding each case's conditional_block")
           .RequiredAttr("cases", RILL_ATTR_STRINGS,
                         "one \"idx,type,channel,value\" per case; type 0 default, 1 send, 2 receive")
           .OptionalAttr("case_blocks", RILL_ATTR_BLOCKS,
                         "each case's own block, in cases' order: the chosen one runs instead of sub_block "
                         "(which then need not run to tell the cases apart)"));
  r.StatefulKernel<Select>("select", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::csp
