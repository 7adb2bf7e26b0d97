// rill/sdk.hpp — the header-only C++ layer over rill/abi.h for plugin authors.
//
// Compiled into each plugin, never into a shared ABI: it lives in a versioned inline
// namespace with hidden visibility, so two plugins built against different SDK versions
// (or with different standard libraries) never see each other's copies.
//
// A plugin:
//
//   static void Increment(rill::KernelContext& ctx) { ... }
//   static void Init(rill::Registrar& r) {
//     r.Op(rill::OpSchema("increment").Input("X").Output("Out")
//              .Attr("step", 1.0, "amount added").KernelDtypeFrom("X"));
//     r.Kernel("increment", RILL_CPU, RILL_FP32, &Increment);
//   }
//   RILL_PLUGIN("my_plugin", "1.0", Init)
//
// Kernels report failure by throwing (rill::Error, or any std::exception); the layer
// turns every exception into a status at the ABI boundary.
#ifndef RILL_SDK_HPP_
#define RILL_SDK_HPP_

#include <cstdint>
#include <cstring>
#include <exception>

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/abi.h"
#include "rill/checked_size.hpp"
#include "rill/data_type.hpp"
#include "rill/spin_lock.hpp"  // the lock the parking protocol wants (Park's unlock)

// The lowest ABI version this plugin needs, which it declares to the host. By default 1,
// SDK 1.0: every call this layer makes to an entry added later checks that the host serves
// it (RILL_HOST_ENTRY) and fails naming the entry where it does not, so a plugin loads
// into every host that serves what it calls. A plugin that wants an older host to refuse
// it at load instead defines it higher (before including this header, or with -D).
#ifndef RILL_PLUGIN_NEEDS_ABI
#define RILL_PLUGIN_NEEDS_ABI 1u
#endif

// The namespace the layer lives in (see the top of this file): inline, versioned, of hidden
// visibility. A macro, so that formatters read the line as the namespace it opens.
#define RILL_SDK_NAMESPACE(name) inline namespace name __attribute__((visibility("hidden")))

