#include "core/program/backward.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/program/builder.h"

namespace rill::core {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const proto::OpDesc::Var* FindSlot(const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& slots,
                                   const std::string& name) {
  for (const auto& s : slots) {
    if (s.parameter() == name) return &s;
  }
  return nullptr;
}

// The block attribute sub_block of `op`, or -1.
int32_t SubBlockOf(const proto::OpDesc& op) {
  for (const auto& a : op.attrs()) {
    if (a.name() == "sub_block") return a.block_idx();
  }
  return -1;
}

// The ops whose gradients the pass writes itself (below), since their sub-blocks are ones
// the pass makes.
constexpr const char* kConditionalBlock = "conditional_block";
constexpr const char* kWhile = "while";
constexpr const char* kRecurrent = "recurrent";

// Builds the gradient ops into block `block_idx` of a program (a copy, so that a failure
// leaves the caller's program as it was), tracking for each forward variable the gradient
// contributions written so far, so they can be summed (or just renamed) once every
// consumer has contributed. A conditional_block or while on the path gets a gradient block
// of its own, appended to the program. The forward ops are read from block `src_idx` and the
// gradient ops written into block `block_idx`: the same block, except for a while's
// gradient block, which holds only gradient ops (the forward values are in the step scopes).
class BackwardBuilder {
 public:
  BackwardBuilder(proto::ProgramDesc& program, int block_idx, const Registry& registry, int src_idx = -1)
      : program_(program),
        block_idx_(block_idx),
        block_(*program.mutable_blocks(block_idx)),
        src_(*program.mutable_blocks(src_idx < 0 ? block_idx : src_idx)),
        registry_(registry) {}

  std::vector<ParamGrad> Build(const std::string& loss, std::vector<std::string> params) {
    int loss_op = -1;
    for (int i = 0; i < block_.ops_size(); ++i) {
      for (const auto& out : block_.ops(i).outputs()) {
        for (const auto& a : out.arguments())
          if (a == loss) loss_op = i;
      }
    }
    if (loss_op < 0) throw Error("loss variable '" + loss + "' is not produced by any op of block 0");
    if (params.empty()) {
      for (const auto& v : block_.vars())
        if (v.persistable()) params.push_back(v.name());
    }
    if (params.empty()) {
      throw Error("no parameters: declare the trainable variables of block 0 persistable, or name them");
    }
    std::set<std::string> requires(params.begin(), params.end());
    Propagate(loss_op, requires);
    if (!requires.count(loss)) {
      std::string names;
      for (const auto& p : params) names += (names.empty() ? "" : ", ") + p;
      throw Error("loss '" + loss + "' does not depend on any parameter (" + names + ") through differentiable ops");
    }
    std::set<std::string> needed{loss};
    const std::vector<int> path = PathBack(loss_op, requires, needed);

    BlockBuilder(&block_).Op("fill_any_like").Input("X", loss).Output("Out", loss + kGradSuffix).Attr("value", 1.0f);
    finalized_.insert(loss + kGradSuffix);
    Emit(path, requires, needed);

    std::vector<ParamGrad> result;
    for (const auto& p : params) {
      if (!needed.count(p)) continue;  // the loss does not depend on it
      result.push_back({p, Finalize(p)});
    }
    return result;
  }

  // For a conditional_block's gradient block, which holds the forward block's ops: `seeds`
  // are the variables of its outputs whose gradients ("v@GRAD") the enclosing block has;
  // `params` the inputs that need gradients. Appends the gradient ops; returns each
  // param's final gradient here ("" where none flows back).
  std::vector<std::string> BuildSeeded(const std::vector<std::string>& seeds, const std::vector<std::string>& params) {
    const int last = src_.ops_size() - 1;
    std::set<std::string> requires(params.begin(), params.end());
    Propagate(last, requires);
    std::set<std::string> needed;
    for (const auto& v : seeds) {
      finalized_.insert(v + kGradSuffix);
      if (requires.count(v)) needed.insert(v);
    }
    Emit(PathBack(last, requires, needed), requires, needed);
    std::vector<std::string> result;
    for (const auto& p : params) result.push_back(needed.count(p) ? Finalize(p) : "");
    return result;
  }

