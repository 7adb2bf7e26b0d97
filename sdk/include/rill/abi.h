/* rill/abi.h — the one contract between the Rill host and its op-kernel plugins.
 *
 * A plugin is a shared library that exports exactly one C function,
 *
 *     const RillPlugin* RillGetPlugin(void);
 *
 * whose signature never changes. The host loads the library (RTLD_LOCAL, never unloaded),
 * calls RillGetPlugin, refuses the plugin if `abi_version` is newer than its own, and
 * otherwise calls `init` with its function table (RillHostApi) and a registrar. `init`
 * registers op schemas, kernels and variable types through the table; nothing is
 * registered by static initializers.
 *
 * Rules this header keeps (docs/DESIGN.md has the design around it):
 *  - Only C crosses: fixed-width integers, UTF-8 `const char*`, pointer + length, opaque
 *    handles. No exceptions cross; every call that can fail returns a RillStatus*.
 *  - RillStatus* NULL means success. A non-NULL status is owned by whoever receives it:
 *    the plugin releases statuses the host returns to it (status_release) or passes them
 *    back up as its own result; the host releases statuses the plugin returns.
 *  - RillHostApi is append-only. The offsets of every field of a shipped version are
 *    pinned by static_asserts in core/abi/host_api.cc, and every entry's version, offset
 *    and prototype is recorded in sdk/abi_manifest.txt, which a test compares with this
 *    header. A plugin built against version N may read only the fields of version N; the
 *    host serves every version up to its own.
 *  - Structs the plugin fills start with `struct_size`; the host reads a field only if
 *    `struct_size` covers it, so they too may grow at the end.
 *  - Whoever allocates frees: tensors are allocated by the host (64-byte aligned), kernel
 *    state and custom variable values are destroyed by the plugin's own callbacks.
 *  - Enum values are pinned and never reused. Data types are framework.proto's numbers.
 *  - Borrowed pointers (handles passed into a callback, strings returned by getters) are
 *    valid until that callback returns unless documented otherwise.
 */
#ifndef RILL_ABI_H_
#define RILL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header declares. Version 1 is the first shipped version; version 2
 * adds tasks (go blocks, park/unpark), plugin-owned variables and copyable custom types;
 * version 3 SelectedRows; version 4 sub-block scopes that are reused; version 5 a device's
 * page-locked host memory (RillDeviceDef.allocate_host/free_host); version 6 a kernel's
 * arguments in fewer calls (ctx_input_described, ctx_output_allocate); version 7 the ops of
 * a block, read by an op that runs it (op_block_ops); version 8 arguments and custom values
 * read by index and handle instead of by name (op_input_slot, ctx_input_at, var_custom);
 * version 9 a variable's scalar read and written in one call (var_scalar, var_set_scalar);
 * version 10 a sub-block run by the host in one call (ctx_run_sub_block); version 11 a
 * kernel's arguments read from its block run's frame (op_input_index, ctx_frame); version
 * 12 a go block started with its bound variables in one call (ctx_go); version 13 small
 * allocations from the host's per-thread pages (mem_alloc, mem_free) and a custom value set
 * by its type's handle (var_set_custom_typed); version 14 a loop run by the host
 * (ctx_run_loop). */
#define RILL_ABI_VERSION 14u

/* Name of the single exported entry point. */
#define RILL_ENTRY_POINT_NAME "RillGetPlugin"

#if defined(_WIN32)
#define RILL_EXPORT __declspec(dllexport)
#else
#define RILL_EXPORT __attribute__((visibility("default")))
#endif

/* Gradient variables are "<var>@GRAD". In a list-valued gradient output whose positions
 * must line up with the forward slot, a variable needing no gradient is "@EMPTY@": kernels
 * skip it. */
#define RILL_GRAD_SUFFIX "@GRAD"
#define RILL_EMPTY_VAR_NAME "@EMPTY@"

/* ---- Status ------------------------------------------------------------------------ */

typedef enum RillStatusCode {
  RILL_OK = 0,
  RILL_INVALID_ARGUMENT = 1, /* bad input: wrong dtype, shape, attribute value */
  RILL_NOT_FOUND = 2,        /* a variable, slot, attribute or op that does not exist */
  RILL_FAILED_PRECONDITION = 3, /* state does not allow it: send on closed channel */
  RILL_OUT_OF_RANGE = 4,
  RILL_UNIMPLEMENTED = 5,    /* no kernel for this place/dtype */
  RILL_INTERNAL = 6,         /* a bug, or an exception of unknown kind */
  RILL_UNAVAILABLE = 7,      /* a peer is gone */
  RILL_DEADLINE_EXCEEDED = 8,
  RILL_CANCELLED = 9,
  RILL_ALREADY_EXISTS = 10,
  RILL_RESOURCE_EXHAUSTED = 11
} RillStatusCode;

typedef struct RillStatus RillStatus; /* opaque, host-allocated */

/* ---- Data types, places, attribute types (pinned numbers) -------------------------- */