namespace rill {
RILL_SDK_NAMESPACE(sdk_v1) {

// ---- Host table and errors ------------------------------------------------------------

namespace detail {
inline const RillHostApi*& HostSlot() {
  static const RillHostApi* host = nullptr;
  return host;
}
}  // namespace detail

// The host's function table; valid once the plugin's init has been called. It holds
// every entry of the ABI version the plugin needs (RILL_PLUGIN_NEEDS_ABI), and those of any
// later version the host serves; read a later one through RILL_HOST_ENTRY.
inline const RillHostApi& Host() { return *detail::HostSlot(); }

// The exception kernels throw; `code` becomes the status code the host sees.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, RillStatusCode code = RILL_INVALID_ARGUMENT)
      : std::runtime_error(message), code_(code) {}
  RillStatusCode code() const { return code_; }

 private:
  RillStatusCode code_;
};

namespace detail {
static_assert(RILL_PLUGIN_NEEDS_ABI >= 1 && RILL_PLUGIN_NEEDS_ABI <= RILL_ABI_VERSION,
              "RILL_PLUGIN_NEEDS_ABI must name a version this header declares");
[[noreturn]] inline void ThrowEntryNotServed(const char* entry) {
  throw Error(std::string("this plugin calls the host's ") + entry + ", which this host (ABI version " +
                  std::to_string(Host().abi_version) + ") does not serve: upgrade rill",
              RILL_UNIMPLEMENTED);
}
// Whether the host's table reaches `end` (an entry's offset plus its size).
inline bool HostServes(size_t end) { return Host().struct_size >= end; }
inline void RequireEntry(size_t end, const char* entry) {
  if (!HostServes(end)) ThrowEntryNotServed(entry);
}
}  // namespace detail

// Whether the host serves entry `field` (one added after the version the plugin needs).
#define RILL_HOST_SERVES(field) ::rill::detail::HostServes(offsetof(RillHostApi, field) + sizeof(::rill::Host().field))

// The host's entry `field`, once it is known to be there: a plugin that declares an ABI
// version older than its header's (RILL_PLUGIN_NEEDS_ABI) loads into hosts that lack the
// newer entries, and a call to one of those is then an error naming it, not a read past
// the host's table. The SDK reaches the host only through this.
#define RILL_HOST_ENTRY(field)                                                                        \
  (::rill::detail::RequireEntry(offsetof(RillHostApi, field) + sizeof(::rill::Host().field), #field), \
   ::rill::Host().field)

// Throws the status as an Error (releasing it) if it is not OK.
inline void Check(RillStatus* status) {
  if (status == nullptr) return;
  const auto code = static_cast<RillStatusCode>(RILL_HOST_ENTRY(status_code)(status));
  std::string message = RILL_HOST_ENTRY(status_message)(status);
  RILL_HOST_ENTRY(status_release)(status);
  throw Error(message, code);
}

// Runs `body`, turning any exception into a status for the host.
template <class F> RillStatus* Guard(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return RILL_HOST_ENTRY(status_create)(e.code(), e.what());
  } catch (const std::bad_alloc& e) {
    return RILL_HOST_ENTRY(status_create)(RILL_RESOURCE_EXHAUSTED,
                                          (std::string("out of memory (") + e.what() + ")").c_str());
  } catch (const std::exception& e) {
    return RILL_HOST_ENTRY(status_create)(RILL_INTERNAL, e.what());
  } catch (...) {
    return RILL_HOST_ENTRY(status_create)(RILL_INTERNAL, "unknown exception in plugin");
  }
}

inline void Log(RillLogLevel level, const std::string& message) { RILL_HOST_ENTRY(log)(level, message.c_str()); }

// Tracing (ABI version 2): a plugin's own spans (its RPCs, transfers, waits) in the profile
// `rill run --profile` records. Tracing() is false on a host of version 1 and whenever
// nobody profiles, and a TraceSpan then records nothing: a plugin that needs only version
// 1 may use them. Check Tracing() before building an expensive name or detail.
inline bool Tracing() { return RILL_HOST_SERVES(trace_span) && Host().trace_active() != 0; }

// The clock spans are on (ns). REQUIRES: Tracing().
inline int64_t TraceNow() { return Host().trace_now_ns(); }
// Records a span that ran from `start_ns` to `end_ns` (TraceNow's). REQUIRES: Tracing().
inline void TraceRecord(const char* category, const std::string& name, int64_t start_ns, int64_t end_ns,
                        const std::string& detail = "") {
  Host().trace_span(category, name.c_str(), start_ns, end_ns, detail.c_str());
}

// A span from construction to destruction, of `category` ("rpc", "barrier", ...) and
// `name`, on the calling thread's lane; `detail` (set_detail) is shown with it.
class TraceSpan {
 public:
  TraceSpan(const char* category, std::string name)
      : category_(category), name_(std::move(name)), start_(Tracing() ? TraceNow() : -1) {}
  ~TraceSpan() {
    if (start_ >= 0) TraceRecord(category_, name_, start_, TraceNow(), detail_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;
  bool recording() const { return start_ >= 0; }
  void set_detail(std::string detail) { detail_ = std::move(detail); }

 private:
  const char* category_;
  std::string name_, detail_;
  int64_t start_;
};

// Splits "a, b,c" into {"a", "b", "c"}: spaces dropped, empty items skipped.
inline std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : list + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

// ---- Data types --------------------------------------------------------------------------
// (DataTypeName and DataTypeSize: rill/data_type.hpp.)

template <class T> struct DataTypeOf;
template <> struct DataTypeOf<bool> { static constexpr RillDataType value = RILL_BOOL; };
template <> struct DataTypeOf<int16_t> { static constexpr RillDataType value = RILL_INT16; };
template <> struct DataTypeOf<int32_t> { static constexpr RillDataType value = RILL_INT32; };
template <> struct DataTypeOf<int64_t> { static constexpr RillDataType value = RILL_INT64; };
template <> struct DataTypeOf<float> { static constexpr RillDataType value = RILL_FP32; };
template <> struct DataTypeOf<double> { static constexpr RillDataType value = RILL_FP64; };
template <> struct DataTypeOf<uint8_t> { static constexpr RillDataType value = RILL_UINT8; };
template <> struct DataTypeOf<int8_t> { static constexpr RillDataType value = RILL_INT8; };

// A kernel's scalar path (StatefulKernel's Scalar) reads and writes RillScalar values:
// ReadScalar is true only for a value of T's dtype; WriteScalar sets one.
template <class T> bool ReadScalar(const RillScalar& s, T* value) {
  static_assert(sizeof(T) <= sizeof(s.bits), "a scalar is at most 8 bytes");
  if (s.dtype != DataTypeOf<T>::value) return false;
  std::memcpy(value, &s.bits, sizeof(T));
  return true;
}
template <class T> void WriteScalar(RillScalar& s, T value) {
  static_assert(sizeof(T) <= sizeof(s.bits), "a scalar is at most 8 bytes");
  s.dtype = DataTypeOf<T>::value;
  s.bits = 0;
  std::memcpy(&s.bits, &value, sizeof(T));
}

// Calls fn(T{}) with T the C++ type of `dtype`; throws for a dtype outside `Ts`.
template <class... Ts, class F> void VisitDataType(int32_t dtype, const char* what, F&& fn) {
  bool done = false;
  ((!done && dtype == DataTypeOf<Ts>::value ? (fn(Ts{}), done = true) : false), ...);
  if (!done) {
    throw Error(std::string(what) + ": unsupported dtype " + DataTypeName(dtype), RILL_UNIMPLEMENTED);
  }
}

// ---- Tensors, variables, scopes ---------------------------------------------------------

// A borrowed view of a tensor held by a variable. Its description (dtype, dims, data...)
// comes with it from KernelContext::Input and AllocateOutput; otherwise it is read from the
// host in one call on first use, and again after Allocate.
class Tensor {
 public:
  explicit Tensor(RillTensor* t) : t_(t) {}
  RillTensor* handle() const { return t_; }

  int32_t dtype() const { return info().dtype; }
  bool initialized() const { return dtype() >= 0; }
  size_t ndim() const { return info().ndim; }
  const int64_t* dims_data() const { return info().dims; }
  std::vector<int64_t> dims() const { return {dims_data(), dims_data() + ndim()}; }
  int64_t numel() const { return info().numel; }
  int32_t device_type() const { return info().device_type; }
  int32_t device_id() const { return info().device_id; }

  template <class T> const T* data() const { return Typed<T>(); }
  template <class T> T* mutable_data() { return Typed<T>(); }
  void* raw_data() { return info().data; }

  // Shapes the tensor (CPU) and returns its memory, typed.
  template <class T> T* Allocate(const int64_t* dims, size_t ndim) {
    return static_cast<T*>(Allocate(DataTypeOf<T>::value, dims, ndim));
  }
  template <class T> T* Allocate(const std::vector<int64_t>& dims) { return Allocate<T>(dims.data(), dims.size()); }
  void* Allocate(int32_t dtype, const int64_t* dims, size_t ndim, int32_t device_type = RILL_CPU,
                 int32_t device_id = 0) {
    void* data = nullptr;
    Check(RILL_HOST_ENTRY(tensor_allocate)(t_, dtype, dims, ndim, device_type, device_id, &data));
    have_info_ = false;
    return data;
  }
  void* Allocate(int32_t dtype, const std::vector<int64_t>& dims) { return Allocate(dtype, dims.data(), dims.size()); }

  // Makes this tensor a view of `src`'s memory, shaped `dims` (src's element count; src's
  // own shape without it), instead of a copy: an output that is an input's values
  // unchanged (abi.h's tensor_share). Neither is then rewritten in place; write only into
  // memory Allocate gives. A host of ABI version 1 has no shared memory for plugins: there
  // a CPU tensor gets a copy, and a device tensor an error naming the entry.
  void ShareWith(const Tensor& src) { ShareWith(src, src.dims_data(), src.ndim()); }
  void ShareWith(const Tensor& src, const std::vector<int64_t>& dims) { ShareWith(src, dims.data(), dims.size()); }
  void ShareWith(const Tensor& src, const int64_t* dims, size_t ndim) {
    if (RILL_HOST_SERVES(tensor_share) || src.device_type() != RILL_CPU) {
      Check(RILL_HOST_ENTRY(tensor_share)(t_, src.t_, dims, ndim));
      have_info_ = false;
      return;
    }
    if (!src.initialized()) throw Error("cannot share the memory of a tensor that holds no value");
    const std::vector<int64_t> shape(dims, dims + ndim);  // may be either tensor's own
    const ShapeSize size = SizeOfShape(shape.data(), shape.size(), DataTypeSize(src.dtype()));
    if (!size.ok()) throw Error("cannot view a tensor as " + size.error);
    if (size.numel != src.numel()) {
      throw Error("cannot view a tensor of " + std::to_string(src.numel()) + " elements as shape " +
                  ShapeString(shape.data(), shape.size()));
    }
    const void* from = src.info().data;
    void* to = Allocate(src.dtype(), shape.data(), shape.size());
    if (to != from && size.bytes > 0) std::memcpy(to, from, size.bytes);
  }

  // One level of the LoD, borrowed rather than copied: valid while the tensor's LoD is
  // unchanged (set_lod, or a new value or LoD given by another op, may move it). Empty past
  // the last level.
  struct LodLevel {
    const uint64_t* data = nullptr;
    size_t size = 0;
    const uint64_t& operator[](size_t i) const { return data[i]; }
    const uint64_t* begin() const { return data; }
    const uint64_t* end() const { return data + size; }
  };
  size_t lod_levels() const { return RILL_HOST_ENTRY(tensor_lod_levels)(t_); }
  LodLevel lod_level(size_t level) const {
    LodLevel out;
    out.data = RILL_HOST_ENTRY(tensor_lod_level)(t_, level, &out.size);
    return out;
  }
  std::vector<std::vector<uint64_t>> lod() const {
    std::vector<std::vector<uint64_t>> out(lod_levels());
    for (size_t l = 0; l < out.size(); ++l) {
      const LodLevel level = lod_level(l);
      out[l].assign(level.begin(), level.end());
    }
    return out;
  }
  // Replaces the whole LoD: levels past lod.size() that the tensor had are dropped, which
  // takes a host of ABI version 2 (on an older one, an error naming the entry, and only
  // when there are levels to drop).
  void set_lod(const std::vector<std::vector<uint64_t>>& lod) {
    for (size_t l = 0; l < lod.size(); ++l) {
      Check(RILL_HOST_ENTRY(tensor_set_lod_level)(t_, l, lod[l].data(), lod[l].size()));
    }
    if (lod_levels() > lod.size()) Check(RILL_HOST_ENTRY(tensor_truncate_lod)(t_, lod.size()));
  }

 private:
  const RillTensorInfo& info() const {
    if (!have_info_) {
      info_.struct_size = sizeof(RillTensorInfo);
      RILL_HOST_ENTRY(tensor_info)(t_, &info_);
      have_info_ = true;
    }
    return info_;
  }
  template <class T> T* Typed() const {
    const int32_t have = dtype();
    if (have != DataTypeOf<T>::value) {
      throw Error(std::string("tensor holds ") + DataTypeName(have) + ", kernel expected " +
                  DataTypeName(DataTypeOf<T>::value));
    }
    return static_cast<T*>(info().data);
  }
  friend class KernelContext;  // ctx_input_tensor and ctx_output_allocate describe into info_

  RillTensor* t_;
  mutable RillTensorInfo info_{};
  mutable bool have_info_ = false;
};

// A registered variable type, found by name once; Variable::Custom reads values of
// it by handle. One name has one handle for the life of the process.
class VarType {
 public:
  // Throws if no plugin registered `name`.
  static VarType Find(const char* name) {
    const RillVarType* t = RILL_HOST_ENTRY(var_type_find)(name);
    if (t == nullptr) throw Error(std::string("variable type '") + name + "' is not registered", RILL_NOT_FOUND);
    return VarType(t);
  }
  const RillVarType* handle() const { return t_; }

 private:
  explicit VarType(const RillVarType* t) : t_(t) {}
  const RillVarType* t_;
};

// A borrowed view of a variable.
class Variable {
 public:
  explicit Variable(RillVariable* v) : v_(v) {}
  RillVariable* handle() const { return v_; }
  explicit operator bool() const { return v_ != nullptr; }

  bool initialized() const { return RILL_HOST_ENTRY(var_is_initialized)(v_) != 0; }
  // Whether tensor() gives a tensor without an error or a change of kind: the variable
  // holds one (with or without a value) or nothing yet (ABI version 2).
  bool IsTensor() const { return RILL_HOST_ENTRY(var_is_tensor)(v_) != 0; }
  Tensor tensor() const {
    RillTensor* t = nullptr;
    Check(RILL_HOST_ENTRY(var_tensor)(v_, &t));
    return Tensor(t);
  }
  // Makes the variable hold `value` of `type`, taking ownership (the type's destroy frees it).
  template <class T> void SetCustom(const VarType& type, T* value) {
    Check(RILL_HOST_ENTRY(var_set_custom)(v_, type.handle(), value));
  }
  // The value if the variable holds one of `type`, else nullptr.
  template <class T> T* Custom(const VarType& type) const {
    return static_cast<T*>(RILL_HOST_ENTRY(var_custom)(v_, type.handle()));
  }
  void MoveFrom(Variable src) { Check(RILL_HOST_ENTRY(var_move)(v_, src.v_)); }
  void CopyFrom(Variable src) { Check(RILL_HOST_ENTRY(var_copy)(v_, src.v_)); }
  void SwapWith(Variable other) { Check(RILL_HOST_ENTRY(var_swap)(v_, other.v_)); }

  // A scalar: a one-element CPU tensor of shape [1], no LoD, of at most 8 bytes,
  // read or written in one call; `bits` holds its bytes (RillHostApi::var_scalar).
  bool GetScalar(int32_t* dtype, uint64_t* bits) const { return RILL_HOST_ENTRY(var_scalar)(v_, dtype, bits) != 0; }
  void SetScalar(int32_t dtype, uint64_t bits) { Check(RILL_HOST_ENTRY(var_set_scalar)(v_, dtype, bits)); }
  // The scalar of T's dtype holding `value` (its bytes packed as `bits` holds them).
  template <class T> void SetScalar(T value) {
    RillScalar s;
    WriteScalar(s, value);
    SetScalar(s.dtype, s.bits);
  }

  // SelectedRows: rows of a [height, ...] tensor, their values in `value`.
  struct SelectedRows {
    const int64_t* rows;
    size_t count;
    int64_t height;
    Tensor value;
  };
  bool IsSelectedRows() const { return RILL_HOST_ENTRY(var_is_selected_rows)(v_) != 0; }
  SelectedRows selected_rows() const {
    SelectedRows s{nullptr, 0, 0, Tensor(nullptr)};
    RillTensor* value = nullptr;
    Check(RILL_HOST_ENTRY(var_selected_rows)(v_, &s.rows, &s.count, &s.height, &value));
    s.value = Tensor(value);
    return s;
  }
  // Makes this variable SelectedRows; returns its value tensor, to allocate [rows, ...].
  Tensor SetSelectedRows(const int64_t* rows, size_t count, int64_t height) {
    RillTensor* value = nullptr;
    Check(RILL_HOST_ENTRY(var_set_selected_rows)(v_, rows, count, height, &value));
    return Tensor(value);
  }

  // Tensor arrays (Fluid's LoDTensorArray; ABI version 2): a list of tensors, each its own
  // shape. TensorArraySize makes an empty variable an empty array; TensorArrayAt(i) is
  // entry i (an entry never written is an empty tensor, to Allocate), valid until the
  // array is resized.
  bool IsTensorArray() const { return RILL_HOST_ENTRY(var_is_tensor_array)(v_) != 0; }
  size_t TensorArraySize() const {
    size_t count = 0;
    Check(RILL_HOST_ENTRY(var_tensor_array)(v_, &count));
    return count;
  }
  void ResizeTensorArray(size_t count) { Check(RILL_HOST_ENTRY(var_tensor_array_resize)(v_, count)); }
  Tensor TensorArrayAt(size_t i) const {
    RillTensor* t = nullptr;
    Check(RILL_HOST_ENTRY(var_tensor_array_at)(v_, i, &t));
    return Tensor(t);
  }

  std::string Describe() const {
    char buf[512];
    RILL_HOST_ENTRY(var_describe)(v_, buf, sizeof(buf));
    return buf;
  }

 private:
  RillVariable* v_;
};

// A variable the plugin owns, outside any scope.
class OwnedVariable {
 public:
  OwnedVariable() : v_(RILL_HOST_ENTRY(var_new)()) {
    if (v_ == nullptr) throw Error("out of memory making a variable", RILL_RESOURCE_EXHAUSTED);
  }
  ~OwnedVariable() { RILL_HOST_ENTRY(var_delete)(v_); }
  OwnedVariable(const OwnedVariable&) = delete;
  OwnedVariable& operator=(const OwnedVariable&) = delete;
  Variable get() const { return Variable(v_); }

 private:
  RillVariable* v_;
};

// ---- Tasks -------------------------------------------------------------------------------
//
// The calling task (or thread), to be woken later by Unpark; see RillHostApi::task_park
// for the protocol. Park returns the host's status (NULL: woken) so the caller can undo
// its wait before throwing it.
inline RillTask* CurrentTask() { return RILL_HOST_ENTRY(task_current)(); }
inline void Unpark(RillTask* task) { RILL_HOST_ENTRY(task_unpark)(task); }
inline RillStatus* Park(RillKernelContext* ctx, const char* what, void (*unlock)(void*), void* arg) {
  return RILL_HOST_ENTRY(task_park)(ctx, what, unlock, arg);
}

// A scope handle. Borrowed views come from the context; owned ones (NewChild, Retain)
// release their reference on destruction and keep the scope chain alive until then.
class Scope {
 public:
  static Scope Borrow(RillScope* s) { return Scope(s, false); }
  static Scope Own(RillScope* s) { return Scope(s, true); }
  Scope(Scope&& o) noexcept : s_(o.s_), owned_(o.owned_) { o.s_ = nullptr; }
  Scope& operator=(Scope&& o) noexcept {
    if (this != &o) {
      Reset();
      s_ = o.s_;
      owned_ = o.owned_;
      o.s_ = nullptr;
    }
    return *this;
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope() { Reset(); }

  RillScope* handle() const { return s_; }
  Scope NewChild() const {
    RillScope* child = nullptr;
    Check(RILL_HOST_ENTRY(scope_new_child)(s_, &child));
    return Scope(child, true);
  }
  Scope Retain() const { return Scope(RILL_HOST_ENTRY(scope_retain)(s_), true); }
  Variable FindVar(const std::string& name) const {
    return Variable(RILL_HOST_ENTRY(scope_find_var)(s_, name.c_str()));
  }
  Variable Var(const std::string& name) const {
    RillVariable* v = RILL_HOST_ENTRY(scope_var)(s_, name.c_str());
    if (v == nullptr) throw Error("out of memory making variable '" + name + "'", RILL_RESOURCE_EXHAUSTED);
    return Variable(v);
  }

 private:
  Scope(RillScope* s, bool owned) : s_(s), owned_(owned) {}
  void Reset() {
    if (s_ != nullptr && owned_) RILL_HOST_ENTRY(scope_release)(s_);
    s_ = nullptr;
  }
  RillScope* s_;
  bool owned_;
};

// ---- Op instances and kernel contexts ----------------------------------------------------

namespace detail {
template <class T> struct AttrReader;
template <> struct AttrReader<int64_t> {
  static int64_t Read(const RillOpInfo* i, const char* n) {
    int64_t v = 0;
    Check(RILL_HOST_ENTRY(attr_int)(i, n, &v));
    return v;
  }
};
template <> struct AttrReader<int32_t> {
  static int32_t Read(const RillOpInfo* i, const char* n) {
    return static_cast<int32_t>(AttrReader<int64_t>::Read(i, n));
  }
};
template <> struct AttrReader<double> {
  static double Read(const RillOpInfo* i, const char* n) {
    double v = 0;
    Check(RILL_HOST_ENTRY(attr_float)(i, n, &v));
    return v;
  }
};
template <> struct AttrReader<float> {
  static float Read(const RillOpInfo* i, const char* n) { return static_cast<float>(AttrReader<double>::Read(i, n)); }
};
template <> struct AttrReader<bool> {
  static bool Read(const RillOpInfo* i, const char* n) {
    int32_t v = 0;
    Check(RILL_HOST_ENTRY(attr_bool)(i, n, &v));
    return v != 0;
  }
};
template <> struct AttrReader<std::string> {
  static std::string Read(const RillOpInfo* i, const char* n) {
    const char* d = nullptr;
    size_t len = 0;
    Check(RILL_HOST_ENTRY(attr_string)(i, n, &d, &len));
    return std::string(d, len);
  }
};
template <> struct AttrReader<std::vector<int64_t>> {
  static std::vector<int64_t> Read(const RillOpInfo* i, const char* n) {
    const int64_t* d = nullptr;
    size_t c = 0;
    Check(RILL_HOST_ENTRY(attr_ints)(i, n, &d, &c));
    return {d, d + c};
  }
};
template <> struct AttrReader<std::vector<float>> {
  static std::vector<float> Read(const RillOpInfo* i, const char* n) {
    const float* d = nullptr;
    size_t c = 0;
    Check(RILL_HOST_ENTRY(attr_floats)(i, n, &d, &c));
    return {d, d + c};
  }
};
template <> struct AttrReader<std::vector<bool>> {
  static std::vector<bool> Read(const RillOpInfo* i, const char* n) {
    const uint8_t* d = nullptr;
    size_t c = 0;
    Check(RILL_HOST_ENTRY(attr_bools)(i, n, &d, &c));
    return std::vector<bool>(d, d + c);
  }
};
template <> struct AttrReader<std::vector<std::string>> {
  static std::vector<std::string> Read(const RillOpInfo* i, const char* n) {
    size_t c = 0;
    Check(RILL_HOST_ENTRY(attr_strings)(i, n, &c));
    std::vector<std::string> out;
    for (size_t k = 0; k < c; ++k) {
      const char* d = nullptr;
      size_t len = 0;
      Check(RILL_HOST_ENTRY(attr_strings_at)(i, n, k, &d, &len));
      out.emplace_back(d, len);
    }
    return out;
  }
};
}  // namespace detail

// An input or output slot of one op instance, found by name once (OpInfo::InputSlot, in a
// kernel's constructor) and read by handle on every run. A slot the program leaves out
// has no arguments: reading one fails naming the slot.
class Slot {
 public:
  Slot() = default;
  int32_t handle() const { return handle_; }
  const std::string& name() const { return name_; }
  explicit operator bool() const { return handle_ >= 0; }  // the op lists this slot

 private:
  friend class OpInfo;
  Slot(int32_t handle, const char* name) : handle_(handle), name_(name) {}
  int32_t handle_ = -1;
  std::string name_;  // for messages
};

// Names a slot in a call: a Slot found once (a stateful kernel's), or the slot's name,
// found on every call (a plain-function kernel's; a few nanoseconds more per argument).
class SlotRef {
 public:
  SlotRef(const Slot& slot) : handle_(slot.handle()), name_(slot.name().c_str()), resolved_(true) {}  // NOLINT
  SlotRef(const char* name) : name_(name) {}                                                          // NOLINT
  SlotRef(const std::string& name) : name_(name.c_str()) {}                                           // NOLINT
  const char* name() const { return name_; }
  int32_t Input(const RillOpInfo* op) const { return resolved_ ? handle_ : RILL_HOST_ENTRY(op_input_slot)(op, name_); }
  int32_t Output(const RillOpInfo* op) const {
    return resolved_ ? handle_ : RILL_HOST_ENTRY(op_output_slot)(op, name_);
  }
  bool resolved() const { return resolved_; }
  int32_t handle() const { return handle_; }

 private:
  int32_t handle_ = -1;
  const char* name_;
  bool resolved_ = false;
};

// An op instance of a program: its type, arguments and attributes.
class OpInfo {
 public:
  explicit OpInfo(const RillOpInfo* info) : info_(info) {}
  const RillOpInfo* handle() const { return info_; }

  std::string type() const { return RILL_HOST_ENTRY(op_type)(info_); }
  template <class T> T Attr(const char* name) const { return detail::AttrReader<T>::Read(info_, name); }
  int32_t BlockAttr(const char* name) const {
    int32_t v = 0;
    Check(RILL_HOST_ENTRY(attr_block)(info_, name, &v));
    return v;
  }
  std::vector<int32_t> BlocksAttr(const char* name) const {
    const int32_t* data = nullptr;
    size_t count = 0;
    Check(RILL_HOST_ENTRY(attr_blocks)(info_, name, &data, &count));
    return std::vector<int32_t>(data, data + count);
  }
  Slot InputSlot(const char* name) const { return Slot(RILL_HOST_ENTRY(op_input_slot)(info_, name), name); }
  Slot OutputSlot(const char* name) const { return Slot(RILL_HOST_ENTRY(op_output_slot)(info_, name), name); }
  size_t InputCount(SlotRef slot) const { return RILL_HOST_ENTRY(op_input_count)(info_, slot.Input(info_)); }
  size_t OutputCount(SlotRef slot) const { return RILL_HOST_ENTRY(op_output_count)(info_, slot.Output(info_)); }
  std::string InputName(SlotRef slot, size_t i = 0) const {
    return NameOrThrow(RILL_HOST_ENTRY(op_input_name)(info_, slot.Input(info_), i), "input", slot, i);
  }
  std::string OutputName(SlotRef slot, size_t i = 0) const {
    return NameOrThrow(RILL_HOST_ENTRY(op_output_name)(info_, slot.Output(info_), i), "output", slot, i);
  }
  std::vector<std::string> InputNames(SlotRef slot) const {
    std::vector<std::string> out(InputCount(slot));
    for (size_t i = 0; i < out.size(); ++i) out[i] = InputName(slot, i);
    return out;
  }
  std::vector<std::string> OutputNames(SlotRef slot) const {
    std::vector<std::string> out(OutputCount(slot));
    for (size_t i = 0; i < out.size(); ++i) out[i] = OutputName(slot, i);
    return out;
  }
  // The ops of block `block_idx` of this op's program, in order.
  std::vector<OpInfo> BlockOps(int32_t block_idx) const {
    const RillOpInfo* const* ops = nullptr;
    size_t count = 0;
    Check(RILL_HOST_ENTRY(op_block_ops)(info_, block_idx, &ops, &count));
    return std::vector<OpInfo>(ops, ops + count);
  }

 private:
  static std::string NameOrThrow(const char* name, const char* kind, const SlotRef& slot, size_t i) {
    if (name == nullptr) {
      throw Error(std::string("no ") + kind + " " + slot.name() + "[" + std::to_string(i) + "]", RILL_NOT_FOUND);
    }
    return name;
  }
  const RillOpInfo* info_;
};

// One run of a kernel. Arguments are named by slot (SlotRef) and position.
class KernelContext {
 public:
  explicit KernelContext(RillKernelContext* ctx) : ctx_(ctx) {}
  RillKernelContext* handle() const { return ctx_; }

  OpInfo op() const {
    if (op_ == nullptr) op_ = RILL_HOST_ENTRY(ctx_op)(ctx_);
    return OpInfo(op_);
  }
  template <class T> T Attr(const char* name) const { return op().Attr<T>(name); }
  bool HasInput(SlotRef slot) const { return op().InputCount(slot) > 0; }
  bool HasOutput(SlotRef slot) const { return op().OutputCount(slot) > 0; }

  // The variable of an argument; throws naming it when the op has no such argument or no
  // scope holds an input's variable.
  Variable InputVar(SlotRef slot, size_t i = 0) {
    RillVariable* v = RILL_HOST_ENTRY(ctx_input)(ctx_, InputHandle(slot), i);
    if (v == nullptr) Missing("input", slot, i);
    return Variable(v);
  }
  // The same, or a null view when the op has no such argument or no scope holds it yet.
  Variable InputVarOrNull(SlotRef slot, size_t i = 0) {
    return Variable(RILL_HOST_ENTRY(ctx_input)(ctx_, InputHandle(slot), i));
  }
  Variable OutputVar(SlotRef slot, size_t i = 0) {
    RillVariable* v = RILL_HOST_ENTRY(ctx_output)(ctx_, OutputHandle(slot), i);
    if (v == nullptr) Missing("output", slot, i);
    return Variable(v);
  }
  // The input's tensor, described; throws if the variable is missing or holds no tensor value.
  Tensor Input(SlotRef slot, size_t i = 0) {
    Tensor t(nullptr);
    t.info_.struct_size = sizeof(RillTensorInfo);
    const int32_t handle = InputHandle(slot);
    if (handle < 0) Missing("input", slot, i);  // the host knows the slot by handle only
    Check(RILL_HOST_ENTRY(ctx_input_tensor)(ctx_, handle, i, &t.t_, &t.info_));
    t.have_info_ = true;
    return t;
  }
  // The output's tensor, unshaped (an empty variable becomes an empty tensor).
  Tensor Output(SlotRef slot, size_t i = 0) { return OutputVar(slot, i).tensor(); }
  // The output shaped (dtype, dims, device) and described, in one host call.
  Tensor AllocateOutput(SlotRef slot, int32_t dtype, const int64_t* dims, size_t ndim, int32_t device_type = RILL_CPU,
                        int32_t device_id = 0, size_t i = 0) {
    Tensor t(nullptr);
    t.info_.struct_size = sizeof(RillTensorInfo);
    const int32_t handle = OutputHandle(slot);
    if (handle < 0) Missing("output", slot, i);
    Check(RILL_HOST_ENTRY(ctx_output_allocate)(ctx_, handle, i, dtype, dims, ndim, device_type, device_id, &t.t_,
                                               &t.info_));
    t.have_info_ = true;
    return t;
  }
  Tensor AllocateOutput(SlotRef slot, int32_t dtype, const std::vector<int64_t>& dims, int32_t device_type = RILL_CPU,
                        int32_t device_id = 0, size_t i = 0) {
    return AllocateOutput(slot, dtype, dims.data(), dims.size(), device_type, device_id, i);
  }
  // The same on the CPU, typed: the output's memory.
  template <class T> T* AllocateOutput(SlotRef slot, const int64_t* dims, size_t ndim, size_t i = 0) {
    return static_cast<T*>(AllocateOutput(slot, DataTypeOf<T>::value, dims, ndim, RILL_CPU, 0, i).raw_data());
  }
  template <class T> T* AllocateOutput(SlotRef slot, const std::vector<int64_t>& dims, size_t i = 0) {
    return AllocateOutput<T>(slot, dims.data(), dims.size(), i);
  }

  Scope scope() const { return Scope::Borrow(RILL_HOST_ENTRY(ctx_scope)(ctx_)); }
  // The device this kernel runs on; allocate outputs there.
  int32_t device_id() const { return RILL_HOST_ENTRY(ctx_device_id)(ctx_); }

  // Runs block `block_idx` once, inline: in `scope`, or as this op's sub-block (in a new
  // child of the op's scope).
  void RunBlock(int32_t block_idx, const Scope& scope) {
    Check(RILL_HOST_ENTRY(ctx_run_block)(ctx_, block_idx, scope.handle()));
  }
  void RunSubBlock(int32_t block_idx) { Check(RILL_HOST_ENTRY(ctx_run_block)(ctx_, block_idx, nullptr)); }
  // Runs `block_idx` as a loop body, step after step, while the loop goes on: while
  // `condition` holds a true bool scalar, read by the host; when it holds anything else
  // (or is null), while `proceed()` (may throw) returns true. A step reuses the previous
  // step's scope while nothing else holds it.
  template <class F> void RunLoop(int32_t block_idx, const Variable& condition, F&& proceed) {
    auto ask = [](void* arg, int32_t* go_on) {
      return Guard([&] { *go_on = (*static_cast<std::remove_reference_t<F>*>(arg))() ? 1 : 0; });
    };
    Check(RILL_HOST_ENTRY(ctx_run_loop)(ctx_, block_idx, condition.handle(), ask, &proceed));
  }
  // Starts block `block_idx` as a go block: a new task, in a new child of this op's scope
  // holding its own copy of each input argument in `bind` (slot handle and position).
  void Go(int32_t block_idx, const RillArg* bind = nullptr, size_t count = 0) {
    Check(RILL_HOST_ENTRY(ctx_go)(ctx_, block_idx, bind, count));
  }

 private:
  // A slot's handle: a Slot's own, or its name's, looked up (asking for the op only then).
  int32_t InputHandle(const SlotRef& slot) const { return slot.resolved() ? slot.handle() : slot.Input(op().handle()); }
  int32_t OutputHandle(const SlotRef& slot) const {
    return slot.resolved() ? slot.handle() : slot.Output(op().handle());
  }
  // Why an argument's variable is missing: the op lacks it, or no scope holds it.
  [[noreturn]] void Missing(const char* kind, const SlotRef& slot, size_t i) const {
    const bool input = kind[0] == 'i';
    const OpInfo info = op();
    const int32_t handle = input ? slot.Input(info.handle()) : slot.Output(info.handle());
    const char* name = input ? RILL_HOST_ENTRY(op_input_name)(info.handle(), handle, i)
                             : RILL_HOST_ENTRY(op_output_name)(info.handle(), handle, i);
    const std::string arg = std::string(slot.name()) + "[" + std::to_string(i) + "]";
    if (name == nullptr) throw Error("op '" + info.type() + "' has no " + kind + " " + arg, RILL_NOT_FOUND);
    throw Error(std::string(kind) + " " + arg + " ('" + name + "') does not exist in any scope", RILL_NOT_FOUND);
  }
  RillKernelContext* ctx_;
  mutable const RillOpInfo* op_ = nullptr;
};

// ---- Schemas and registration --------------------------------------------------------------

namespace detail {
inline std::string DefaultText(int64_t v) { return std::to_string(v); }
inline std::string DefaultText(int v) { return std::to_string(v); }
inline std::string DefaultText(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}
inline std::string DefaultText(bool v) { return v ? "true" : "false"; }
inline std::string DefaultText(const char* v) { return v; }
inline std::string DefaultText(const std::string& v) { return v; }
template <class T> std::string DefaultText(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    if constexpr (std::is_same_v<T, std::string>) {
      out += "\"" + v[i] + "\"";
    } else {
      out += DefaultText(v[i]);
    }
  }
  return out + "]";
}
template <class T> constexpr RillAttrType AttrTypeOf() {
  if constexpr (std::is_same_v<T, bool>) return RILL_ATTR_BOOLEAN;
  else if constexpr (std::is_integral_v<T>) return RILL_ATTR_INT;
  else if constexpr (std::is_floating_point_v<T>) return RILL_ATTR_FLOAT;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return RILL_ATTR_STRINGS;
  else if constexpr (std::is_same_v<T, std::vector<bool>>) return RILL_ATTR_BOOLEANS;
  else if constexpr (std::is_same_v<T, std::vector<float>> || std::is_same_v<T, std::vector<double>>)
    return RILL_ATTR_FLOATS;
  else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<int>>)
    return RILL_ATTR_INTS;
  else return RILL_ATTR_STRING;
}
}  // namespace detail

// An op's schema, built fluently and handed to Registrar::Op.
class OpSchema {
 public:
  explicit OpSchema(std::string type) : type_(std::move(type)) {}