 private:
  std::string Where(int i, const proto::OpDesc& op) const {
    return "block " + std::to_string(block_idx_) + ", op " + std::to_string(i) + " (" + op.type() + ")";
  }

  // Forward: adds to `requires` every variable that depends on one of it through
  // differentiable ops up to op `last`; finds the ops' schemas.
  void Propagate(int last, std::set<std::string>& requires) {
    schemas_.assign(static_cast<size_t>(last + 1), nullptr);
    for (int i = 0; i <= last; ++i) {
      const auto& op = src_.ops(i);
      schemas_[i] = registry_.FindOp(op.type());
      if (schemas_[i] == nullptr) throw Error(Where(i, op) + ": " + registry_.UnknownOpMessage(op.type()));
      if (schemas_[i]->grad_op_type.empty() || !AnyInput(op, requires)) continue;
      if (op.type() == kWhile) {
        PropagateThroughLoop(op, requires);
        continue;
      }
      for (const auto& out : op.outputs())
        for (const auto& a : out.arguments()) requires.insert(a);
    }
  }

  // A while's outputs that depend on `requires` through its body's differentiable ops (its
  // counter and condition do not): the body's ops over and over, as the steps feed each
  // other, until nothing more depends.
  void PropagateThroughLoop(const proto::OpDesc& op, std::set<std::string>& requires) const {
    const int32_t sub = SubBlockOf(op);
    if (sub < 0 || sub >= program_.blocks_size()) return;
    std::set<std::string> inner = requires;
    for (size_t before = 0; before != inner.size();) {
      before = inner.size();
      for (const auto& body_op : program_.blocks(sub).ops()) {
        const OpSchemaEntry* schema = registry_.FindOp(body_op.type());
        if (schema == nullptr || schema->grad_op_type.empty() || !AnyInput(body_op, inner)) continue;
        for (const auto& out : body_op.outputs())
          for (const auto& a : out.arguments()) inner.insert(a);
      }
    }
    for (const auto& out : op.outputs()) {
      for (const auto& a : out.arguments())
        if (inner.count(a)) requires.insert(a);
    }
  }

  // Backward: the ops from `last` down on a path from `requires` to `needed`, last first;
  // `needed` grows by the inputs along it that need gradients.
  std::vector<int> PathBack(int last, const std::set<std::string>& requires, std::set<std::string>& needed) {
    std::vector<int> path;
    for (int i = last; i >= 0; --i) {
      const auto& op = src_.ops(i);
      if (schemas_[i]->grad_op_type.empty() || !AnyOutput(op, needed) || !AnyInput(op, requires)) continue;
      const auto& grads = schemas_[i]->grad_outputs;
      // An op whose gradient reaches none of its inputs (what requires one is an input it
      // does not differentiate: an array index, say) gets no gradient op: it would have no
      // output. Control flow's gradients are built from their blocks and are kept.
      if (!IsControlFlow(op.type()) && !AnyDifferentiatedInput(op, grads, requires)) continue;
      for (const auto& in : op.inputs()) {
        // An input the op overwrites breaks the gradient only if one flows back through
        // it; a state it updates in place (batch_norm's running Mean) gets none.
        const bool differentiated = std::count(grads.begin(), grads.end(), in.parameter()) > 0;
        for (const auto& a : in.arguments()) {
          for (const auto& out : op.outputs()) {
            if (!differentiated || !std::count(out.arguments().begin(), out.arguments().end(), a)) continue;
            // A loop's tensor array, read and written a step at a time: its gradient is
            // accumulated across the steps (EmitWhileGrad).
            if (op.type() == kWhile && (IsArray(a) || !requires.count(a))) continue;
            if (op.type() == kWhile) {
              throw Error(Where(i, op) + " carries '" + a +
                          "' from step to step in a tensor it overwrites, whose earlier values its gradient "
                          "cannot see: carry it in a tensor array (array_write / array_read), as DynamicRNN does");
            }
            throw Error(Where(i, op) + " reads and writes '" + a +
                        "': in-place ops on the gradient path are not "
                        "supported; write to a new variable");
          }
          if (requires.count(a) && differentiated) needed.insert(a);
        }
      }
      path.push_back(i);
    }
    return path;
  }