/* framework.proto VarType.Type numbers for tensor element types. */
typedef enum RillDataType {
  RILL_BOOL = 0,
  RILL_INT16 = 1,
  RILL_INT32 = 2,
  RILL_INT64 = 3,
  RILL_FP16 = 4,
  RILL_FP32 = 5,
  RILL_FP64 = 6,
  RILL_SIZE_T = 19,
  RILL_UINT8 = 20,
  RILL_INT8 = 21,
  /* Kernel registration only: the kernel accepts every dtype. */
  RILL_ANY_DTYPE = -1
} RillDataType;

/* Device types. 2 to RILL_MAX_DEVICE_TYPES - 1 are free for devices plugins define
 * (RillDeviceDef); kernels may be registered for any of them. */
typedef enum RillDeviceType { RILL_CPU = 0, RILL_CUDA = 1 } RillDeviceType;
#define RILL_MAX_DEVICE_TYPES 8

/* framework.proto AttrType numbers. */
typedef enum RillAttrType {
  RILL_ATTR_INT = 0,
  RILL_ATTR_FLOAT = 1,
  RILL_ATTR_STRING = 2,
  RILL_ATTR_INTS = 3,
  RILL_ATTR_FLOATS = 4,
  RILL_ATTR_STRINGS = 5,
  RILL_ATTR_BOOLEAN = 6,
  RILL_ATTR_BOOLEANS = 7,
  RILL_ATTR_BLOCK = 8,
  RILL_ATTR_LONG = 9,
  RILL_ATTR_BLOCKS = 10
} RillAttrType;

typedef enum RillLogLevel {
  RILL_LOG_TRACE = 0,
  RILL_LOG_DEBUG = 1,
  RILL_LOG_INFO = 2,
  RILL_LOG_WARN = 3,
  RILL_LOG_ERROR = 4
} RillLogLevel;

/* ---- Opaque handles ------------------------------------------------------------------ */

typedef struct RillRegistrar RillRegistrar;         /* valid during init only */
typedef struct RillOpInfo RillOpInfo;               /* one op of a program: attrs, args */
typedef struct RillKernelContext RillKernelContext; /* one kernel invocation */
typedef struct RillVariable RillVariable;           /* a variable in a scope */
typedef struct RillTensor RillTensor;               /* a (LoD)tensor held by a variable */
typedef struct RillScope RillScope;                 /* a scope; owned handles are released */
typedef struct RillTask RillTask; /* v2: a task (or a thread outside the scheduler) to wake */
typedef struct RillVarType RillVarType; /* v8: a registered variable type; lives as long as the process */

/* A tensor's description in one call (tensor_info). The caller sets `struct_size` to the
 * size it was compiled with; the host fills only the fields that size covers. `dims` and
 * `data` stay valid until the tensor is next allocated or its variable changes. */
typedef struct RillTensorInfo {
  uint32_t struct_size;
  int32_t dtype; /* -1 if never allocated */
  int32_t device_type;
  int32_t device_id;
  size_t ndim;
  const int64_t* dims;
  int64_t numel;
  void* data; /* NULL if never allocated */
} RillTensorInfo;

/* ---- What a plugin declares ---------------------------------------------------------- */

/* Slot flags. */
#define RILL_SLOT_OPTIONAL 1u   /* the slot may be absent or empty */
#define RILL_SLOT_DUPLICABLE 2u /* the slot may hold more than one variable */

typedef struct RillSlotDef {
  const char* name;
  uint32_t flags;
  const char* doc; /* may be NULL */
} RillSlotDef;

/* Attribute flags. */
#define RILL_ATTR_REQUIRED 1u /* a program must set it; `default_value` is ignored */

typedef struct RillAttrDef {
  const char* name;
  int32_t type; /* RillAttrType */
  uint32_t flags;
  /* Default in text form, used when a program omits the attribute: "0", "-1.5", "true",
   * "abc" (STRING: taken verbatim), "[1, 2]" or "[]" for list types ("[\"a\", \"b\"]"
   * for STRINGS). NULL with no RILL_ATTR_REQUIRED flag means the type's zero value. */
  const char* default_value;
  const char* doc; /* may be NULL */
} RillAttrDef;

typedef struct RillOpSchema {
  uint32_t struct_size; /* sizeof(RillOpSchema) as the plugin was compiled */
  const char* type;     /* op type, e.g. "elementwise_add" */
  const char* doc;
  const RillSlotDef* inputs;
  size_t num_inputs;
  const RillSlotDef* outputs;
  size_t num_outputs;
  const RillAttrDef* attrs;
  size_t num_attrs;
  /* Where the kernel's dtype key comes from: the name of an input slot (its first
   * variable's tensor dtype), "attr:NAME" (an INT attribute holding a dtype number), or
   * NULL: the op has one kernel per place registered with RILL_ANY_DTYPE. */
  const char* kernel_dtype_source;
  /* The gradient, built by the host's backward pass (Fluid's default grad-op maker). NULL
   * grad_op_type: the op is not differentiable. Otherwise, for each op on the path from
   * the parameters to the loss, the pass appends an op of type grad_op_type with
   *  - inputs: the slots listed in grad_inputs (comma-separated). A forward input or output
   *    slot keeps its name and variables; "S@GRAD" names the gradient of forward output
   *    slot S, holding "v@GRAD" for each variable v of S;
   *  - outputs: "S@GRAD" for each forward input slot S listed in grad_outputs, holding
   *    "v@GRAD" for the variables of S that need a gradient (the slot is absent if none);
   *  - the forward op's attributes.
   * The grad op is an ordinary op: register its schema and kernels like any other. */
  const char* grad_op_type;
  const char* grad_inputs;
  const char* grad_outputs;
} RillOpSchema;