  OpSchema& Doc(std::string doc) {
    doc_ = std::move(doc);
    return *this;
  }
  OpSchema& Input(std::string name, std::string doc = "", uint32_t flags = 0) {
    inputs_.push_back({std::move(name), flags, std::move(doc)});
    return *this;
  }
  OpSchema& Output(std::string name, std::string doc = "", uint32_t flags = 0) {
    outputs_.push_back({std::move(name), flags, std::move(doc)});
    return *this;
  }
  // An attribute with a default; its type follows the default's C++ type.
  template <class T> OpSchema& Attr(std::string name, const T& default_value, std::string doc = "") {
    attrs_.push_back(
        {std::move(name), detail::AttrTypeOf<T>(), 0, true, detail::DefaultText(default_value), std::move(doc)});
    return *this;
  }
  OpSchema& Attr(std::string name, const char* default_value, std::string doc = "") {
    attrs_.push_back({std::move(name), RILL_ATTR_STRING, 0, true, default_value, std::move(doc)});
    return *this;
  }
  // An attribute of `type` whose default is the type's zero value.
  OpSchema& OptionalAttr(std::string name, RillAttrType type, std::string doc = "") {
    attrs_.push_back({std::move(name), type, 0, false, "", std::move(doc)});
    return *this;
  }
  OpSchema& RequiredAttr(std::string name, RillAttrType type, std::string doc = "") {
    attrs_.push_back({std::move(name), type, RILL_ATTR_REQUIRED, false, "", std::move(doc)});
    return *this;
  }
  // The kernel's dtype key: an input slot's first tensor, or "attr:NAME".
  OpSchema& KernelDtypeFrom(std::string source) {
    dtype_source_ = std::move(source);
    return *this;
  }