  void Emit(const std::vector<int>& path, const std::set<std::string>& requires, const std::set<std::string>& needed) {
    const std::vector<const OpSchemaEntry*> schemas = schemas_;  // a nested block's pass has its own
    for (int i : path) {
      if (src_.ops(i).type() == kConditionalBlock) {
        EmitConditionalBlockGrad(src_.ops(i), *schemas[i], requires);
      } else if (src_.ops(i).type() == kWhile) {
        EmitWhileGrad(i, *schemas[i], requires, needed);
      } else if (src_.ops(i).type() == kRecurrent) {
        EmitRecurrentGrad(i, *schemas[i], requires, needed);
      } else {
        EmitGradOp(src_.ops(i), *schemas[i], requires);
      }
    }
  }

  static bool IsControlFlow(const std::string& type) {
    return type == kWhile || type == kConditionalBlock || type == kRecurrent;
  }
  static bool AnyDifferentiatedInput(const proto::OpDesc& op, const std::vector<std::string>& grads,
                                     const std::set<std::string>& vars) {
    for (const auto& in : op.inputs()) {
      if (std::count(grads.begin(), grads.end(), in.parameter()) == 0) continue;
      for (const auto& a : in.arguments())
        if (vars.count(a)) return true;
    }
    return false;
  }
  static bool AnyInput(const proto::OpDesc& op, const std::set<std::string>& vars) {
    for (const auto& in : op.inputs())
      for (const auto& a : in.arguments())
        if (vars.count(a)) return true;
    return false;
  }
  static bool AnyOutput(const proto::OpDesc& op, const std::set<std::string>& vars) {
    for (const auto& out : op.outputs())
      for (const auto& a : out.arguments())
        if (vars.count(a)) return true;
    return false;
  }

  // The final gradient of `var`: the one contribution renamed, or the sum of several;
  // zeros shaped like `var` if nothing contributed.
  std::string Finalize(const std::string& var) {
    auto& refs = contributions_[var];
    if (const auto seed = seeds_.find(var); seed != seeds_.end()) {
      if (!refs.empty()) {
        throw Error("block " + std::to_string(src_.idx()) + " reads tensor array '" + var +
                    "' after writing it in the same loop step; its gradient cannot be taken step by step: read "
                    "what you wrote from the tensor you wrote");
      }
      return seed->second;
    }
    const std::string grad = var + kGradSuffix;
    if (finalized_.count(grad)) return grad;
    finalized_.insert(grad);
    if (refs.empty()) {
      BlockBuilder(&block_).Op("fill_zeros_like").Input("X", var).Output("Out", grad);
    } else if (refs.size() == 1) {
      block_.mutable_ops(refs[0].op)->mutable_outputs(refs[0].slot)->set_arguments(refs[0].arg, grad);
    } else {
      auto* sum = block_.add_ops();
      sum->set_type("sum");
      auto* x = sum->add_inputs();
      x->set_parameter("X");
      for (const auto& r : refs) x->add_arguments(block_.ops(r.op).outputs(r.slot).arguments(r.arg));
      auto* out = sum->add_outputs();
      out->set_parameter("Out");
      out->add_arguments(grad);
    }
    return grad;
  }

  // Adds to `out` (output slot `slot` of the grad op that will stand at `op`) the next
  // contribution to `var`'s gradient, "var@GRAD@RENAME@k", registered for Finalize; returns
  // its name.
  std::string AddContribution(const std::string& var, int op, int slot, proto::OpDesc::Var* out) {
    auto& refs = contributions_[var];
    std::string name = var + kGradSuffix + "@RENAME@" + std::to_string(renames_[var]++);
    out->add_arguments(name);
    refs.push_back({op, slot, out->arguments_size() - 1});
    return name;
  }

