// python/src/module.cc — rill._rill, the extension module under the `rill` package.
//
// It serves rill.fluid what needs the C++ runtime: the plugin registry (loading plugins,
// op schemas), scopes and tensors, running prepared programs, and the program passes
// written in C++ (append_backward, the distribute transpiler, validation, loading a
// saved model's parameters). Programs cross as serialized ProgramDescs: Python builds
// and edits them with protobuf's own Python classes. Core errors become rill.Error
// (rill/errors.py picks the subclass by status code), with the core's message.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/api/feed_fetch_targets.h"
#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/inference_model.h"
#include "core/loader/plugin_loader.h"
#include "core/program/backward.h"
#include "core/program/graph.h"
#include "core/program/program_io.h"
#include "core/program/render_dot.h"
#include "core/program/transpiler.h"
#include "core/program/validate.h"
#include "core/registry/registry.h"
#include "core/runtime/device.h"
#include "core/runtime/profiler.h"
#include "core/runtime/scope.h"
#include "numpy_tensor.h"
#include "prepared_program.h"
#include "registry_mutex.h"
#include "tensor_handle.h"

namespace rill::python {
namespace {

// The process's registry, made on first use and never destroyed: plugins are never
// unloaded, and kernels they made may outlive any Python object.
core::Registry& TheRegistry() {
  static auto* registry = new core::Registry;
  return *registry;
}
std::vector<core::PluginInfo>& Loaded() {
  static auto* loaded = new std::vector<core::PluginInfo>;
  return *loaded;
}

py::dict InfoDict(const core::PluginInfo& p) {
  py::dict d;
  d["name"] = p.name;
  d["version"] = p.version;
  d["path"] = p.path;
  d["abi_version"] = p.abi_version;
  d["enabled"] = p.enabled;
  d["ops"] = p.ops;
  return d;
}

py::list LoadPlugins(const std::vector<std::string>& dirs, const std::vector<std::string>& files) {
  core::LoadOptions options;
  options.dirs = dirs;
  options.files = files;
  std::vector<core::PluginInfo> infos;
  {
    py::gil_scoped_release release;  // a run in progress may hold the registry a while
    std::unique_lock lock(RegistryMutex());
    options.builtin = Loaded().empty();
    infos = core::LoadPlugins(TheRegistry(), options);
    Loaded().insert(Loaded().end(), infos.begin(), infos.end());
  }
  py::list out;
  for (const auto& info : infos) out.append(InfoDict(info));
  return out;
}

// A schema attribute's default as Python reads it; None for BLOCK(S), which have none.
py::object AttrDefault(const core::AttrValue& v) {
  switch (v.type) {
    case RILL_ATTR_INT:
    case RILL_ATTR_LONG: return py::int_(v.i);
    case RILL_ATTR_FLOAT: return py::float_(v.f);
    case RILL_ATTR_STRING: return py::str(v.s);
    case RILL_ATTR_BOOLEAN: return py::bool_(v.i != 0);
    case RILL_ATTR_INTS: return py::cast(v.ints);
    case RILL_ATTR_FLOATS: return py::cast(v.floats);
    case RILL_ATTR_STRINGS: return py::cast(v.strings);
    case RILL_ATTR_BOOLEANS: {
      py::list l;
      for (uint8_t b : v.bools) l.append(py::bool_(b != 0));
      return l;
    }
    default: return py::none();
  }
}

py::object OpSchema(const std::string& type) {
  const auto registry = ReadRegistry();
  const core::OpSchemaEntry* op = TheRegistry().FindOp(type);
  if (op == nullptr) return py::none();
  const auto slots = [](const std::vector<core::SlotSpec>& specs) {
    py::list l;
    for (const auto& s : specs) {
      py::dict d;
      d["name"] = s.name;
      d["optional"] = s.optional();
      d["duplicable"] = s.duplicable();
      l.append(d);
    }
    return l;
  };
  py::dict attrs;
  for (const auto& a : op->attrs) {
    py::dict d;
    d["type"] = a.type;
    d["required"] = a.required;
    d["default"] = a.required ? py::none() : AttrDefault(a.default_value);
    attrs[py::str(a.name)] = d;
  }
  py::dict d;
  d["type"] = op->type;
  d["plugin"] = op->plugin;
  d["doc"] = op->doc;
  d["inputs"] = slots(op->inputs);
  d["outputs"] = slots(op->outputs);
  d["attrs"] = attrs;
  d["grad_op_type"] = op->grad_op_type;
  d["dtype_source"] = op->dtype_source;
  std::set<int32_t> dtypes;  // of its kernels on every device; RILL_ANY_DTYPE (-1): any
  for (const core::KernelEntry* k : TheRegistry().KernelsOf(type)) dtypes.insert(k->dtype);
  d["kernel_dtypes"] = std::vector<int32_t>(dtypes.begin(), dtypes.end());
  return d;
}

proto::ProgramDesc Parse(const py::bytes& bytes, const std::string& what) {
  return core::ParseProgramBinary(std::string(bytes), what);
}
py::bytes Serialize(const proto::ProgramDesc& program) { return py::bytes(program.SerializeAsString()); }

py::tuple AppendBackward(const py::bytes& program, const std::string& loss, const std::vector<std::string>& params) {
  proto::ProgramDesc p = Parse(program, "<program>");
  const auto registry = ReadRegistry();
  const std::vector<core::ParamGrad> grads = core::AppendBackward(p, TheRegistry(), loss, params);
  py::list pairs;
  for (const auto& g : grads) pairs.append(py::make_tuple(g.param, g.grad));
  return py::make_tuple(Serialize(p), pairs);
}

py::dict Transpile(const py::bytes& train, const py::bytes& startup, int32_t trainers,
                   const std::vector<std::string>& pservers, const std::string& send_op, const std::string& recv_op,
                   const std::string& serve_op, const std::string& prefetch_op, bool sync_mode, int64_t max_staleness) {
  core::TranspileOptions options;
  options.sync = sync_mode;
  options.max_staleness = max_staleness;
  options.trainers = trainers;
  options.pservers = pservers;
  options.send_op = send_op;
  options.recv_op = recv_op;
  options.serve_op = serve_op;
  options.prefetch_op = prefetch_op;
  core::TranspiledPrograms t =
      core::Transpile(Parse(train, "<trainer program>"), Parse(startup, "<startup program>"), options);
  py::dict out;
  out["trainer"] = Serialize(t.trainer);
  out["trainer_startup"] = Serialize(t.trainer_startup);
  py::list ps, pss;
  for (const auto& p : t.pservers) ps.append(Serialize(p));
  for (const auto& p : t.pserver_startups) pss.append(Serialize(p));
  out["pservers"] = ps;
  out["pserver_startups"] = pss;
  out["placement"] = t.placement;
  return out;
}

// Loads a saved model's parameters into `scope`; returns the model's program file (as
// core::ModelProgramFile finds it) and the parameters' names.
std::pair<std::string, std::vector<std::string>> LoadModelParameters(const std::string& dir,
                                                                     const std::string& model_filename,
                                                                     const std::string& params_filename,
                                                                     const std::shared_ptr<core::Scope>& scope,
                                                                     bool allow_files_outside) {
  const core::ModelFiles files{model_filename, params_filename, allow_files_outside};
  core::InferenceModel model = core::LoadInferenceModel(dir, files);
  std::vector<std::string> names;
  for (auto& [name, value] : model.parameters) {
    *scope->Var(name)->GetMutableTensor() = std::move(value);
    names.push_back(name);
  }
  return {core::ModelProgramFile(dir, files), names};
}

// Raises the rill.Error subclass of the status code (rill/errors.py).
void TranslateError(const core::Error& e) {
  py::object cls = py::module_::import("rill.errors").attr("error_class")(static_cast<int>(e.code()));
  py::object value = cls(e.what(), static_cast<int>(e.code()));
  PyErr_SetObject(cls.ptr(), value.ptr());
}

// Gives `t` zeroed memory of `dtype` for its dims (none yet: [0]); its LoD stays, as
// Allocate leaves it.
void AllocateAs(core::Tensor& t, int32_t dtype) {
  const core::Dims dims = t.dims();
  std::memset(t.Allocate(dtype, std::vector<int64_t>(dims.begin(), dims.end())), 0, t.nbytes());
}

// A variable of a scope, as scope.find_var returns it; keeps the scope alive.
struct VarHandle {
  std::shared_ptr<core::Scope> scope;
  core::Variable* var;
};

// A variable's SelectedRows, as var.get_selected_rows() returns it; keeps the scope alive.
struct RowsHandle {
  std::shared_ptr<core::Scope> scope;
  core::SelectedRows* rows;
};

RowsHandle VarRows(const std::shared_ptr<core::Scope>& scope, core::Variable* var) {
  if (var->initialized() && !var->is_selected_rows()) {
    throw core::Error("variable holds a " + var->KindName() + ", not SelectedRows", RILL_INVALID_ARGUMENT);
  }
  return RowsHandle{scope, var->GetMutableSelectedRows()};
}

// LoD offsets from Fluid's "recursive sequence lengths" (each level's lengths), and back.
core::LoD LodFromLengths(const std::vector<std::vector<uint64_t>>& lengths) {
  core::LoD lod;
  for (const auto& level : lengths) {
    std::vector<uint64_t> offsets{0};
    for (uint64_t n : level) offsets.push_back(offsets.back() + n);
    lod.push_back(std::move(offsets));
  }
  return lod;
}
std::vector<std::vector<uint64_t>> LengthsFromLod(const core::LoD& lod) {
  std::vector<std::vector<uint64_t>> lengths;
  for (const auto& level : lod) {
    std::vector<uint64_t> l;
    for (size_t i = 1; i < level.size(); ++i) l.push_back(level[i] - level[i - 1]);
    lengths.push_back(std::move(l));
  }
  return lengths;
}

// Element i of an fp32 tensor on the host, checked.
float& FloatElement(core::Tensor& t, int64_t i) {
  if (!t.initialized() || t.dtype() != RILL_FP32) {
    throw core::Error("the tensor holds " + t.Describe() + ", not fp32 values", RILL_INVALID_ARGUMENT);
  }
  if (i < 0 || i >= t.numel()) {
    throw py::index_error("element " + std::to_string(i) + " of a tensor of " + std::to_string(t.numel()));
  }
  return static_cast<float*>(t.data())[i];
}

// A variable's tensor array, as var.get_lod_tensor_array() returns it (Fluid's
// LoDTensorArray); keeps the scope alive. An entry it gives is a view of that entry while
// the array keeps its length.
struct ArrayHandle {
  std::shared_ptr<core::Scope> scope;
  core::TensorArray* array;