/* Kernel callbacks. `user_data` is the pointer given at registration.
 * create: called once per op instance when the kernel is first chosen; may be NULL, in
 *         which case the kernel's state is `user_data` itself.
 * compute: called for every run of the op.
 * destroy: frees what create made; may be NULL. */
typedef RillStatus* (*RillKernelCreateFn)(void* user_data, const RillOpInfo* info,
                                          void** state_out);
typedef RillStatus* (*RillKernelComputeFn)(void* state, RillKernelContext* ctx);
typedef void (*RillKernelDestroyFn)(void* state);

/* A scalar: the value of a one-element CPU tensor of shape [1] without LoD, of a data
 * type of at most 8 bytes. `bits` holds its bytes in the first DataTypeSize(dtype) bytes
 * of the uint64_t (the rest zero); `dtype` RILL_NO_SCALAR means no value. */
#define RILL_NO_SCALAR (-1)
typedef struct RillScalar {
  int32_t dtype;
  uint64_t bits;
} RillScalar;

/* A kernel's work on scalars: a pure function the host may call instead of `compute`,
 * with no kernel context, when every value the op reads and writes is a scalar (a loop's
 * counter and condition, a running sum, a constant). Any kernel may offer one; it is how a
 * small op runs at the speed of a few loads and a store.
 *
 * The host calls it for a run of the op only when the kernel chosen for that run executes
 * on the CPU, every input and output slot the op's schema declares holds at most one
 * variable, the schema declares at most RILL_SCALAR_MAX_SLOTS of each, every input
 * variable present holds a scalar, and every output variable present is empty, holds a
 * tensor not yet allocated (without LoD) or holds a scalar.
 *  - in:  one RillScalar per input slot of the schema, in the schema's order; a slot the
 *         op leaves empty reads as RILL_NO_SCALAR.
 *  - out: one RillScalar per output slot of the schema, in the schema's order, each
 *         RILL_NO_SCALAR on entry. The function sets those it writes.
 * It returns 1 when it computed the op: the host then makes each output variable present
 * whose entry it set hold that scalar (as var_set_scalar does), after all inputs were
 * read, so an output may be an input's variable, as long as it keeps that input's data
 * type: an entry that would retype a variable the op also reads sends the op to `compute`
 * instead, with nothing written (a tensor path writes its output's memory before it has
 * read all its inputs, and so refuses that; the two paths never disagree). It returns 0 to
 * decline, with nothing
 * done: the host then calls `compute`, which gives the op's result or its error. So the
 * function never fails: it declines whatever it does not handle. It must leave what
 * `compute` would leave for the same values, must not block, and must not call the host.
 * `state` is the kernel's state, as `compute` gets it. */
#define RILL_SCALAR_MAX_SLOTS 8
typedef int32_t (*RillKernelScalarFn)(void* state, const RillScalar* in, RillScalar* out);

typedef struct RillKernelDef {
  uint32_t struct_size;
  const char* op_type;
  int32_t device_type; /* RillDeviceType */
  int32_t dtype;       /* RillDataType, or RILL_ANY_DTYPE */
  void* user_data;
  RillKernelCreateFn create;
  RillKernelComputeFn compute;
  RillKernelDestroyFn destroy;
  /* Optional (NULL: none); read only when struct_size covers it, so a plugin built
   * before it was added still loads. See RillKernelScalarFn. */
  RillKernelScalarFn scalar;
} RillKernelDef;

/* A variable type of the plugin's own (a channel is one). The host holds values of it in
 * variables as opaque pointers and calls `destroy` when the variable goes away. */
typedef struct RillVarTypeDef {
  uint32_t struct_size;
  const char* name; /* unique across plugins, e.g. "csp.channel" */
  void (*destroy)(void* value);
  /* Writes a one-line human description (NUL-terminated, truncated to `cap`) for
   * printing; may be NULL. */
  void (*describe)(const void* value, char* buf, size_t cap);
  /* v2. Returns a new value equal to `value` for the host's variable copy (`assign`); a
   * reference type (a channel) returns a new reference to the same object. NULL: values
   * of this type cannot be copied, only moved. */
  void* (*copy)(const void* value);
} RillVarTypeDef;

/* A device type a plugin drives (CUDA, say): how the host counts, allocates and copies
 * its memory. The host allocates tensors on the device through it, moves a tensor to the
 * device a kernel runs on, and copies results back for printing and saving. */
typedef enum RillCopyKind {
  RILL_COPY_HOST_TO_DEVICE = 0,
  RILL_COPY_DEVICE_TO_HOST = 1,
  RILL_COPY_DEVICE_TO_DEVICE = 2
} RillCopyKind;