  void EmitGradOp(const proto::OpDesc fwd, const OpSchemaEntry& schema, const std::set<std::string>& requires) {
    proto::OpDesc grad;
    grad.set_type(schema.grad_op_type);
    for (const auto& slot : schema.grad_inputs) {
      const bool is_grad = EndsWith(slot, kGradSuffix);
      const std::string fwd_slot = is_grad ? slot.substr(0, slot.size() - 5) : slot;
      const proto::OpDesc::Var* vars = is_grad ? FindSlot(fwd.outputs(), fwd_slot) : FindSlot(fwd.inputs(), fwd_slot);
      if (vars == nullptr && !is_grad) vars = FindSlot(fwd.outputs(), fwd_slot);
      if (vars == nullptr) continue;  // an optional forward slot the op does not use
      auto* in = grad.add_inputs();
      in->set_parameter(slot);
      for (const auto& a : vars->arguments()) in->add_arguments(is_grad ? Finalize(a) : a);
    }
    // Where the grad op will stand once appended (after any sum or zeros ops its inputs
    // needed), so its output arguments can be renamed when their variable is finalized.
    const int index = block_.ops_size();
    int slot_index = 0;
    for (const auto& slot : schema.grad_outputs) {
      const proto::OpDesc::Var* vars = FindSlot(fwd.inputs(), slot);
      if (vars == nullptr) continue;
      bool any = false;
      for (const auto& a : vars->arguments()) any = any || requires.count(a);
      if (!any) continue;
      const SlotSpec* spec = schema.FindInput(slot);
      auto* out = grad.add_outputs();
      out->set_parameter(slot + kGradSuffix);
      for (const auto& a : vars->arguments()) {
        if (!requires.count(a)) {
          if (spec->duplicable()) out->add_arguments(kEmptyVarName);  // keeps positions aligned
          continue;
        }
        AddContribution(a, index, slot_index, out);
      }
      ++slot_index;
    }
    *grad.mutable_attrs() = fwd.attrs();
    *block_.add_ops() = std::move(grad);
  }

  // Whether a gradient of loop output `a` flows back from after the loop: `needed` also holds
  // the inputs the loop reads, which may be its outputs too.
  bool FlowsBack(const std::string& a, const std::set<std::string>& needed) {
    return needed.count(a) > 0 && (!contributions_[a].empty() || finalized_.count(a + kGradSuffix) > 0);
  }

  // A new block of the program for the gradient of forward block `forward`, a child of this
  // one; returns its index.
  int NewGradientBlock(int32_t forward) {
    auto* block = program_.add_blocks();
    const int idx = program_.blocks_size() - 1;
    block->set_idx(idx);
    block->set_parent_idx(block_idx_);
    block->set_forward_block_idx(forward);
    return idx;
  }

  // The gradient op of a block op takes its attributes, its sub_block the gradient block.
  static void CopyAttrsWithBlock(const proto::OpDesc& fwd, int grad_block, proto::OpDesc& grad) {
    *grad.mutable_attrs() = fwd.attrs();
    for (auto& a : *grad.mutable_attrs()) {
      if (a.name() == "sub_block") a.set_block_idx(grad_block);
    }
  }

  // The output `slot` of loop op `i` that keeps its steps' scopes for its gradient, given
  // one (named after the op) if it has none.
  proto::OpDesc::Var KeptSteps(int i, const char* slot) {
    auto* op = src_.mutable_ops(i);
    for (const auto& out : op->outputs()) {
      if (out.parameter() == slot && out.arguments_size() > 0) return out;
    }
    auto* steps = op->add_outputs();
    steps->set_parameter(slot);
    steps->add_arguments("@STEP_SCOPES@" + std::to_string(src_.idx()) + "." + std::to_string(i));
    return *steps;
  }

