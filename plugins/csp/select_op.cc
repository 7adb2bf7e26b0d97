// select: Fluid's select op. `cases` lists "idx,type,channel,value" (type 0 default, 1 send,
// 2 receive); the op runs the select (select.h), writes the chosen case's idx into
// case_to_execute (int32 [1]) and runs sub_block, whose conditional_blocks run that case.
#include <set>

#include "ops.h"
#include "select.h"

namespace rill::csp {
namespace {

struct CaseSpec {
  int32_t idx = 0;
  SelectCase::Kind kind = SelectCase::kDefault;
  std::string channel, value;
};

std::vector<std::string> SplitFields(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',') out.emplace_back();
    else if (c != ' ') out.back() += c;
  }
  return out;
}

CaseSpec ParseCase(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error("select: case \"" + text + "\": " + why + " (expected \"idx,type,channel,value\", "
                 "type 0 default, 1 send, 2 receive)");
  };
  const std::vector<std::string> f = SplitFields(text);
  if (f.size() < 2 || f.size() > 4) throw bad("wrong number of fields");
  CaseSpec c;
  try {
    size_t used = 0;
    c.idx = std::stoi(f[0], &used);
    if (used != f[0].size()) throw bad("idx is not an integer");
    const int type = std::stoi(f[1], &used);
    if (used != f[1].size() || type < 0 || type > 2) throw bad("type must be 0, 1 or 2");
    c.kind = static_cast<SelectCase::Kind>(type);
  } catch (const std::logic_error&) {
    throw bad("idx and type must be integers");
  }
  if (f.size() > 2) c.channel = f[2];
  if (f.size() > 3) c.value = f[3];
  if (c.kind != SelectCase::kDefault && (c.channel.empty() || c.value.empty())) {
    throw bad("a send or receive case names a channel and a value");
  }
  return c;
}

class Select {
 public:
  explicit Select(const OpInfo& op) : block_(op.BlockAttr("sub_block")) {
    std::set<int32_t> seen;
    int defaults = 0;
    for (const std::string& text : op.Attr<std::vector<std::string>>("cases")) {
      specs_.push_back(ParseCase(text));
      if (!seen.insert(specs_.back().idx).second) {
        throw Error("select: case idx " + std::to_string(specs_.back().idx) + " appears twice");
      }
      defaults += specs_.back().kind == SelectCase::kDefault;
      if (specs_.back().kind != SelectCase::kDefault) {
        what_ += (what_.empty() ? "in select on " : ", ") + std::string(specs_.back().kind == SelectCase::kSend ? "send to '" : "receive from '") +
                 specs_.back().channel + "'";
      }
    }
    if (defaults > 1) throw Error("select: more than one default case");
    if (what_.empty()) what_ = "in select with no cases";
  }

  void Compute(KernelContext& ctx) {
    Scope scope = ctx.scope();
    PerCase<SelectCase> cases(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) {
      const CaseSpec& spec = specs_[i];
      cases[i].kind = spec.kind;
      if (spec.kind == SelectCase::kDefault) continue;
      Variable ch = scope.FindVar(spec.channel);
      if (!ch) throw Error("select: channel '" + spec.channel + "' does not exist in any scope", RILL_NOT_FOUND);
      cases[i].channel = ChannelOf(ch, spec.channel).shared_from_this();
      Variable value = scope.FindVar(spec.value);
      if (!value && spec.kind == SelectCase::kRecv) value = scope.Var(spec.value);
      if (!value) throw Error("select: value '" + spec.value + "' to send does not exist in any scope", RILL_NOT_FOUND);
      cases[i].var = value.handle();
    }
    const size_t chosen = RunSelect(cases.data(), cases.size(), ctx.handle(), what_.c_str());
    *ctx.Input("case_to_execute").Allocate<int32_t>({1}) = specs_[chosen].idx;
    ctx.RunBlock(block_, ctx.NewChildScope(block_));
  }

 private:
  const int32_t block_;
  std::vector<CaseSpec> specs_;
  std::string what_;
};

}  // namespace

void RegisterSelect(Registrar& r) {
  constexpr uint32_t kOptList = RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE;
  r.Op(OpSchema("select")
           .Doc("Go's select: waits until one of the send/receive cases can proceed (choosing "
                "uniformly at random among ready ones; the default case only when none is "
                "ready), performs it, writes its idx into case_to_execute and runs sub_block.")
           .Input("X", "variables the cases use", kOptList)
           .Input("case_to_execute", "int32 [1], written with the idx of the case that ran")
           .Output("Out", "variables the cases write", kOptList)
           .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the block holding each case's conditional_block")
           .RequiredAttr("cases", RILL_ATTR_STRINGS,
                         "one \"idx,type,channel,value\" per case; type 0 default, 1 send, 2 receive"));
  r.StatefulKernel<Select>("select", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::csp