typedef struct RillDeviceDef {
  uint32_t struct_size;
  int32_t device_type; /* RillDeviceType; RILL_CPU cannot be registered */
  const char* name;    /* "CUDA" */
  /* Devices usable now; 0 when the driver finds none. Must not fail. */
  int32_t (*device_count)(void);
  RillStatus* (*allocate)(int32_t device_id, size_t bytes, void** out);
  void (*free)(int32_t device_id, void* ptr);
  /* Copies `bytes`; returns when the copy is complete. */
  RillStatus* (*copy)(int32_t device_id, void* dst, const void* src, size_t bytes, int32_t kind);
  /* v5, optional (both NULL or both set). Host memory, usable by the CPU like any other,
   * that `copy` moves at the device's full speed, from every device of this type: CUDA's
   * page-locked memory (cudaHostAlloc with cudaHostAllocPortable). The host stages
   * transfers through it: a tensor moved off the device for a CPU kernel, and a CPU tensor
   * written over one that lived on the device, go in it, so a transport sends from and
   * receives into it. Getting it is costly, so the host caches it and calls free_host
   * rarely. Blocks must be 64-byte aligned (the host gives back any that are not). A
   * failing allocate_host is not an error: the host uses ordinary memory. */
  RillStatus* (*allocate_host)(size_t bytes, void** out);
  void (*free_host)(void* ptr);
} RillDeviceDef;

/* ---- The host's function table ------------------------------------------------------- */