  // conditional_block's gradient: a new block holding the forward block's ops (recomputing
  // what its run's child scope held) and then their gradient ops, seeded by the gradients of
  // the outputs that need them, ending in an assign of each Params gradient to the
  // contribution this block's op registers; conditional_block_grad runs it when the
  // condition held (else its outputs are zeros).
  void EmitConditionalBlockGrad(const proto::OpDesc fwd, const OpSchemaEntry& schema,
                                const std::set<std::string>& requires) {
    const int32_t sub = SubBlockOf(fwd);
    if (sub < 0 || sub >= program_.blocks_size()) throw Error("conditional_block without a valid sub_block");
    std::vector<std::string> seeds;
    proto::OpDesc grad;
    grad.set_type(schema.grad_op_type);
    for (const auto& in : fwd.inputs()) *grad.add_inputs() = in;
    for (const auto& out : fwd.outputs()) {
      if (out.parameter() != "Out") continue;
      *grad.add_inputs() = out;
      auto* g = grad.add_inputs();
      g->set_parameter(std::string("Out") + kGradSuffix);
      for (const auto& a : out.arguments()) {
        if (requires.count(a)) seeds.push_back(a);
        g->add_arguments(Finalize(a));
      }
    }
    // The inputs that get gradients: what the block reads (and X, Fluid 0.x's condition
    // slot, whose tensors the block may read too).
    const auto differentiated = [](const std::string& slot) {
      return slot == "Params" || slot == "Input" || slot == "X";
    };
    std::vector<std::string> params;
    for (const auto& in : fwd.inputs()) {
      if (!differentiated(in.parameter())) continue;
      for (const auto& a : in.arguments()) {
        if (requires.count(a) && std::find(params.begin(), params.end(), a) == params.end()) params.push_back(a);
      }
    }

    const int idx = NewGradientBlock(sub);
    *program_.mutable_blocks(idx)->mutable_ops() = program_.blocks(sub).ops();
    const std::vector<std::string> inner = BackwardBuilder(program_, idx, registry_).BuildSeeded(seeds, params);

    // The op's outputs: one contribution per required Params argument, as EmitGradOp does.
    const int index = block_.ops_size();
    int slot_index = 0;
    std::set<std::string> given;  // a variable in two slots gets its gradient once
    for (const auto& in : fwd.inputs()) {
      if (!differentiated(in.parameter())) continue;
      auto* out = grad.add_outputs();
      out->set_parameter(in.parameter() + kGradSuffix);
      for (const auto& a : in.arguments()) {
        const auto at = std::find(params.begin(), params.end(), a);
        if (at == params.end() || !given.insert(a).second) {
          out->add_arguments(kEmptyVarName);
          continue;
        }
        const std::string name = AddContribution(a, index, slot_index, out);
        const std::string& found = inner[static_cast<size_t>(at - params.begin())];
        BlockBuilder b(program_.mutable_blocks(idx));
        if (found.empty()) {
          b.Op("fill_zeros_like").Input("X", a).Output("Out", name);
        } else {
          b.Op("assign").Input("X", found).Output("Out", name);
        }
      }
      ++slot_index;
    }
    CopyAttrsWithBlock(fwd, idx, grad);
    *block_.add_ops() = std::move(grad);
  }

  // Whether `name` is declared a tensor array in the forward block or a block it is nested in.
  bool IsArray(const std::string& name) const {
    for (int b = src_.idx(); b >= 0 && b < program_.blocks_size(); b = program_.blocks(b).parent_idx()) {
      for (const auto& v : program_.blocks(b).vars()) {
        if (v.name() == name) return v.type().type() == proto::VarType::LOD_TENSOR_ARRAY;
      }
      if (b == 0) break;
    }
    return false;
  }