  // Declares the gradient (see RillOpSchema): the grad op's type, the forward slots it
  // reads ("X,Out@GRAD"), and the forward input slots it gives gradients for ("X").
  OpSchema& Grad(std::string grad_op_type, std::string inputs, std::string outputs) {
    grad_op_ = std::move(grad_op_type);
    grad_inputs_ = std::move(inputs);
    grad_outputs_ = std::move(outputs);
    return *this;
  }

  // The schema of the declared grad op: the slots Grad() names (forward slots keep their
  // flags; "S@GRAD" inputs mirror output S; every "S@GRAD" output is optional, as only the
  // gradients needed are asked for) and this op's attributes. Kernels are keyed on the
  // dtype of the first grad input.
  OpSchema MakeGradSchema() const {
    if (grad_op_.empty()) throw Error("op '" + type_ + "' declares no gradient");
    OpSchema g(grad_op_);
    g.Doc("Gradient of " + type_ + ".");
    for (const std::string& name : SplitList(grad_inputs_)) {
      const bool is_grad = name.size() > 5 && name.compare(name.size() - 5, 5, "@GRAD") == 0;
      const Slot* fwd = Find(is_grad ? name.substr(0, name.size() - 5) : name);
      if (fwd == nullptr) throw Error("op '" + type_ + "': gradient input '" + name + "' names no slot");
      g.Input(name, is_grad ? "gradient of " + fwd->name : fwd->doc, fwd->flags);
    }
    for (const std::string& name : SplitList(grad_outputs_)) {
      const Slot* fwd = Find(name);
      if (fwd == nullptr) throw Error("op '" + type_ + "': gradient output '" + name + "' names no input slot");
      g.Output(name + "@GRAD", "gradient of " + name, fwd->flags | RILL_SLOT_OPTIONAL);
    }
    g.attrs_ = attrs_;
    g.dtype_source_ = SplitList(grad_inputs_).front();
    return g;
  }

