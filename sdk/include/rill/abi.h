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
 * Compatibility promise. A plugin states the lowest ABI version it needs (RillPlugin's
 * `abi_version`); a host serves every version from 1 to its own RILL_ABI_VERSION, loads any
 * plugin whose need it meets, and refuses a newer one with a message naming both versions.
 * So a plugin built against version N keeps loading into every later host, and rebuilding
 * it against a newer header does not raise its need unless it says so.
 *
 * Rules this header keeps (docs/DESIGN.md has the design around it):
 *  - Only C crosses: fixed-width integers, UTF-8 `const char*`, pointer + length, opaque
 *    handles. No exceptions cross; every call that can fail returns a RillStatus*, except
 *    var_new, scope_var and scope_find_var, which return NULL when memory runs out.
 *  - RillStatus* NULL means success. A non-NULL status is owned by whoever receives it:
 *    the plugin releases statuses the host returns to it (status_release) or passes them
 *    back up as its own result; the host releases statuses the plugin returns.
 *  - RillHostApi is append-only. Every entry's offset is pinned by a static_assert in
 *    core/abi/host_api.cc, and every entry's version, offset and prototype is recorded in
 *    sdk/abi_manifest.txt, which a test compares with this header; a frozen copy of the
 *    version 1 header and a plain-C plugin built from it (tests/compat/) keep running.
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

/* The ABI version this header declares. Each version's marker in RillHostApi says
 * whether it is shipped (its entries and what they do are frozen for good) or in
 * development (it may still change); sdk/abi_manifest.txt records the shipped ones. A
 * later version only appends (entries to RillHostApi after the last version's end, fields
 * to the end of a struct), never changes what a shipped call does, and is listed here:
 *
 *   1  Shipped in SDK 1.0: the first promise.
 *   2  Shipped in SDK 1.0. Tracing: trace_active, trace_now_ns, trace_span (a plugin's own spans in the profile
 *      `rill run --profile` records: its RPCs, transfers, waits). Commands:
 *      register_command (a plugin's own subcommand of the `rill` tool, RillCommandDef).
 *      Tensor arrays: var_is_tensor_array, var_tensor_array, var_tensor_array_resize,
 *      var_tensor_array_at (Fluid's LoDTensorArray, a variable holding a list of tensors).
 *      Kinds and whole LoDs: var_is_tensor, tensor_truncate_lod. Shared memory:
 *      tensor_share (an output that views an input's memory instead of copying it).
 */
#define RILL_ABI_VERSION 2u

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
  RILL_INVALID_ARGUMENT = 1,    /* bad input: wrong dtype, shape, attribute value */
  RILL_NOT_FOUND = 2,           /* a variable, slot, attribute or op that does not exist */
  RILL_FAILED_PRECONDITION = 3, /* state does not allow it: send on closed channel */
  RILL_OUT_OF_RANGE = 4,
  RILL_UNIMPLEMENTED = 5, /* no kernel for this place/dtype */
  RILL_INTERNAL = 6,      /* a bug, or an exception of unknown kind */
  RILL_UNAVAILABLE = 7,   /* a peer is gone */
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
  /* Paddle 2.x's. Storage only: tensors of them are made, saved, loaded, fed and fetched;
   * a kernel handles them only if it registers for them. */
  RILL_BF16 = 22,
  RILL_COMPLEX64 = 23,  /* two fp32: real, imaginary */
  RILL_COMPLEX128 = 24, /* two fp64 */
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
typedef struct RillTask RillTask;                   /* a task (or a thread outside the scheduler) */
typedef struct RillVarType RillVarType;             /* a registered variable type; never freed */

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
typedef RillStatus* (*RillKernelCreateFn)(void* user_data, const RillOpInfo* info, void** state_out);
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
  /* Optional (NULL: none). See RillKernelScalarFn. */
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
  /* Returns a new value equal to `value` for the host's variable copy (`assign`); a
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
  /* Optional (both NULL or both set). Host memory, usable by the CPU like any other,
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

/* A subcommand of the `rill` tool that a plugin provides (ABI version 2, register_command):
 * `rill NAME ARG...` loads the plugins as for any command, then calls `run` with the
 * arguments after NAME, global options (--plugin-path, --log-level, ...) taken out. A
 * transport's `rill status HOST:PORT` is one. The command parses its own arguments
 * (--help included) and prints its own output to standard output.
 * `run` returns NULL for success (rill exits 0), or a status: rill prints its message as
 * "rill NAME: error: MESSAGE" and exits 2 when the code is RILL_INVALID_ARGUMENT (bad
 * usage), 1 otherwise. */