  // while's gradient (see core/ops/while_op.cc for the invariants it shares with
  // while_grad): a new block holding the gradient ops of the body, which while_grad runs once
  // per step, last first, in a child of that step's scope. An array the body both reads
  // and writes starts from its gradient after the loop and ends as its gradient before it.
  void EmitWhileGrad(int i, const OpSchemaEntry& schema, const std::set<std::string>& requires,
                     const std::set<std::string>& needed) {
    const proto::OpDesc fwd = src_.ops(i);
    const int32_t sub = SubBlockOf(fwd);
    if (sub < 0 || sub >= program_.blocks_size()) throw Error(Where(i, fwd) + ": while without a valid sub_block");
    const proto::OpDesc::Var* xs = FindSlot(fwd.inputs(), "X");
    const proto::OpDesc::Var* outs = FindSlot(fwd.outputs(), "Out");
    const auto is_out = [&](const std::string& v) {
      return outs != nullptr && std::count(outs->arguments().begin(), outs->arguments().end(), v) > 0;
    };

    const int idx = NewGradientBlock(sub);
    BackwardBuilder inner(program_, idx, registry_, sub);

    // The outputs' gradients from after the loop, and the inputs that need one.
    proto::OpDesc grad;
    grad.set_type(schema.grad_op_type);
    if (xs != nullptr) *grad.add_inputs() = *xs;
    std::vector<std::string> params;
    if (xs != nullptr) {
      for (const auto& a : xs->arguments()) {
        if (requires.count(a) && std::find(params.begin(), params.end(), a) == params.end()) params.push_back(a);
      }
    }
    std::vector<std::string> accumulators;
    for (const auto& p : params) accumulators.push_back(p + kGradSuffix + "@WHILE@" + std::to_string(idx));
    if (outs != nullptr) {
      *grad.add_inputs() = *outs;
      auto* g = grad.add_inputs();
      g->set_parameter(std::string("Out") + kGradSuffix);
      for (const auto& a : outs->arguments()) {
        if (!FlowsBack(a, needed)) {
          g->add_arguments(kEmptyVarName);
          continue;
        }
        if (!IsArray(a)) {
          throw Error(Where(i, fwd) + " overwrites '" + a +
                      "' at every step, and the loss depends on it: the gradient of a tensor a loop overwrites "
                      "cannot be taken step by step; write each step's value to a tensor array");
        }
        g->add_arguments(Finalize(a));
        inner.seeds_[a] = g->arguments(g->arguments_size() - 1);
      }
    }
    for (size_t k = 0; k < params.size(); ++k) {
      if (is_out(params[k])) inner.seeds_[params[k]] = accumulators[k];
    }
    const std::vector<bool> got = inner.BuildStep(params, accumulators);
    inner.DeclareLocals(std::set<std::string>(accumulators.begin(), accumulators.end()));

    // The forward while keeps its steps for this op.
    *grad.add_inputs() = KeptSteps(i, "StepScopes");

    // X@GRAD: one contribution per input that got a gradient. An array the loop also writes
    // is a new version of it: what the loop gives is its whole gradient before the loop.
    const int index = block_.ops_size();
    auto* out = grad.add_outputs();
    out->set_parameter(std::string("X") + kGradSuffix);
    std::vector<std::string> given;
    if (xs != nullptr) {
      for (const auto& a : xs->arguments()) {
        const auto at = std::find(params.begin(), params.end(), a);
        if (at == params.end() || !got[static_cast<size_t>(at - params.begin())] ||
            std::count(given.begin(), given.end(), a)) {
          out->add_arguments(kEmptyVarName);
          given.push_back("");
          continue;
        }
        given.push_back(a);
        if (is_out(a)) {
          finalized_.erase(a + kGradSuffix);
          contributions_[a].clear();
        }
        AddContribution(a, index, 0, out);
      }
    }
    CopyAttrsWithBlock(fwd, idx, grad);
    auto* acc = grad.add_attrs();
    acc->set_name("accumulators");
    acc->set_type(proto::STRINGS);
    for (size_t k = 0; xs != nullptr && k < static_cast<size_t>(xs->arguments_size()); ++k) {
      const auto at = std::find(params.begin(), params.end(), xs->arguments(static_cast<int>(k)));
      acc->add_strings(given[k].empty() ? "" : accumulators[static_cast<size_t>(at - params.begin())]);
    }
    *block_.add_ops() = std::move(grad);
  }