  // Fills `out` with views into this object, valid while it lives unchanged.
  RillOpSchema View(std::vector<RillSlotDef>& in, std::vector<RillSlotDef>& out,
                    std::vector<RillAttrDef>& attrs) const {
    for (const auto& s : inputs_) in.push_back({s.name.c_str(), s.flags, s.doc.c_str()});
    for (const auto& s : outputs_) out.push_back({s.name.c_str(), s.flags, s.doc.c_str()});
    for (const auto& a : attrs_) {
      attrs.push_back(
          {a.name.c_str(), a.type, a.flags, a.has_default ? a.default_value.c_str() : nullptr, a.doc.c_str()});
    }
    RillOpSchema s{};
    s.struct_size = sizeof(RillOpSchema);
    s.type = type_.c_str();
    s.doc = doc_.c_str();
    s.inputs = in.data();
    s.num_inputs = in.size();
    s.outputs = out.data();
    s.num_outputs = out.size();
    s.attrs = attrs.data();
    s.num_attrs = attrs.size();
    s.kernel_dtype_source = dtype_source_.empty() ? nullptr : dtype_source_.c_str();
    s.grad_op_type = grad_op_.empty() ? nullptr : grad_op_.c_str();
    s.grad_inputs = grad_op_.empty() ? nullptr : grad_inputs_.c_str();
    s.grad_outputs = grad_op_.empty() ? nullptr : grad_outputs_.c_str();
    return s;
  }