  core::Tensor& At(int64_t i) const {
    const int64_t n = static_cast<int64_t>(array->size());
    if (i < -n || i >= n) throw py::index_error("index " + std::to_string(i) + " of an array of " + std::to_string(n));
    return (*array)[static_cast<size_t>(i < 0 ? i + n : i)];
  }
};

ArrayHandle VarArray(const std::shared_ptr<core::Scope>& scope, core::Variable* var) {
  if (var->initialized() && !var->is_tensor_array()) {
    throw core::Error("variable holds a " + var->KindName() + ", not a tensor array", RILL_INVALID_ARGUMENT);
  }
  return ArrayHandle{scope, var->GetMutableTensorArray()};
}

// A variable's LoD rank table, as var.get_lod_rank_table() returns it (Fluid's
// LoDRankTable): the (index, length) of each sequence, longest first, which
// lod_rank_table's output holds as int64 [n, 2].
struct RankTable {
  std::vector<std::pair<int64_t, int64_t>> items;
};

RankTable VarRankTable(const core::Variable* var) {
  const core::Tensor* t = var->GetTensor();
  if (t == nullptr || t->dtype() != RILL_INT64 || t->dims().size() != 2 || t->dims()[1] != 2 ||
      t->place().device_type != RILL_CPU) {
    throw core::Error("variable holds " + (t != nullptr ? t->Describe() : "a " + var->KindName()) +
                          ", not a rank table (lod_rank_table's int64 [n, 2] of index and length)",
                      RILL_INVALID_ARGUMENT);
  }
  RankTable table;
  const auto* rows = static_cast<const int64_t*>(t->data());
  for (int64_t i = 0; i < t->dims()[0]; ++i) table.items.emplace_back(rows[2 * i], rows[2 * i + 1]);
  return table;
}

TensorHandle VarTensor(const std::shared_ptr<core::Scope>& scope, core::Variable* var) {
  if (var->initialized() && !var->is_tensor()) {
    throw core::Error("variable holds a " + var->KindName() + ", not a tensor", RILL_INVALID_ARGUMENT);
  }
  return TensorHandle(scope, var->GetMutableTensor());
}

}  // namespace

PYBIND11_MODULE(_rill, m) {
  m.doc() = "Rill's C++ runtime, for rill.fluid";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const core::Error& e) {
      TranslateError(e);
    }
  });

  m.def("load_plugins", &LoadPlugins, py::arg("dirs"), py::arg("files"),
        "Loads the plugins in `dirs` and the plugin `files` (the first call also the built-in ops).");
  m.def("plugins", [] {
    const auto registry = ReadRegistry();
    py::list out;
    for (const auto& p : Loaded()) out.append(InfoDict(p));
    return out;
  });
  m.def("op_schema", &OpSchema, py::arg("type"), "The op's schema as a dict, or None if no plugin has it.");
  m.def("unknown_op_message", [](const std::string& type) {
    const auto registry = ReadRegistry();
    return TheRegistry().UnknownOpMessage(type);
  });
  m.def(
      "device_count",
      [](int32_t device_type) -> int32_t {
        const auto registry = ReadRegistry();  // plugin loads install devices
        const core::Device* device = core::FindDevice(device_type);
        return device == nullptr ? -1 : device->device_count();
      },
      py::arg("device_type"), "How many devices of the type are present; -1 if no loaded plugin drives it.");
  m.def("append_backward", &AppendBackward, py::arg("program"), py::arg("loss"), py::arg("parameters"));
  m.def("transpile", &Transpile, py::arg("program"), py::arg("startup"), py::arg("trainers"), py::arg("pservers"),
        py::arg("send_op"), py::arg("recv_op"), py::arg("serve_op"), py::arg("prefetch_op"),
        py::arg("sync_mode") = true, py::arg("max_staleness") = -1);
  m.def(
      "program_to_dot",
      [](const py::bytes& program, int block, const std::vector<std::string>& highlight) {
        const proto::ProgramDesc p = Parse(program, "<program>");
        core::GraphOptions options;
        options.block = block;
        options.highlight = highlight;
        {
          const auto registry = ReadRegistry();
          options.problems = core::ValidateProgram(p, TheRegistry());
        }
        return core::ProgramToDot(p, options);
      },
      py::arg("program"), py::arg("block"), py::arg("highlight"),
      "The program as a Graphviz graph (DOT), its problems marked (core/program/graph.h).");
  m.def("write_graph", &core::WriteGraph, py::arg("dot"), py::arg("path"),
        "Writes DOT to PATH: as text for .dot/.gv, else rendered by Graphviz's dot.");
  m.def(
      "write_file",
      [](const std::string& path, const py::bytes& data) {
        const std::string bytes = data;
        core::WriteFileAtomically(path, [&](std::ostream& out) { out << bytes; });
      },
      py::arg("path"), py::arg("data"),
      "Writes DATA to PATH whole or not at all (core/io/atomic_file.h): a failure leaves the old file.");
  m.def(
      "set_feed_variable",
      [](const std::shared_ptr<core::Scope>& scope, const TensorHandle& t, const std::string& name, int col) {
        if (col < 0) throw core::Error("col must be at least 0", RILL_OUT_OF_RANGE);
        core::SetFeedColumn(*scope->Var(name), col, *t.get());
      },
      py::arg("scope"), py::arg("tensor"), py::arg("var_name"), py::arg("col"),
      "Fluid's: column `col` of the feed list variable `var_name` of `scope` becomes a copy of `tensor`.");
  m.def(
      "get_fetch_variable",
      [](const std::shared_ptr<core::Scope>& scope, const std::string& name, int col) {
        const core::Tensor* column =
            col < 0 ? nullptr : core::ListColumn(scope->FindVar(name), static_cast<size_t>(col), name);
        if (column == nullptr) {
          throw core::Error("'" + name + "' has no column " + std::to_string(col), RILL_OUT_OF_RANGE);
        }
        auto copy = std::make_shared<core::Tensor>(*column);
        return TensorHandle(copy, copy.get());
      },
      py::arg("scope"), py::arg("var_name"), py::arg("col"),
      "Fluid's: column `col` of the feed or fetch list variable `var_name` of `scope`.");
  m.def("load_model_parameters", &LoadModelParameters, py::arg("dir"), py::arg("model_filename"),
        py::arg("params_filename"), py::arg("scope"), py::arg("allow_files_outside") = false);

  const auto dims_of = [](const TensorHandle& t) {
    return std::vector<int64_t>(t.get()->dims().begin(), t.get()->dims().end());
  };
  // Fluid's Resize (the LoD stays, as Allocate leaves it).
  const auto set_dims = [dims_of](TensorHandle& t, const std::vector<int64_t>& dims) {
    core::Tensor* x = t.get();
    if (x->initialized() && dims_of(t) == dims) return;
    void* p = x->Allocate(x->initialized() ? x->dtype() : RILL_FP32, dims);
    std::memset(p, 0, x->nbytes());
  };
  py::class_<TensorHandle>(m, "Tensor")
      .def(py::init<>())
      .def(py::init([](const std::vector<std::vector<uint64_t>>& lengths) {
             TensorHandle t;
             t.get()->mutable_lod() = LodFromLengths(lengths);
             return t;
           }),
           py::arg("recursive_sequence_lengths"), "An empty tensor with this LoD (each level's sequence lengths).")
      .def(
          "set",
          [](TensorHandle& t, const py::array& value, const py::object&) {
            core::LoD lod = t.get()->lod();  // the values change, the LoD stays (Fluid's set)
            *t.get() = TensorFromArray(value, "tensor", /*may_borrow=*/false);
            if (!lod.empty()) t.get()->mutable_lod() = std::move(lod);
          },
          py::arg("array"), py::arg("place") = py::none(),
          "Sets the tensor's values to a copy of `array`; the LoD stays.")
      .def("shape", dims_of)
      .def("dtype", [](const TensorHandle& t) { return t.get()->dtype(); })
      .def("_is_initialized", [](const TensorHandle& t) { return t.get()->initialized(); })
      .def("_get_dims", dims_of)
      .def("get_dims", dims_of, "Fluid 0.14's name of _get_dims.")
      .def(
          "get_float_element", [](const TensorHandle& t, int64_t i) { return FloatElement(*t.get(), i); }, py::arg("i"),
          "Fluid 0.14's: element i (in row-major order) of an fp32 tensor.")
      .def(
          "set_float_element", [](TensorHandle& t, int64_t i, float value) { FloatElement(*t.get(), i) = value; },
          py::arg("i"), py::arg("value"), "Fluid 0.14's: sets element i of an fp32 tensor.")
      .def(
          "_get_float_element", [](const TensorHandle& t, int64_t i) { return FloatElement(*t.get(), i); },
          py::arg("i"), "Fluid 1.x's name of get_float_element.")
      .def(
          "_set_float_element", [](TensorHandle& t, int64_t i, float value) { FloatElement(*t.get(), i) = value; },
          py::arg("i"), py::arg("value"), "Fluid 1.x's name of set_float_element.")
      .def("_set_dims", set_dims, py::arg("dims"),
           "Fluid's Resize: the tensor takes `dims` (kept as it is when it has them already; else zero-filled, in "
           "its dtype, fp32 when it has none): Rill's tensors always hold memory for their dims.")
      .def("set_dims", set_dims, py::arg("dims"), "Fluid 0.14's name of _set_dims.")
      .def(
          "alloc_int", [](TensorHandle& t, const py::object&) { AllocateAs(*t.get(), RILL_INT32); },
          py::arg("place") = py::none(), "Fluid 0.14's: the tensor's memory as int32 zeros, for its dims.")
      .def(
          "alloc_float", [](TensorHandle& t, const py::object&) { AllocateAs(*t.get(), RILL_FP32); },
          py::arg("place") = py::none(), "Fluid 0.14's: the tensor's memory as fp32 zeros, for its dims.")
      .def("lod", [](const TensorHandle& t) { return t.get()->lod(); })
      .def("set_lod", [](TensorHandle& t, const core::LoD& lod) { t.get()->mutable_lod() = lod; })
      .def("recursive_sequence_lengths", [](const TensorHandle& t) { return LengthsFromLod(t.get()->lod()); })
      .def(
          "set_recursive_sequence_lengths",
          [](TensorHandle& t, const std::vector<std::vector<uint64_t>>& lengths) {
            t.get()->mutable_lod() = LodFromLengths(lengths);
          },
          py::arg("lengths"), "Sets the LoD from each level's sequence lengths (Fluid's form).")
      .def(
          "has_valid_recursive_sequence_lengths",
          [](const TensorHandle& t) {
            const core::Tensor& x = *t.get();
            return core::LoDProblem(x.lod(), x.dims().empty() ? 0 : x.dims()[0]).empty();
          },
          "Whether the LoD fits the tensor: each level starts at 0, never decreases, and ends where the next "
          "level's sequences (or the tensor's rows) end.")
      .def("numpy", [](const TensorHandle& t) { return ArrayFromTensor(*t.get()); })
      .def(
          "__array__",
          [](const TensorHandle& t, const py::object& dtype) {
            py::array a = ArrayFromTensor(*t.get());
            return dtype.is_none() ? py::object(a) : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def("__repr__", [](const TensorHandle& t) { return t.get()->Describe(); });

  py::class_<RowsHandle>(m, "SelectedRows")
      .def("height", [](const RowsHandle& r) { return r.rows->height; })
      .def(
          "set_height", [](RowsHandle& r, int64_t h) { r.rows->height = h; }, py::arg("height"))
      .def("rows", [](const RowsHandle& r) { return r.rows->rows; })
      .def(
          "set_rows", [](RowsHandle& r, const std::vector<int64_t>& rows) { r.rows->rows = rows; }, py::arg("rows"))
      .def(
          "sync_index", [](RowsHandle&) {},
          "Fluid rebuilds its row-to-value index here; Rill keeps no index (kernels look rows up as they run), so "
          "there is nothing to do.")
      .def(
          "get_tensor", [](const RowsHandle& r) { return TensorHandle(r.scope, &r.rows->value); },
          "The rows' values, [len(rows), ...].");

  py::class_<ArrayHandle>(m, "LoDTensorArray")
      .def("__len__", [](const ArrayHandle& a) { return a.array->size(); })
      .def(
          "__getitem__", [](const ArrayHandle& a, int64_t i) { return TensorHandle(a.scope, &a.At(i)); }, py::arg("i"),
          "Entry i, a view of it.")
      .def(
          "__setitem__", [](ArrayHandle& a, int64_t i, const TensorHandle& t) { a.At(i) = *t.get(); }, py::arg("i"),
          py::arg("tensor"), "Entry i takes the tensor's value and LoD (sharing its memory).")
      .def(
          "append", [](ArrayHandle& a, const TensorHandle& t) { a.array->push_back(*t.get()); }, py::arg("tensor"),
          "A new last entry with the tensor's value and LoD (sharing its memory).");

  py::class_<RankTable>(m, "LoDRankTable")
      .def(
          "items", [](const RankTable& t) { return t.items; }, "[(index, length)] of each sequence, longest first.");

  py::class_<VarHandle>(m, "Variable")
      .def("get_tensor", [](const VarHandle& v) { return VarTensor(v.scope, v.var); })
      .def(
          "get_lod_rank_table", [](const VarHandle& v) { return VarRankTable(v.var); },
          "The rank table the variable holds (lod_rank_table's output), a copy.")
      .def(
          "get_lod_tensor_array", [](const VarHandle& v) { return VarArray(v.scope, v.var); },
          "The variable's tensor array, made empty if the variable holds nothing yet.")
      .def(
          "get_selected_rows", [](const VarHandle& v) { return VarRows(v.scope, v.var); },
          "The variable's SelectedRows, made empty if the variable holds nothing yet.")
      .def("is_initialized", [](const VarHandle& v) { return v.var->initialized(); })
      .def("kind", [](const VarHandle& v) { return v.var->KindName(); })
      .def(
          "set_int", [](VarHandle& v, int32_t value) { v.var->SetScalar(RILL_INT32, static_cast<uint32_t>(value)); },
          py::arg("value"), "Fluid 0.14's: the variable holds the int (an int32 scalar).")
      .def("is_int",
           [](const VarHandle& v) {
             int32_t dtype = 0;
             uint64_t bits = 0;
             return v.var->GetScalar(&dtype, &bits) && dtype == RILL_INT32;
           })
      .def("get_int",
           [](const VarHandle& v) {
             int32_t dtype = 0;
             uint64_t bits = 0;
             if (!v.var->GetScalar(&dtype, &bits) || dtype != RILL_INT32) {
               throw core::Error("the variable holds " + v.var->Describe(4) + ", not an int", RILL_INVALID_ARGUMENT);
             }
             int32_t value = 0;
             std::memcpy(&value, &bits, sizeof(value));
             return value;
           })
      .def("__repr__", [](const VarHandle& v) { return v.var->Describe(); });

  py::class_<core::Scope, std::shared_ptr<core::Scope>>(m, "Scope")
      .def(py::init([] { return core::Scope::NewRoot(); }))
      .def("new_scope", [](const std::shared_ptr<core::Scope>& s) { return s->NewChild(); })
      .def(
          "find_var",
          [](const std::shared_ptr<core::Scope>& s, const std::string& name) -> py::object {
            core::Variable* v = s->FindVar(name);
            if (v == nullptr) return py::none();
            return py::cast(VarHandle{s, v});
          },
          py::arg("name"), "The variable `name` up the scope chain, or None.")
      .def(
          "var",
          [](const std::shared_ptr<core::Scope>& s, const std::string& name) {
            return VarHandle{s, s->Var(name)};
          },
          py::arg("name"), "The variable `name` in this scope, made empty if it is not there.")
      .def("local_var_names", [](const core::Scope& s) { return s.LocalVarNames(); });

  // A recording of every run in the process until stop (core/runtime/profiler.h).
  py::class_<core::Profiler>(m, "Profiler")
      .def(py::init<>())
      .def(
          "stop",
          [](core::Profiler& p, const std::string& trace_path) {
            core::Trace trace = p.Stop();
            trace.process_name = "python (rill.fluid)";
            if (!trace_path.empty()) {
              core::WriteFileAtomically(trace_path, [&](std::ostream& out) { core::WriteChromeTrace(trace, out); });
            }
            py::list rows;
            for (const auto& r : core::SummarizeOps(trace)) {
              rows.append(py::make_tuple(r.type, r.calls, r.total_ns, r.min_ns, r.max_ns));
            }
            return rows;
          },
          py::arg("trace_path"),
          "Ends the recording; writes the Chrome trace to trace_path (unless empty) and returns each op "
          "type's (type, calls, total_ns, min_ns, max_ns).");

  py::class_<PreparedProgram>(m, "PreparedProgram")
      .def(py::init([](const py::bytes& program, int workers, int cuda_device) {
             const auto registry = ReadRegistry();
             return std::make_unique<PreparedProgram>(TheRegistry(), std::string(program), workers, cuda_device);
           }),
           py::arg("program"), py::arg("workers"), py::arg("cuda_device"))
      .def("run", &PreparedProgram::Run, py::arg("scope"), py::arg("feeds"), py::arg("as_tensors") = false)
      .def_property_readonly("feed_names", &PreparedProgram::feed_names)
      .def_property_readonly("fetch_names", &PreparedProgram::fetch_names);
}

}  // namespace rill::python