  // recurrent's gradient (see core/ops/recurrent_op.cc for what recurrent_grad links into
  // each step): a new block holding the step block's gradient ops, seeded by the gradients
  // of the outputs that need them and of every state, under Fluid's names ("v@GRAD"), and
  // computing those of the inputs, the ex-states (always: the gradient flows through them
  // from step to step) and the parameters, under the same names.
  void EmitRecurrentGrad(int i, const OpSchemaEntry& schema, const std::set<std::string>& requires,
                         const std::set<std::string>& needed) {
    const proto::OpDesc fwd = src_.ops(i);
    const int32_t sub = SubBlockOf(fwd);
    if (sub < 0 || sub >= program_.blocks_size()) throw Error(Where(i, fwd) + ": recurrent without a valid sub_block");
    const auto names = [&](const char* attr) {
      std::vector<std::string> out;
      for (const auto& a : fwd.attrs())
        if (a.name() == attr) out.assign(a.strings().begin(), a.strings().end());
      return out;
    };
    const std::vector<std::string> ex_states = names("ex_states"), states = names("states");
    const auto args = [&](const char* slot) {
      std::vector<std::string> out;
      if (const proto::OpDesc::Var* v = FindSlot(fwd.inputs(), slot))
        out.assign(v->arguments().begin(), v->arguments().end());
      return out;
    };
    const std::vector<std::string> inputs = args("inputs"), initial = args("initial_states"),
                                   params = args("parameters");
    if (initial.size() != ex_states.size()) {
      throw Error(Where(i, fwd) + ": initial_states has " + std::to_string(initial.size()) + " variables, ex_states " +
                  std::to_string(ex_states.size()));
    }

    proto::OpDesc grad;
    grad.set_type(schema.grad_op_type);
    for (const auto& in : fwd.inputs()) *grad.add_inputs() = in;
    std::vector<std::string> seeds = states;
    if (const proto::OpDesc::Var* outs = FindSlot(fwd.outputs(), "outputs")) {
      *grad.add_inputs() = *outs;
      auto* g = grad.add_inputs();
      g->set_parameter(std::string("outputs") + kGradSuffix);
      for (const auto& a : outs->arguments()) {
        if (!FlowsBack(a, needed)) {
          g->add_arguments(kEmptyVarName);
          continue;
        }
        g->add_arguments(Finalize(a));
        seeds.push_back(a);
      }
    }

    // What gets a gradient inside: the ex-states, and the inputs and parameters that need one.
    std::vector<std::string> inner = ex_states;
    for (const auto* slot : {&inputs, &params}) {
      for (const auto& a : *slot)
        if (requires.count(a) && std::find(inner.begin(), inner.end(), a) == inner.end()) inner.push_back(a);
    }
    const int idx = NewGradientBlock(sub);
    BackwardBuilder step(program_, idx, registry_, sub);
    const std::vector<std::string> got = step.BuildSeeded(seeds, inner);
    step.DeclareLocals({});
    const auto inner_grad = [&](const std::string& name) {
      const auto at = std::find(inner.begin(), inner.end(), name);
      return at == inner.end() ? std::string() : got[static_cast<size_t>(at - inner.begin())];
    };

    // The forward recurrent keeps its steps for this op.
    *grad.add_inputs() = KeptSteps(i, "step_scopes");

    // One contribution per outer variable whose inner counterpart got a gradient.
    const int index = block_.ops_size();
    std::set<std::string> given;
    const auto add_outputs = [&](const char* slot, const std::vector<std::string>& outer,
                                 const std::vector<std::string>& inner_names) {
      auto* out = grad.add_outputs();
      out->set_parameter(std::string(slot) + kGradSuffix);
      const int slot_index = grad.outputs_size() - 1;
      for (size_t k = 0; k < outer.size(); ++k) {
        if (!requires.count(outer[k]) || inner_grad(inner_names[k]).empty() || !given.insert(outer[k]).second) {
          out->add_arguments(kEmptyVarName);
          continue;
        }
        AddContribution(outer[k], index, slot_index, out);
      }
    };
    add_outputs("inputs", inputs, inputs);
    add_outputs("initial_states", initial, ex_states);
    add_outputs("parameters", params, params);
    CopyAttrsWithBlock(fwd, idx, grad);
    *block_.add_ops() = std::move(grad);
  }