typedef struct RillHostApi {
  /* ===== Version 1 ===== */
  uint32_t abi_version; /* the host's own RILL_ABI_VERSION */
  uint32_t struct_size; /* sizeof(RillHostApi) in the host */

  /* Status. `message` is copied. */
  RillStatus* (*status_create)(int32_t code, const char* message);
  int32_t (*status_code)(const RillStatus* status);
  const char* (*status_message)(const RillStatus* status); /* valid until released */
  void (*status_release)(RillStatus* status);

  /* Logging through the host's logger. */
  void (*log)(int32_t level, const char* message);

  /* Registration, during init only. Everything passed is copied. */
  RillStatus* (*register_op)(RillRegistrar* reg, const RillOpSchema* schema);
  RillStatus* (*register_kernel)(RillRegistrar* reg, const RillKernelDef* kernel);
  RillStatus* (*register_var_type)(RillRegistrar* reg, const RillVarTypeDef* type);
  RillStatus* (*register_device)(RillRegistrar* reg, const RillDeviceDef* device);

  /* Op instance: type, arguments and attributes. Attributes a program omits read as the
   * schema's default. Getters fail with RILL_NOT_FOUND for an attribute the schema does
   * not declare and RILL_INVALID_ARGUMENT for one of another type. Arrays and strings
   * returned are owned by the host and live as long as the op instance. */
  const char* (*op_type)(const RillOpInfo* info);
  size_t (*op_input_count)(const RillOpInfo* info, const char* slot);
  const char* (*op_input_name)(const RillOpInfo* info, const char* slot, size_t i);
  size_t (*op_output_count)(const RillOpInfo* info, const char* slot);
  const char* (*op_output_name)(const RillOpInfo* info, const char* slot, size_t i);
  RillStatus* (*attr_int)(const RillOpInfo* info, const char* name, int64_t* out);
  RillStatus* (*attr_float)(const RillOpInfo* info, const char* name, double* out);
  RillStatus* (*attr_bool)(const RillOpInfo* info, const char* name, int32_t* out);
  RillStatus* (*attr_string)(const RillOpInfo* info, const char* name, const char** data,
                             size_t* len);
  RillStatus* (*attr_ints)(const RillOpInfo* info, const char* name, const int64_t** data,
                           size_t* count);
  RillStatus* (*attr_floats)(const RillOpInfo* info, const char* name, const float** data,
                             size_t* count);
  RillStatus* (*attr_bools)(const RillOpInfo* info, const char* name, const uint8_t** data,
                            size_t* count);
  RillStatus* (*attr_strings)(const RillOpInfo* info, const char* name, size_t* count);
  RillStatus* (*attr_strings_at)(const RillOpInfo* info, const char* name, size_t i,
                                 const char** data, size_t* len);
  /* BLOCK and BLOCKS attributes: block indices in the op's program. */
  RillStatus* (*attr_block)(const RillOpInfo* info, const char* name, int32_t* out);
  RillStatus* (*attr_blocks)(const RillOpInfo* info, const char* name, const int32_t** data,
                             size_t* count);

  /* Kernel context. Variables of a slot, in program order; NULL past the end. An output
   * variable that no scope held yet was created in the op's scope before compute. */
  const RillOpInfo* (*ctx_op)(const RillKernelContext* ctx);
  RillVariable* (*ctx_input)(RillKernelContext* ctx, const char* slot, size_t i);
  RillVariable* (*ctx_output)(RillKernelContext* ctx, const char* slot, size_t i);
  /* The tensor of input `slot`[i] in one call: fails with RILL_NOT_FOUND if there is no
   * such argument or variable, and RILL_FAILED_PRECONDITION if it holds no tensor yet. */
  RillStatus* (*ctx_input_tensor)(RillKernelContext* ctx, const char* slot, size_t i,
                                  RillTensor** out);
  /* The tensor of output `slot`[i]; an empty variable becomes an empty tensor. */
  RillStatus* (*ctx_output_tensor)(RillKernelContext* ctx, const char* slot, size_t i,
                                   RillTensor** out);
  RillScope* (*ctx_scope)(RillKernelContext* ctx); /* borrowed: the op's scope */
  /* The id of the device this kernel runs on (0 for CPU kernels); a kernel allocates its
   * outputs there. Its inputs have been moved there by the host. */
  int32_t (*ctx_device_id)(const RillKernelContext* ctx);
  /* Runs block `block_idx` of the op's program in `scope`, inline on this thread. */
  RillStatus* (*ctx_run_block)(RillKernelContext* ctx, int32_t block_idx, RillScope* scope);

  /* Variables. A variable holds nothing, a LoD tensor, selected rows or a custom type. */
  int32_t (*var_is_initialized)(const RillVariable* var);
  /* The variable's tensor; for an empty variable, a new empty LoD tensor. Fails with
   * RILL_INVALID_ARGUMENT if it holds another kind of value. */
  RillStatus* (*var_tensor)(RillVariable* var, RillTensor** out);
  /* Custom values: `type_name` must be a registered RillVarTypeDef. set_custom takes
   * ownership of `value` (destroying what the variable held before); get_custom fails with
   * RILL_INVALID_ARGUMENT if the variable holds something else. */
  RillStatus* (*var_set_custom)(RillVariable* var, const char* type_name, void* value);
  RillStatus* (*var_get_custom)(const RillVariable* var, const char* type_name,
                                void** value);
  /* Moves or copies the whole value of `src` into `dst` (tensors: copy = deep copy). */
  RillStatus* (*var_move)(RillVariable* dst, RillVariable* src);
  RillStatus* (*var_copy)(RillVariable* dst, const RillVariable* src);
  /* A one-line description of the value: "fp32[2, 3] {1, 2, ...}". Copied into buf. */
  void (*var_describe)(const RillVariable* var, char* buf, size_t cap);

  /* Tensors. tensor_info gives everything below in one call. */
  void (*tensor_info)(const RillTensor* t, RillTensorInfo* out);
  int32_t (*tensor_dtype)(const RillTensor* t); /* -1 if never allocated */
  size_t (*tensor_ndim)(const RillTensor* t);
  const int64_t* (*tensor_dims)(const RillTensor* t);
  int64_t (*tensor_numel)(const RillTensor* t);
  int32_t (*tensor_device_type)(const RillTensor* t);
  int32_t (*tensor_device_id)(const RillTensor* t);
  void* (*tensor_data)(RillTensor* t); /* NULL if never allocated */
  /* Gives the tensor this shape and dtype on this device, keeping its memory when the
   * byte size is unchanged and the tensor does not share it, else allocating new memory
   * (64-byte aligned, contents unspecified). Writes the data pointer. */
  RillStatus* (*tensor_allocate)(RillTensor* t, int32_t dtype, const int64_t* dims,
                                 size_t ndim, int32_t device_type, int32_t device_id,
                                 void** data_out);
  /* LoD: `levels` levels, each a list of offsets. */
  size_t (*tensor_lod_levels)(const RillTensor* t);
  const uint64_t* (*tensor_lod_level)(const RillTensor* t, size_t level, size_t* count);
  RillStatus* (*tensor_set_lod_level)(RillTensor* t, size_t level, const uint64_t* offsets,
                                      size_t count);

  /* Scopes. Owned handles (from scope_new_child, scope_retain) keep the scope and all its
   * ancestors alive, from any thread, until released. */
  RillStatus* (*scope_new_child)(RillScope* parent, RillScope** out);
  RillScope* (*scope_retain)(RillScope* scope);
  void (*scope_release)(RillScope* scope);
  /* Finds `name` here or in an ancestor; NULL if absent. */
  RillVariable* (*scope_find_var)(RillScope* scope, const char* name);
  /* Finds `name` in this scope only, creating it if absent. */
  RillVariable* (*scope_var)(RillScope* scope, const char* name);
  /* ===== End of version 1 ===== */

  /* ===== Version 2: tasks ===== */
  /* Go blocks run as tasks, M:N over the host's worker threads; a task that waits parks
   * (its thread runs other tasks) instead of blocking its thread. A thread outside the
   * scheduler can use the same calls: it parks by blocking.
   *
   * task_current: the calling task (or thread). The handle stays valid while the task is
   * parked, so a waker may keep it in a wait queue until it calls task_unpark.
   * task_park: parks the caller until task_unpark. `unlock(arg)` is called once the caller
   * is parked, so a waker that holds the same lock cannot miss it. An unpark that comes
   * first makes the park return at once, and a park may return early: re-check the
   * condition under the lock. Returns NULL, or a status when the run is ending (the
   * main block finished, another task failed, or every task is parked: a deadlock, whose
   * message lists each parked op); then undo the wait and return that status. `ctx` (may
   * be NULL) and `what` ("on channel 'c' (recv)") describe the wait in deadlock reports
   * and must stay valid while parked.
   * task_go: starts block `block_idx` of ctx's program as a new task running in `scope`;
   * the task keeps the scope (and its ancestors) alive until it ends. Fails outside the
   * scheduler and once the run is ending. */
  RillTask* (*task_current)(void);
  RillStatus* (*task_park)(RillKernelContext* ctx, const char* what, void (*unlock)(void*),
                           void* arg);
  void (*task_unpark)(RillTask* task);
  RillStatus* (*task_go)(RillKernelContext* ctx, int32_t block_idx, RillScope* scope);
  /* Variables owned by the plugin, outside any scope (a channel's buffered values). */
  RillVariable* (*var_new)(void);
  void (*var_delete)(RillVariable* var);
  /* Exchanges the values of two variables (a receive hands its old value to the channel's
   * buffer slot, whose next copy can reuse that memory). */
  RillStatus* (*var_swap)(RillVariable* a, RillVariable* b);
  /* ===== End of version 2 ===== */

  /* ===== Version 3: SelectedRows ===== */
  /* Fluid's SelectedRows: rows rows[0..count) of a [height, ...] tensor, their values the
   * tensor `value` ([count, ...]); a sparse gradient, say.
   * var_is_selected_rows: whether the variable holds SelectedRows.
   * var_selected_rows: its rows (valid until the variable changes), height and value
   * tensor; RILL_INVALID_ARGUMENT if it holds something else.
   * var_set_selected_rows: makes the variable SelectedRows with a copy of `rows` and this
   * height (replacing what it held) and gives its value tensor, to allocate [count, ...]. */
  int32_t (*var_is_selected_rows)(const RillVariable* var);
  RillStatus* (*var_selected_rows)(RillVariable* var, const int64_t** rows, size_t* count,
                                   int64_t* height, RillTensor** value);
  RillStatus* (*var_set_selected_rows)(RillVariable* var, const int64_t* rows, size_t count,
                                       int64_t height, RillTensor** value);
  /* ===== End of version 3 ===== */

  /* ===== Version 4: scopes for sub-blocks, reused ===== */
  /* ctx_new_child_scope: a new child of the op's scope, to run block `block_idx` in (an
   * owned handle). It may take over the variables of the scope this op made for that
   * block last time, once nothing holds that one any more and no enclosing scope has
   * gained a variable since: the block then finds the variables it creates already there,
   * holding their last values, and the executor reuses the names it resolved. Ops that run
   * a sub-block once per run (conditional_block, select, go) use it instead of
   * scope_new_child.
   * scope_reusable: 1 if only this handle holds the scope (no go block started in it or
   * below it, no child scope, no other handle) and no enclosing scope has gained a
   * variable since it was made: running the block in it again is then the same as in a
   * new child, but for the values of the block's own variables. A loop runs its next step
   * in its step scope when it is reusable. */
  RillStatus* (*ctx_new_child_scope)(RillKernelContext* ctx, int32_t block_idx, RillScope** out);
  int32_t (*scope_reusable)(const RillScope* scope);
  /* ===== End of version 4 ===== */

  /* ===== Version 6: a kernel's arguments in fewer calls ===== */
  /* A kernel of a small op (a loop counter's increment, a compare) spends most of its time
   * in host calls; these pairs are the ones every kernel makes, each in one call.
   * ctx_input_described: ctx_input_tensor, then tensor_info into `info` (struct_size set
   * by the caller), which describes the tensor until it next changes.
   * ctx_output_allocate: ctx_output_tensor, then tensor_allocate with these arguments; the
   * tensor's new description, data pointer included, goes to `info`. */
  RillStatus* (*ctx_input_described)(RillKernelContext* ctx, const char* slot, size_t i,
                                     RillTensor** out, RillTensorInfo* info);
  RillStatus* (*ctx_output_allocate)(RillKernelContext* ctx, const char* slot, size_t i,
                                     int32_t dtype, const int64_t* dims, size_t ndim,
                                     int32_t device_type, int32_t device_id, RillTensor** out,
                                     RillTensorInfo* info);
  /* ===== End of version 6 ===== */

  /* ===== Version 7: a block's ops ===== */
  /* op_block_ops: the ops of block `block_idx` of the op's program, in order, as op
   * instances the op_* and attr_* calls read; the array and the ops live as long as `info`.
   * An op that runs a sub-block reads it at kernel create time to recognise a layout it can
   * run more directly (select runs only the chosen case's block). Fails with
   * RILL_OUT_OF_RANGE for a block the program lacks, and with the block's own error when one
   * of its ops cannot be prepared (an unknown op type). */
  RillStatus* (*op_block_ops)(const RillOpInfo* info, int32_t block_idx,
                              const RillOpInfo* const** ops, size_t* count);
  /* ===== End of version 7 ===== */

  /* ===== Version 8: arguments by index, custom values by handle ===== */
  /* A kernel with per-op state finds its slots and variable types once, when it is
   * created, and reads its arguments by index on every run, comparing no names (as ONNX
   * Runtime's KernelContext_GetInput reads inputs by position).
   * op_input_slot / op_output_slot: the index of input (output) slot `slot` among the op's
   * slots, fixed for the life of the op instance; -1 if the op lists no such slot (an
   * optional slot the program leaves out).
   * ctx_input_at / ctx_output_at, ctx_input_described_at / ctx_output_allocate_at: as
   * ctx_input, ctx_output, ctx_input_described and ctx_output_allocate, with the slot given
   * by that index. An index of -1 or past the op's slots reads as a slot with no variables
   * (NULL; RILL_NOT_FOUND).
   * var_type_find: the handle of the registered variable type `name`; NULL if none is
   * registered by that name. One name has one handle for the life of the process.
   * var_custom: the value of a variable holding a custom value of type `type`; NULL if it
   * holds nothing or anything else. */
  int32_t (*op_input_slot)(const RillOpInfo* info, const char* slot);
  int32_t (*op_output_slot)(const RillOpInfo* info, const char* slot);
  RillVariable* (*ctx_input_at)(RillKernelContext* ctx, int32_t slot, size_t i);
  RillVariable* (*ctx_output_at)(RillKernelContext* ctx, int32_t slot, size_t i);
  RillStatus* (*ctx_input_described_at)(RillKernelContext* ctx, int32_t slot, size_t i,
                                        RillTensor** out, RillTensorInfo* info);
  RillStatus* (*ctx_output_allocate_at)(RillKernelContext* ctx, int32_t slot, size_t i,
                                        int32_t dtype, const int64_t* dims, size_t ndim,
                                        int32_t device_type, int32_t device_id,
                                        RillTensor** out, RillTensorInfo* info);
  const RillVarType* (*var_type_find)(const char* name);
  void* (*var_custom)(const RillVariable* var, const RillVarType* type);
  /* ===== End of version 8 ===== */

  /* ===== Version 9: scalars in one call =====
   * A scalar is a one-element CPU tensor of shape [1], without LoD, of a data type of at
   * most 8 bytes; its `bits` are its bytes in the first DataTypeSize(dtype) bytes of a
   * uint64_t (the rest zero). What a channel buffers, a loop counter, a flag.
   * var_scalar: if `var` holds a scalar, writes its data type and bits and returns 1; else
   * returns 0 and writes nothing.
   * var_set_scalar: makes `var` hold the scalar of `dtype` with `bits`, replacing whatever
   * it held (LoD, selected rows, a custom value). It writes into the tensor `var` holds
   * when that has the same byte size and shares its memory with no other tensor, so a
   * variable set again and again allocates nothing. RILL_INVALID_ARGUMENT for a data type
   * that is not a tensor element type of at most 8 bytes. */
  int32_t (*var_scalar)(const RillVariable* var, int32_t* dtype, uint64_t* bits);
  RillStatus* (*var_set_scalar)(RillVariable* var, int32_t dtype, uint64_t bits);
  /* ===== End of version 9 ===== */

  /* ===== Version 10: sub-blocks run by the host =====
   * ctx_run_sub_block: runs block `block_idx` once as this op's sub-block, inline on this
   * thread: what ctx_new_child_scope, ctx_run_block and scope_release in turn do, in one
   * call. The host may run the block in the op's scope itself when nothing could tell the
   * difference (the block declares no local variable and every name it uses already
   * exists up the op's scope chain), which saves the scope and its name lookups: an op
   * that runs a block once a step (a condition's branch, a select's case) should use this.
   * A kernel in the block that makes a variable by name in ctx_scope then makes it in the
   * op's scope. For a block that must have a scope of its own (a go block, which holds it
   * past the call), use ctx_new_child_scope. */
  RillStatus* (*ctx_run_sub_block)(RillKernelContext* ctx, int32_t block_idx);
  /* ===== End of version 10 ===== */

  /* ===== Version 11: arguments read from the frame =====
   * A block run keeps the variables its ops name in one array, its frame, where each
   * argument of an op has an index fixed when the block is prepared. A kernel that found
   * an argument's index when it was created reads it from the frame on every run, with no
   * call per argument (ctx_input_at is one).
   * op_input_index / op_output_index: the frame index of argument `i` of the input
   * (output) slot at index `slot` (op_input_slot), fixed for the life of the op instance;
   * RILL_NO_FRAME_INDEX for a slot or argument the op does not have.
   * ctx_frame: the frame of the block run this kernel call belongs to, valid until the call
   * returns. An entry is NULL while its variable has not been found: one that did not exist
   * when the run started (a later op may make it). ctx_input_at / ctx_output_at look such
   * an argument up again; so a kernel reads the frame first and calls them for a NULL. */
#define RILL_NO_FRAME_INDEX UINT32_MAX
  uint32_t (*op_input_index)(const RillOpInfo* info, int32_t slot, size_t i);
  uint32_t (*op_output_index)(const RillOpInfo* info, int32_t slot, size_t i);
  RillVariable* const* (*ctx_frame)(RillKernelContext* ctx);
  /* ===== End of version 11 ===== */

  /* ===== Version 12: go blocks in one call =====
   * ctx_go: starts block `block_idx` as a new task (a go block) in a new child scope of the
   * op's scope, after giving that scope its own copy (as var_copy makes one: a custom
   * value through its type's copy) of each frame entry at `frame_indices` (op_input_index,
   * op_output_index), under the name the entry has in the op's block; the task keeps the
   * scope alive until it ends. (Since version 13 the new scope hangs below the nearest
   * enclosing scope that holds a variable other than those copied: one whose variables are
   * all copied shows the block nothing it does not hold itself, so the block does not keep
   * it alive; a variable made there by name later is not seen by the block.) It does what scope_new_child, scope_var and var_copy for
   * each entry, task_go and scope_release do in turn, with no handle and no name to hash,
   * which is most of what starting a go block costs. An index listed twice is copied once
   * more over the first copy. RILL_INVALID_ARGUMENT, with nothing started, for an index
   * past the frame or an entry not found yet (NULL in ctx_frame: read it with ctx_input_at
   * first); otherwise fails as task_go does. */
  RillStatus* (*ctx_go)(RillKernelContext* ctx, int32_t block_idx, const uint32_t* frame_indices,
                        size_t count);
  /* ===== End of version 12 ===== */

  /* ===== Version 13: small allocations from the host =====
   * mem_alloc: `bytes` (1 to RILL_MEM_SMALL_MAX) of memory aligned to 16 bytes, from the
   * pages the host keeps its own small objects in (scopes, go blocks' variables, tasks):
   * each thread allocates from pages of its own without a lock, and a block freed on
   * another thread goes back to its page without one. For a plugin's small objects that
   * one task makes and another frees (a channel, a message), at a fraction of malloc's
   * cost. NULL for 0 or more than RILL_MEM_SMALL_MAX bytes, or when no memory is left.
   * mem_free: gives back a block from mem_alloc; `bytes` is what was asked for. Any thread
   * may free it; NULL does nothing.
   * var_set_custom_typed: var_set_custom by the type's handle (var_type_find), with no name
   * to look up: RILL_INVALID_ARGUMENT for a NULL variable or type. */
#define RILL_MEM_SMALL_MAX 512u
  void* (*mem_alloc)(size_t bytes);
  void (*mem_free)(void* p, size_t bytes);
  RillStatus* (*var_set_custom_typed)(RillVariable* v, const RillVarType* type, void* value);
  /* ===== End of version 13 ===== */

  /* ===== Version 14: loops run by the host =====
   * ctx_run_loop: runs block `block_idx` as a loop body, inline on this thread, step after
   * step while the loop goes on. Before each step: when `condition` (may be NULL) holds a
   * bool scalar, the loop goes on while it is true, read by the host itself; otherwise
   * `proceed(arg, &go_on)` decides (go_on non-zero: one more step), and may return a status
   * that stops the loop and is returned (a condition on a device, read through a copy; a
   * condition of the wrong kind, as an error). With neither, the loop fails with
   * RILL_INVALID_ARGUMENT. Each step runs in a child scope of the op's scope; the next step
   * runs in the same one (its variables keep their values, and the names the block resolved
   * stay resolved) while nothing else holds it: a go block started in a step keeps that
   * scope, and the next step gets a new one. Fluid's `while` is this call with its
   * Condition variable; an op of any plugin can run a loop of its own the same way. Fails
   * as a block run fails, naming the block and op. */
  RillStatus* (*ctx_run_loop)(RillKernelContext* ctx, int32_t block_idx, const RillVariable* condition,
                              RillStatus* (*proceed)(void* arg, int32_t* go_on), void* arg);
  /* ===== End of version 14 ===== */
} RillHostApi;

/* ---- The plugin's entry ---------------------------------------------------------------- */

/* Versions both ways: a plugin states the lowest ABI version it needs (`abi_version`), which
 * need not be the version of the header it was built with; the host loads it when it serves
 * that version (a host serves every version up to its own RILL_ABI_VERSION, its table
 * holding every entry of each) and refuses it otherwise, naming both versions. The host
 * hands the plugin its own table, whose `abi_version` and `struct_size` say which entries
 * it holds: a plugin may use an entry newer than the version it stated only after checking
 * that `struct_size` covers it (the C++ SDK does so for every call, RILL_HOST_ENTRY). */
typedef struct RillPlugin {
  uint32_t struct_size; /* sizeof(RillPlugin) as the plugin was compiled */
  uint32_t abi_version; /* the lowest ABI version the plugin needs */
  const char* name;     /* short unique name, e.g. "math" */
  const char* version;  /* the plugin's own version, free form */
  /* Registers everything the plugin provides. `host` stays valid for the life of the
   * process; keep it for use in kernels. */
  RillStatus* (*init)(const RillHostApi* host, RillRegistrar* registrar);
} RillPlugin;

typedef const RillPlugin* (*RillGetPluginFn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RILL_ABI_H_ */