 private:
  struct Slot {
    std::string name;
    uint32_t flags;
    std::string doc;
  };
  struct AttrSpec {
    std::string name;
    int32_t type;
    uint32_t flags;
    bool has_default;
    std::string default_value;
    std::string doc;
  };
  const Slot* Find(const std::string& name) const {
    for (const auto& s : inputs_)
      if (s.name == name) return &s;
    for (const auto& s : outputs_)
      if (s.name == name) return &s;
    return nullptr;
  }

  std::string type_, doc_, dtype_source_, grad_op_, grad_inputs_, grad_outputs_;
  std::vector<Slot> inputs_, outputs_;
  std::vector<AttrSpec> attrs_;
};

using KernelFn = void (*)(KernelContext&);
// A plugin's `rill` subcommand (Registrar::Command): the arguments after its name.
using CommandFn = void (*)(const std::vector<std::string>& args);

namespace detail {
inline RillStatus* CallCommand(void* user_data, int32_t argc, const char* const* argv) {
  auto fn = reinterpret_cast<CommandFn>(user_data);  // a function pointer, as in CallFunctionKernel
  return Guard([&] { fn(std::vector<std::string>(argv, argv + argc)); });
}
inline RillStatus* CallFunctionKernel(void* state, RillKernelContext* ctx) {
  // POSIX guarantees function pointers round-trip through void* (dlsym relies on it).
  auto fn = reinterpret_cast<KernelFn>(state);
  return Guard([&] {
    KernelContext c(ctx);
    fn(c);
  });
}
template <class K> RillStatus* CreateClassKernel(void*, const RillOpInfo* info, void** state) {
  return Guard([&] { *state = new K(OpInfo(info)); });
}
template <class K> RillStatus* CallClassKernel(void* state, RillKernelContext* ctx) {
  return Guard([&] {
    KernelContext c(ctx);
    static_cast<K*>(state)->Compute(c);
  });
}
template <class K> void DestroyClassKernel(void* state) { delete static_cast<K*>(state); }
template <class K, class = void> struct HasScalarPath : std::false_type {};
template <class K>
struct HasScalarPath<K, std::void_t<decltype(std::declval<const K&>().Scalar(
                            std::declval<const RillScalar*>(), std::declval<RillScalar*>()))>> : std::true_type {};
template <class K> int32_t CallClassScalar(void* state, const RillScalar* in, RillScalar* out) {
  try {
    return static_cast<const K*>(state)->Scalar(in, out) ? 1 : 0;
  } catch (...) {  // declined: Compute runs and gives the error
    return 0;
  }
}
template <class T> void DestroyCustom(void* value) { delete static_cast<T*>(value); }
template <class T> void* CopyCustom(const void* value) { return new T(*static_cast<const T*>(value)); }
}  // namespace detail

// Registers what a plugin provides; handed to the plugin's init function.
class Registrar {
 public:
  explicit Registrar(RillRegistrar* reg) : reg_(reg) {}