  // A while body's gradient ops, for one step: seeded by seeds_ (the gradients from after
  // the loop, and the accumulators of arrays the body also writes); ends by adding each
  // param's gradient of this step into its accumulator. Returns which params got one.
  std::vector<bool> BuildStep(const std::vector<std::string>& params, const std::vector<std::string>& accumulators) {
    const int last = src_.ops_size() - 1;
    std::set<std::string> requires(params.begin(), params.end());
    Propagate(last, requires);
    std::set<std::string> needed;
    for (const auto& [v, name] : seeds_) {
      if (requires.count(v)) needed.insert(v);
    }
    Emit(PathBack(last, requires, needed), requires, needed);
    std::vector<bool> got;
    for (size_t k = 0; k < params.size(); ++k) {
      const auto& refs = contributions_[params[k]];
      got.push_back(!refs.empty());
      if (refs.empty()) continue;
      auto* sum = block_.add_ops();
      sum->set_type("sum");
      auto* x = sum->add_inputs();
      x->set_parameter("X");
      for (const auto& r : refs) x->add_arguments(block_.ops(r.op).outputs(r.slot).arguments(r.arg));
      x->add_arguments(accumulators[k]);
      auto* out = sum->add_outputs();
      out->set_parameter("Out");
      out->add_arguments(accumulators[k]);
    }
    return got;
  }

  // Declares in the gradient block every variable its ops write but `shared`, so that each
  // run of the block makes them in its own scope.
  void DeclareLocals(const std::set<std::string>& shared) {
    std::set<std::string> declared;
    for (const auto& v : block_.vars()) declared.insert(v.name());
    for (const auto& op : block_.ops()) {
      for (const auto& out : op.outputs()) {
        for (const auto& a : out.arguments()) {
          if (a == kEmptyVarName || shared.count(a) || !declared.insert(a).second) continue;
          auto* v = block_.add_vars();
          v->set_name(a);
          v->mutable_type()->set_type(IsArray(ForwardName(a)) ? proto::VarType::LOD_TENSOR_ARRAY
                                                              : proto::VarType::LOD_TENSOR);
        }
      }
    }
  }

  // The forward variable a gradient's name is made from ("v@GRAD@RENAME@0" -> "v").
  static std::string ForwardName(const std::string& grad) {
    const size_t at = grad.find(kGradSuffix);
    return at == std::string::npos ? grad : grad.substr(0, at);
  }

  struct ArgRef {
    int op, slot, arg;
  };
  proto::ProgramDesc& program_;
  const int block_idx_;
  proto::BlockDesc& block_;
  proto::BlockDesc& src_;
  const Registry& registry_;
  std::vector<const OpSchemaEntry*> schemas_;
  std::map<std::string, std::vector<ArgRef>> contributions_;
  std::map<std::string, int> renames_;  // contributions named so far per variable, for unique names
  std::set<std::string> finalized_;
  // In a while's gradient block: the name of the gradient each variable's seed reads, given by
  // the enclosing pass (EmitWhileGrad), for the outputs gradients flow back into.
  std::map<std::string, std::string> seeds_;
};

}  // namespace

std::vector<ParamGrad> AppendBackward(proto::ProgramDesc& program, const Registry& registry, const std::string& loss,
                                      std::vector<std::string> parameters) {
  if (program.blocks_size() == 0) throw Error("program has no blocks");
  proto::ProgramDesc built = program;  // built aside: a failure leaves the program as it was
  auto result = BackwardBuilder(built, 0, registry).Build(loss, std::move(parameters));
  program = std::move(built);
  return result;
}

void AppendSgd(proto::ProgramDesc& program, const std::vector<ParamGrad>& params_grads, float learning_rate) {
  if (program.blocks_size() == 0) throw Error("program has no blocks");
  BlockBuilder block(program.mutable_blocks(0));
  std::map<int32_t, std::string> lr_by_dtype;
  for (const auto& pg : params_grads) {
    int32_t dtype = RILL_FP32;
    for (const auto& v : program.blocks(0).vars()) {
      if (v.name() == pg.param && v.type().has_lod_tensor()) dtype = v.type().lod_tensor().tensor().data_type();
    }
    auto [it, fresh] = lr_by_dtype.emplace(dtype, "learning_rate@" + std::to_string(dtype));
    if (fresh) {
      block.Op("fill_constant")
          .Output("Out", it->second)
          .Attr("shape", std::vector<int64_t>{1})
          .Attr("dtype", dtype)
          .Attr("value", learning_rate);
    }
    block.Op("sgd")
        .Input("Param", pg.param)
        .Input("Grad", pg.grad)
        .Input("LearningRate", it->second)
        .Output("ParamOut", pg.param);
  }
}

}  // namespace rill::core
