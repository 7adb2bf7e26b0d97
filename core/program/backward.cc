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

std::string Where(int i, const proto::OpDesc& op) {
  return "block 0, op " + std::to_string(i) + " (" + op.type() + ")";
}

// Builds the gradient ops into a copy of block 0, tracking for each forward variable the
// gradient contributions written so far, so they can be summed (or just renamed) once
// every consumer has contributed.
class BackwardBuilder {
 public:
  BackwardBuilder(proto::BlockDesc& block, const Registry& registry) : block_(block), registry_(registry) {}

  std::vector<ParamGrad> Build(const std::string& loss, std::vector<std::string> params) {
    int loss_op = -1;
    for (int i = 0; i < block_.ops_size(); ++i) {
      for (const auto& out : block_.ops(i).outputs()) {
        for (const auto& a : out.arguments()) if (a == loss) loss_op = i;
      }
    }
    if (loss_op < 0) throw Error("loss variable '" + loss + "' is not produced by any op of block 0");
    if (params.empty()) {
      for (const auto& v : block_.vars()) if (v.persistable()) params.push_back(v.name());
    }
    if (params.empty()) {
      throw Error("no parameters: declare the trainable variables of block 0 persistable, or name them");
    }

    // Forward: which variables depend on a parameter through differentiable ops.
    std::set<std::string> requires(params.begin(), params.end());
    std::vector<const OpSchemaEntry*> schemas(static_cast<size_t>(loss_op + 1));
    for (int i = 0; i <= loss_op; ++i) {
      const auto& op = block_.ops(i);
      schemas[i] = registry_.FindOp(op.type());
      if (schemas[i] == nullptr) throw Error(Where(i, op) + ": " + registry_.UnknownOpMessage(op.type()));
      if (schemas[i]->grad_op_type.empty() || !AnyInput(op, requires)) continue;
      for (const auto& out : op.outputs()) for (const auto& a : out.arguments()) requires.insert(a);
    }
    if (!requires.count(loss)) {
      std::string names;
      for (const auto& p : params) names += (names.empty() ? "" : ", ") + p;
      throw Error("loss '" + loss + "' does not depend on any parameter (" + names + ") through differentiable ops");
    }

    // Backward: the ops on a path from a parameter to the loss, last first.
    std::set<std::string> needed{loss};
    std::vector<int> path;
    for (int i = loss_op; i >= 0; --i) {
      const auto& op = block_.ops(i);
      if (schemas[i]->grad_op_type.empty() || !AnyOutput(op, needed) || !AnyInput(op, requires)) continue;
      const auto& grads = schemas[i]->grad_outputs;
      for (const auto& in : op.inputs()) {
        // An input the op overwrites breaks the gradient only if one flows back through
        // it; a state it updates in place (batch_norm's running Mean) gets none.
        const bool differentiated = std::count(grads.begin(), grads.end(), in.parameter()) > 0;
        for (const auto& a : in.arguments()) {
          for (const auto& out : op.outputs()) {
            if (differentiated && std::count(out.arguments().begin(), out.arguments().end(), a)) {
              throw Error(Where(i, op) + " reads and writes '" + a + "': in-place ops on the gradient path are not "
                          "supported; write to a new variable");
            }
          }
          if (requires.count(a) && differentiated) needed.insert(a);
        }
      }
      path.push_back(i);
    }

    BlockBuilder(&block_).Op("fill_any_like").Input("X", loss).Output("Out", loss + kGradSuffix).Attr("value", 1.0f);
    finalized_.insert(loss + kGradSuffix);
    for (int i : path) EmitGradOp(block_.ops(i), *schemas[i], requires);

    std::vector<ParamGrad> result;
    for (const auto& p : params) {
      if (!needed.count(p)) continue;  // the loss does not depend on it
      result.push_back({p, Finalize(p)});
    }
    return result;
  }

 private:
  static bool AnyInput(const proto::OpDesc& op, const std::set<std::string>& vars) {
    for (const auto& in : op.inputs()) for (const auto& a : in.arguments()) if (vars.count(a)) return true;
    return false;
  }
  static bool AnyOutput(const proto::OpDesc& op, const std::set<std::string>& vars) {
    for (const auto& out : op.outputs()) for (const auto& a : out.arguments()) if (vars.count(a)) return true;
    return false;
  }

  // The final gradient of `var`: the one contribution renamed, or the sum of several;
  // zeros shaped like `var` if nothing contributed.
  std::string Finalize(const std::string& var) {
    const std::string grad = var + kGradSuffix;
    if (finalized_.count(grad)) return grad;
    finalized_.insert(grad);
    auto& refs = contributions_[var];
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
        auto& refs = contributions_[a];
        out->add_arguments(a + kGradSuffix + "@RENAME@" + std::to_string(refs.size()));
        refs.push_back({index, slot_index, out->arguments_size() - 1});
      }
      ++slot_index;
    }
    *grad.mutable_attrs() = fwd.attrs();
    *block_.add_ops() = std::move(grad);
  }

  struct ArgRef {
    int op, slot, arg;
  };
  proto::BlockDesc& block_;
  const Registry& registry_;
  std::map<std::string, std::vector<ArgRef>> contributions_;
  std::set<std::string> finalized_;
};

}  // namespace

std::vector<ParamGrad> AppendBackward(proto::ProgramDesc& program, const Registry& registry, const std::string& loss,
                                      std::vector<std::string> parameters) {
  if (program.blocks_size() == 0) throw Error("program has no blocks");
  proto::BlockDesc block = program.blocks(0);  // built aside: a failure leaves the program as it was
  auto result = BackwardBuilder(block, registry).Build(loss, std::move(parameters));
  *program.mutable_blocks(0) = std::move(block);
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
      block.Op("fill_constant").Output("Out", it->second).Attr("shape", std::vector<int64_t>{1})
          .Attr("dtype", dtype).Attr("value", learning_rate);
    }
    block.Op("sgd").Input("Param", pg.param).Input("Grad", pg.grad).Input("LearningRate", it->second)
        .Output("ParamOut", pg.param);
  }
}

}  // namespace rill::core