  void Op(const OpSchema& schema) {
    std::vector<RillSlotDef> in, out;
    std::vector<RillAttrDef> attrs;
    const RillOpSchema view = schema.View(in, out, attrs);
    Check(RILL_HOST_ENTRY(register_op)(reg_, &view));
  }

  // A stateless kernel: a plain function (or capture-less lambda).
  void Kernel(const char* op_type, RillDeviceType device, int32_t dtype, KernelFn fn) {
    RillKernelDef def{};
    def.struct_size = sizeof(def);
    def.op_type = op_type;
    def.device_type = device;
    def.dtype = dtype;
    def.user_data = reinterpret_cast<void*>(fn);
    def.compute = &detail::CallFunctionKernel;
    Check(RILL_HOST_ENTRY(register_kernel)(reg_, &def));
  }

  // A kernel with per-op state: K(const OpInfo&) runs once per op instance, then
  // K::Compute(KernelContext&) on every run. A K that also has
  //     bool Scalar(const RillScalar* in, RillScalar* out) const
  // offers a scalar path (abi.h, RillKernelScalarFn): when every value the op reads and
  // writes is a scalar, the host may call it instead of Compute, with the op's inputs and
  // outputs in the order its schema declares them (ReadScalar, WriteScalar). It returns
  // false (or throws) to decline, and must write what Compute would for those values.
  template <class K> void StatefulKernel(const char* op_type, RillDeviceType device, int32_t dtype) {
    RillKernelDef def{};
    def.struct_size = sizeof(def);
    def.op_type = op_type;
    def.device_type = device;
    def.dtype = dtype;
    def.create = &detail::CreateClassKernel<K>;
    def.compute = &detail::CallClassKernel<K>;
    def.destroy = &detail::DestroyClassKernel<K>;
    if constexpr (detail::HasScalarPath<K>::value) def.scalar = &detail::CallClassScalar<K>;
    Check(RILL_HOST_ENTRY(register_kernel)(reg_, &def));
  }