typedef struct RillCommandDef {
  uint32_t struct_size;
  const char* name;    /* [a-z][a-z0-9-]*, not one of rill's own commands; unique across plugins */
  const char* summary; /* one line, for `rill --help` */
  const char* usage;   /* the arguments after NAME, "HOST:PORT... [--json]", for `rill --help` */
  void* user_data;
  RillStatus* (*run)(void* user_data, int32_t argc, const char* const* argv);
} RillCommandDef;

/* An argument of an op instance: argument `index` of the slot at `slot` (op_input_slot,
 * op_output_slot). */
typedef struct RillArg {
  int32_t slot;
  uint32_t index;
} RillArg;

/* ---- The host's function table ------------------------------------------------------- */

/* Every entry is set in every host; the groups follow a plugin's life: report, register,
 * read the op it was created for, then, on every run, read and write its arguments'
 * variables and tensors, and run blocks and tasks. A call that can fail returns a status;
 * one given a NULL handle it needs fails with RILL_INVALID_ARGUMENT (or, where it returns
 * no status, returns 0 / NULL). */
typedef struct RillHostApi {
  /* ===== Version 1 (shipped: SDK 1.0) ===== */
  /* The host's own RILL_ABI_VERSION. */
  uint32_t abi_version;
  /* sizeof(RillHostApi) in the host: the entries it serves end there. */
  uint32_t struct_size;

  /* ---- Status and logging. */
  /* A status carrying `code` (a RillStatusCode) and a copy of `message`. */
  RillStatus* (*status_create)(int32_t code, const char* message);
  /* The status's code. */
  int32_t (*status_code)(const RillStatus* status);
  /* The status's message, valid until the status is released. */
  const char* (*status_message)(const RillStatus* status);
  /* Frees a status (NULL: nothing). */
  void (*status_release)(RillStatus* status);
  /* Writes `message` (copied) through the host's logger at `level` (a RillLogLevel). */
  void (*log)(int32_t level, const char* message);

  /* ---- Registration, during the plugin's init only. Everything passed is copied. */
  /* Declares an op: its slots, attributes and gradient. */
  RillStatus* (*register_op)(RillRegistrar* reg, const RillOpSchema* schema);
  /* A kernel for an op (this plugin's or another's) on a device and dtype. */
  RillStatus* (*register_kernel)(RillRegistrar* reg, const RillKernelDef* kernel);
  /* A variable type of the plugin's own. Types are the process's: a name is one plugin's
   * in every registry. */
  RillStatus* (*register_var_type)(RillRegistrar* reg, const RillVarTypeDef* type);
  /* A device the plugin drives (its memory and copies). */
  RillStatus* (*register_device)(RillRegistrar* reg, const RillDeviceDef* device);

  /* ---- Op instances: one op of a program, as a kernel's create sees it and ctx_op gives
   * it. Arrays and strings returned live as long as the op instance. */
  /* The op's type. */
  const char* (*op_type)(const RillOpInfo* info);
  /* The handle of the op's input slot `name`, fixed for the life of the op instance, by
   * which the calls below and the ctx_* calls read the slot's arguments; -1 when the op
   * lists no such slot (an optional slot the program leaves out), which reads as a slot
   * with no arguments. A kernel finds its slots once, when it is created. */
  int32_t (*op_input_slot)(const RillOpInfo* info, const char* name);
  /* The same for output slot `name`. */
  int32_t (*op_output_slot)(const RillOpInfo* info, const char* name);
  /* The number of arguments of input slot `slot`. */
  size_t (*op_input_count)(const RillOpInfo* info, int32_t slot);
  /* The number of arguments of output slot `slot`. */
  size_t (*op_output_count)(const RillOpInfo* info, int32_t slot);
  /* The variable name of argument `i` of input slot `slot`; NULL past the end. */
  const char* (*op_input_name)(const RillOpInfo* info, int32_t slot, size_t i);
  /* The variable name of argument `i` of output slot `slot`; NULL past the end. */
  const char* (*op_output_name)(const RillOpInfo* info, int32_t slot, size_t i);
  /* The attr_* calls read the op's attribute `name`; one the program omits reads as the
   * schema's default. Each fails with RILL_NOT_FOUND for an attribute the schema does not
   * declare and RILL_INVALID_ARGUMENT for one of another type. */
  /* INT (or LONG). */
  RillStatus* (*attr_int)(const RillOpInfo* info, const char* name, int64_t* out);
  /* FLOAT. */
  RillStatus* (*attr_float)(const RillOpInfo* info, const char* name, double* out);
  /* BOOLEAN, as 0 or 1. */
  RillStatus* (*attr_bool)(const RillOpInfo* info, const char* name, int32_t* out);
  /* STRING: its bytes and length (not NUL-terminated). */
  RillStatus* (*attr_string)(const RillOpInfo* info, const char* name, const char** data, size_t* len);
  /* INTS. */
  RillStatus* (*attr_ints)(const RillOpInfo* info, const char* name, const int64_t** data, size_t* count);
  /* FLOATS. */
  RillStatus* (*attr_floats)(const RillOpInfo* info, const char* name, const float** data, size_t* count);
  /* BOOLEANS, one byte each, 0 or 1. */
  RillStatus* (*attr_bools)(const RillOpInfo* info, const char* name, const uint8_t** data, size_t* count);
  /* STRINGS: how many; attr_strings_at gives each. */
  RillStatus* (*attr_strings)(const RillOpInfo* info, const char* name, size_t* count);
  /* STRINGS: string `i`'s bytes and length; RILL_OUT_OF_RANGE past the end. */
  RillStatus* (*attr_strings_at)(const RillOpInfo* info, const char* name, size_t i, const char** data, size_t* len);
  /* BLOCK: a block index in the op's program. */
  RillStatus* (*attr_block)(const RillOpInfo* info, const char* name, int32_t* out);
  /* BLOCKS: block indices in the op's program. */
  RillStatus* (*attr_blocks)(const RillOpInfo* info, const char* name, const int32_t** data, size_t* count);
  /* The ops of block `block_idx` of the op's program, in order, as op instances the calls
   * above read. RILL_OUT_OF_RANGE for a block the program lacks, and the block's own error
   * when one of its ops cannot be prepared. */
  RillStatus* (*op_block_ops)(const RillOpInfo* info, int32_t block_idx, const RillOpInfo* const** ops, size_t* count);

  /* ---- Kernel context: one run of a kernel. Handles it gives are borrowed for the run. */
  /* The op instance the kernel runs. */
  const RillOpInfo* (*ctx_op)(const RillKernelContext* ctx);
  /* The op's scope (borrowed: scope_retain keeps it). */
  RillScope* (*ctx_scope)(RillKernelContext* ctx);
  /* The device the kernel runs on (0 for CPU kernels); its inputs have been moved there,
   * and it allocates its outputs there. */
  int32_t (*ctx_device_id)(const RillKernelContext* ctx);
  /* The variable of input argument `i` of `slot`; NULL when the op has no such argument or
   * no scope holds its variable. */
  RillVariable* (*ctx_input)(RillKernelContext* ctx, int32_t slot, size_t i);
  /* The variable of output argument `i` of `slot`; NULL when the op has no such argument.
   * An output variable no scope held was made in the op's scope before the run. */
  RillVariable* (*ctx_output)(RillKernelContext* ctx, int32_t slot, size_t i);
  /* The tensor of input argument `i` and its description (`info`, whose struct_size the
   * caller sets), valid until the tensor next changes. RILL_NOT_FOUND for no such argument
   * or variable, RILL_FAILED_PRECONDITION when it holds no tensor value. */
  RillStatus* (*ctx_input_tensor)(RillKernelContext* ctx, int32_t slot, size_t i, RillTensor** out,
                                  RillTensorInfo* info);
  /* Gives the tensor of output argument `i` this dtype and shape on this device (as
   * tensor_allocate does; an empty variable becomes a tensor) and describes it into `info`.
   * RILL_INVALID_ARGUMENT when the variable holds something else. */
  RillStatus* (*ctx_output_allocate)(RillKernelContext* ctx, int32_t slot, size_t i, int32_t dtype, const int64_t* dims,
                                     size_t ndim, int32_t device_type, int32_t device_id, RillTensor** out,
                                     RillTensorInfo* info);

  /* ---- Variables. A variable holds nothing, a LoD tensor, selected rows, or a custom value. */
  /* Nonzero if it holds a value. */
  int32_t (*var_is_initialized)(const RillVariable* var);
  /* Its tensor; an empty variable becomes an empty tensor. RILL_INVALID_ARGUMENT when it
   * holds another kind of value. */
  RillStatus* (*var_tensor)(RillVariable* var, RillTensor** out);
  /* If it holds a scalar (see RillScalar), writes its dtype and bits and returns 1; else
   * returns 0 and writes nothing. */
  int32_t (*var_scalar)(const RillVariable* var, int32_t* dtype, uint64_t* bits);
  /* Makes it hold that scalar, replacing whatever it held; it writes in place when the
   * tensor it holds has the same byte size and shares its memory with no other, so a
   * variable set again and again allocates nothing. RILL_INVALID_ARGUMENT for a dtype that
   * is not a tensor element type of at most 8 bytes. */
  RillStatus* (*var_set_scalar)(RillVariable* var, int32_t dtype, uint64_t bits);
  /* Nonzero if it holds SelectedRows (Fluid's): rows rows[0..count) of a [height, ...]
   * tensor, their values the tensor `value` ([count, ...]). */
  int32_t (*var_is_selected_rows)(const RillVariable* var);
  /* The SelectedRows it holds, valid until the variable changes; RILL_INVALID_ARGUMENT if
   * it holds something else. */
  RillStatus* (*var_selected_rows)(RillVariable* var, const int64_t** rows, size_t* count, int64_t* height,
                                   RillTensor** value);
  /* Makes it SelectedRows with a copy of `rows` and gives its value tensor to allocate. */
  RillStatus* (*var_set_selected_rows)(RillVariable* var, const int64_t* rows, size_t count, int64_t height,
                                       RillTensor** value);
  /* The handle of registered variable type `name`, NULL if none; one name has one handle
   * for the life of the process. */
  const RillVarType* (*var_type_find)(const char* name);
  /* The value if the variable holds one of `type`, else NULL. */
  void* (*var_custom)(const RillVariable* var, const RillVarType* type);
  /* Makes it hold `value` of `type`, taking ownership (the type's destroy frees it, and
   * what the variable held before). */
  RillStatus* (*var_set_custom)(RillVariable* var, const RillVarType* type, void* value);
  /* Moves the whole value of `src` into `dst`, leaving `src` empty. */
  RillStatus* (*var_move)(RillVariable* dst, RillVariable* src);
  /* Copies the whole value of `src` into `dst`: a tensor deeply, a custom value through
   * its type's copy (RILL_INVALID_ARGUMENT if it has none). */
  RillStatus* (*var_copy)(RillVariable* dst, const RillVariable* src);
  /* Exchanges two variables' values (a receive hands its old value to a channel's buffer
   * slot, whose next copy can reuse that memory). */
  RillStatus* (*var_swap)(RillVariable* a, RillVariable* b);
  /* A one-line description, "fp32[2, 3] {1, 2, ...}", NUL-terminated and truncated to `cap`. */
  void (*var_describe)(const RillVariable* var, char* buf, size_t cap);
  /* A variable the plugin owns, outside any scope (a channel's buffered values); NULL when
   * out of memory. */
  RillVariable* (*var_new)(void);
  /* Frees a variable var_new made, with its value. */
  void (*var_delete)(RillVariable* var);

  /* ---- Tensors. */
  /* The tensor's description (see RillTensorInfo). */
  void (*tensor_info)(const RillTensor* t, RillTensorInfo* out);
  /* Gives the tensor this dtype and shape on this device, keeping its memory when the byte
   * size is unchanged and no other tensor shares it, else allocating new memory (64-byte
   * aligned, contents unspecified); writes the data pointer. */
  RillStatus* (*tensor_allocate)(RillTensor* t, int32_t dtype, const int64_t* dims, size_t ndim, int32_t device_type,
                                 int32_t device_id, void** data_out);
  /* The number of levels of its LoD (each level a list of offsets). */
  size_t (*tensor_lod_levels)(const RillTensor* t);
  /* Level `level`'s offsets and their count; NULL and 0 past the last level. */
  const uint64_t* (*tensor_lod_level)(const RillTensor* t, size_t level, size_t* count);
  /* Sets an existing level, or appends the next one. */
  RillStatus* (*tensor_set_lod_level)(RillTensor* t, size_t level, const uint64_t* offsets, size_t count);

  /* ---- Scopes. Owned handles (scope_new_child, scope_retain) keep the scope and its
   * ancestors alive, from any thread, until released; ctx_scope's is borrowed. */
  /* A new child of `parent`, owned. */
  RillStatus* (*scope_new_child)(RillScope* parent, RillScope** out);
  /* Another owned handle to `scope`. */
  RillScope* (*scope_retain)(RillScope* scope);
  /* Releases an owned handle. */
  void (*scope_release)(RillScope* scope);
  /* `name` here or in an ancestor; NULL if absent. */
  RillVariable* (*scope_find_var)(RillScope* scope, const char* name);
  /* `name` in this scope only, made if absent; NULL when out of memory. */
  RillVariable* (*scope_var)(RillScope* scope, const char* name);

  /* ---- Blocks and tasks. A block run fails naming the block and op that failed.
   * Go blocks run as tasks, M:N over the host's worker threads; a task that waits parks
   * (its thread runs other tasks) instead of blocking its thread. A thread outside the
   * scheduler can use the same calls: it parks by blocking. */
  /* Runs block `block_idx` of the op's program once, inline on this thread. In `scope`
   * when one is given. With NULL, as the op's sub-block: in a new child of the op's scope. */
  RillStatus* (*ctx_run_block)(RillKernelContext* ctx, int32_t block_idx, RillScope* scope);
  /* Runs block `block_idx` as a loop body, inline, step after step while the loop goes on.
   * Before each step: when `condition` (may be NULL) holds a bool tensor of one element
   * (on the host, or on a device, whence the host copies it), the loop goes on while it is
   * true, read by the host itself; otherwise `proceed(arg, &go_on)` decides
   * (non-zero: one more step), and may return a status that stops the loop and is
   * returned; with neither, RILL_INVALID_ARGUMENT. Each step runs in a child scope of the
   * op's scope; the next step runs in the same one (its variables keep their values) while
   * nothing else holds it: a go block started in a step keeps that scope, and the next step
   * gets a new one. Fluid's `while` is this call with its Condition variable. */
  RillStatus* (*ctx_run_loop)(RillKernelContext* ctx, int32_t block_idx, const RillVariable* condition,
                              RillStatus* (*proceed)(void* arg, int32_t* go_on), void* arg);
  /* Starts block `block_idx` as a new task (a go block), concurrent with the rest of the
   * run, in a new child scope of the op's scope that holds its own copy (as var_copy makes
   * one) of each input argument in `bind`, under its name: Go's `go f(ch)`, whose arguments
   * are evaluated at the go statement. The task keeps its scopes alive until it ends; it
   * sees every variable of the op's scope chain, those made later included.
   * RILL_INVALID_ARGUMENT, with nothing started, for an argument the op lacks or whose
   * variable no scope holds; RILL_FAILED_PRECONDITION outside the scheduler or once the run
   * is ending. */
  RillStatus* (*ctx_go)(RillKernelContext* ctx, int32_t block_idx, const RillArg* bind, size_t count);
  /* The calling task (or thread); the handle stays valid while it is parked, so a waker
   * may keep it in a wait queue until it calls task_unpark. */
  RillTask* (*task_current)(void);
  /* Parks the caller until task_unpark. `unlock(arg)` is called once the caller is parked,
   * so a waker that holds the same lock cannot miss it. An unpark that comes first makes
   * the park return at once, and a park may return early: re-check the condition under
   * the lock. Returns NULL, or a status when the run is ending (the main block finished,
   * another task failed, or every task is parked: a deadlock, whose message lists each
   * parked op); then undo the wait and return that status. `ctx` (may be NULL) and `what`
   * ("on channel 'c' (recv)") describe the wait in deadlock reports and must stay valid
   * while parked. */
  RillStatus* (*task_park)(RillKernelContext* ctx, const char* what, void (*unlock)(void*), void* arg);
  /* Wakes a parked task (or readies the next park of one not parked yet). */
  void (*task_unpark)(RillTask* task);
  /* ===== End of version 1 ===== */

  /* ===== Version 2 (shipped: SDK 1.0) ===== */
  /* ---- Tracing: a plugin's spans in the profile `rill run --profile` records, on the
   * calling thread's lane beside the ops' spans. A plugin that needs only version 1 calls
   * these only if the host's table has them (abi_version >= 2); sdk.hpp's rill::Trace does. */
  /* Nonzero while a profile is recorded; check it before building what trace_span takes
   * (one relaxed load). */
  int32_t (*trace_active)(void);
  /* The clock spans are on (the host's monotonic clock, in nanoseconds). */
  int64_t (*trace_now_ns)(void);
  /* Records a span of `category` ("rpc", "mpi", "barrier", ...) called `name` from start_ns
   * to end_ns, with `detail` (may be NULL: "1048576 bytes to 10.0.0.2:6170") as its
   * argument; strings are copied. Does nothing when no profile is recorded. */
  void (*trace_span)(const char* category, const char* name, int64_t start_ns, int64_t end_ns, const char* detail);
  /* ---- Commands. */
  /* During init only: a subcommand of the `rill` tool (RillCommandDef; strings are
   * copied). RILL_INVALID_ARGUMENT for a malformed name or a NULL `run`;
   * RILL_ALREADY_EXISTS when this plugin registered that name already (another plugin's
   * duplicate fails that plugin's load, as a duplicate op does). */
  RillStatus* (*register_command)(RillRegistrar* reg, const RillCommandDef* command);
  /* ---- Tensor arrays (Fluid's LoDTensorArray, a variable of type LOD_TENSOR_ARRAY): a list
   * of tensors, each with its own dtype, shape and LoD; an entry never written is an empty
   * tensor, which tensor_allocate gives a value. */
  /* Nonzero if the variable holds one. */
  int32_t (*var_is_tensor_array)(const RillVariable* var);
  /* Writes the number of entries; an empty variable becomes an empty array.
   * RILL_INVALID_ARGUMENT when it holds another kind of value. */
  RillStatus* (*var_tensor_array)(RillVariable* var, size_t* count);
  /* Makes it hold `count` entries, new ones empty, those past `count` freed; an empty
   * variable becomes an array first. RILL_INVALID_ARGUMENT as above. */
  RillStatus* (*var_tensor_array_resize)(RillVariable* var, size_t count);
  /* Entry `i`, valid until the array is resized or the variable changes;
   * RILL_OUT_OF_RANGE past the end, RILL_INVALID_ARGUMENT as above. */
  RillStatus* (*var_tensor_array_at)(RillVariable* var, size_t i, RillTensor** out);
  /* ---- A variable's kind, a tensor's whole LoD. */
  /* Nonzero if the variable holds a tensor (with or without a value) or nothing yet: those
   * whose var_tensor gives a tensor without an error or a change of kind (an empty variable
   * then holds an empty tensor). */
  int32_t (*var_is_tensor)(const RillVariable* var);
  /* Keeps the first `levels` levels of the tensor's LoD and drops the rest (none when it
   * has no more); with tensor_set_lod_level, which sets a level or appends the next, it
   * replaces a LoD whole. */
  RillStatus* (*tensor_truncate_lod)(RillTensor* t, size_t levels);
  /* ---- Shared memory. */
  /* Makes `dst` a view of `src`'s memory, with no copy: src's dtype and device, shaped
   * `dims` (`ndim` of them, whose product must be src's element count; NULL for src's own
   * shape); dst's LoD stays its own (Fluid's ShareDataWith). A kernel whose output is an
   * input's values unchanged (a gradient passed through, a reshape) gives it this way
   * instead of copying. Memory that several tensors share is never rewritten in place:
   * tensor_allocate of any of them gives that one new memory, so each keeps the values it
   * was given, and a kernel writes only into memory tensor_allocate gave it.
   * RILL_INVALID_ARGUMENT when src holds no value or `dims` hold another count. */
  RillStatus* (*tensor_share)(RillTensor* dst, const RillTensor* src, const int64_t* dims, size_t ndim);
  /* ===== End of version 2 ===== */
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