  // A device type the plugin drives (see RillDeviceDef); struct_size is filled in.
  void Device(RillDeviceDef def) {
    def.struct_size = sizeof(def);
    Check(RILL_HOST_ENTRY(register_device)(reg_, &def));
  }

  // A variable type of the plugin's own, holding T* values (deleted by the host's call to
  // the generated destroy). `describe` may be null. With `copyable`, the host copies a
  // value (`assign`) through T's copy constructor.
  template <class T>
  void VarType(const char* name, void (*describe)(const void*, char*, size_t) = nullptr, bool copyable = false) {
    RillVarTypeDef def{};
    def.struct_size = sizeof(def);
    def.name = name;
    def.destroy = &detail::DestroyCustom<T>;
    def.describe = describe;
    def.copy = copyable ? &detail::CopyCustom<T> : nullptr;
    VarType(def);
  }
  // The same with callbacks of the plugin's own (a reference-counted value, whose copy
  // counts one more holder instead of allocating); struct_size is filled in.
  void VarType(RillVarTypeDef def) {
    def.struct_size = sizeof(def);
    Check(RILL_HOST_ENTRY(register_var_type)(reg_, &def));
  }

  // A subcommand of the `rill` tool (ABI version 2; abi.h, RillCommandDef): `rill NAME
  // ARG...` calls `fn` with the arguments after NAME. `fn` prints to stdout and throws
  // Error to fail: with RILL_INVALID_ARGUMENT for bad usage (rill exits 2), another code
  // for a failure (exit 1). A version 1 host runs no plugin commands: there it registers
  // nothing and returns false, so a plugin that needs only version 1 may call it.
  bool Command(const char* name, const char* summary, const char* usage, CommandFn fn) {
    if (!RILL_HOST_SERVES(register_command)) return false;
    RillCommandDef def{};
    def.struct_size = sizeof(def);
    def.name = name;
    def.summary = summary;
    def.usage = usage;
    def.user_data = reinterpret_cast<void*>(fn);
    def.run = &detail::CallCommand;
    Check(Host().register_command(reg_, &def));
    return true;
  }

 private:
  RillRegistrar* reg_;
};

namespace detail {
template <void (*InitFn)(Registrar&)> RillStatus* PluginInit(const RillHostApi* host, RillRegistrar* reg) {
  if (host->abi_version < RILL_PLUGIN_NEEDS_ABI) {
    return host->status_create(RILL_FAILED_PRECONDITION,
                               ("plugin needs a host serving ABI version " + std::to_string(RILL_PLUGIN_NEEDS_ABI) +
                                "; this host serves " + std::to_string(host->abi_version))
                                   .c_str());
  }
  HostSlot() = host;
  return Guard([&] {
    Registrar r(reg);
    InitFn(r);
  });
}
}  // namespace detail

}  // RILL_SDK_NAMESPACE(sdk_v1)
}  // namespace rill

// Defines `const RillPlugin* SYMBOL(void)` for a plugin whose init is
// `void INIT(rill::Registrar&)`. Plugins use RILL_PLUGIN; the host's built-in ops use this
// form with a private symbol.
#define RILL_PLUGIN_ENTRY(SYMBOL, NAME, VERSION, INIT)                                          \
  const RillPlugin* SYMBOL(void) {                                                              \
    static const RillPlugin plugin = {sizeof(RillPlugin), RILL_PLUGIN_NEEDS_ABI, NAME, VERSION, \
                                      &::rill::detail::PluginInit<INIT>};                       \
    return &plugin;                                                                             \
  }

// Exports the plugin's single entry point, RillGetPlugin.
#define RILL_PLUGIN(NAME, VERSION, INIT) extern "C" RILL_EXPORT RILL_PLUGIN_ENTRY(RillGetPlugin, NAME, VERSION, INIT)

#endif  // RILL_SDK_HPP_
