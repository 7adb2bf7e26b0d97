/* The ABI 1.0 compatibility plugin: plain C, built against the frozen version 1 header
 * (abi_1_0.h) and never against the current one, so every later host must keep running it
 * as it runs today. Between them its ops make every call of version 1, and check what the
 * calls answer, not only that they return:
 *   c_scale    Out = X * factor (fp32); a kernel with state (create, destroy, user_data)
 *   c_box      Out = a "compat.box" holding the sum of X (fp32); copies share nothing
 *   c_unbox    Out = fp32 [1], the sum held by box X
 *   c_add1     Out = X + 1 (int64); also offered as a scalar path that adds 100 instead,
 *              so a test can see which one ran
 *   c_mailbox, c_put, c_take
 *              a one-slot mailbox a task waits on by parking (Out = a new mailbox; move X
 *              into Box; Out = the value in Box, parking until there is one)
 *   c_go       starts sub_block as a go block binding its own copy of every X
 *   c_loop     runs sub_block Times times (an int64 scalar) as a loop the host runs
 *   c_once     runs sub_block once as its sub-block, then once more in a scope it makes
 *   c_check    every other call, each answer checked: Out = int64 [1], the number of checks
 *              passed; a failed check is the op's error, naming it.
 * register_device is the FAKE device plugin's (tests/fixtures/fake_device_plugin.c), built against
 * the same frozen header. tests/compat_test.cc runs them. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_1_0.h"

static const RillHostApi* host;

static RillStatus* Fail(const char* what) { return host->status_create(RILL_INTERNAL, what); }
static int32_t In(RillKernelContext* ctx, const char* slot) { return host->op_input_slot(host->ctx_op(ctx), slot); }
static int32_t Out(RillKernelContext* ctx, const char* slot) { return host->op_output_slot(host->ctx_op(ctx), slot); }

/* ---- c_scale: a kernel with state, its slots found once ---------------------------- */

typedef struct ScaleState {
  int32_t x, out;
  float factor;
} ScaleState;

static RillStatus* ScaleCreate(void* user_data, const RillOpInfo* info, void** state) {
  if (strcmp((const char*)user_data, "scale user data") != 0) return Fail("c_scale: user_data did not arrive");
  double factor = 0;
  RillStatus* st = host->attr_float(info, "factor", &factor);
  if (st) return st;
  ScaleState* s = (ScaleState*)malloc(sizeof(ScaleState));
  s->x = host->op_input_slot(info, "X");
  s->out = host->op_output_slot(info, "Out");
  s->factor = (float)factor;
  *state = s;
  return NULL;
}
static void ScaleDestroy(void* state) { free(state); }
static RillStatus* Scale(void* state, RillKernelContext* ctx) {
  const ScaleState* s = (const ScaleState*)state;
  RillTensor *x = NULL, *out = NULL;
  RillTensorInfo xi = {.struct_size = sizeof(RillTensorInfo)}, oi = {.struct_size = sizeof(RillTensorInfo)};
  RillStatus* st = host->ctx_input_tensor(ctx, s->x, 0, &x, &xi);
  if (st) return st;
  if (xi.dtype != RILL_FP32) return host->status_create(RILL_INVALID_ARGUMENT, "c_scale: X must be fp32");
  float* copy = (float*)malloc(sizeof(float) * (size_t)(xi.numel ? xi.numel : 1)); /* Out may be X */
  memcpy(copy, xi.data, sizeof(float) * (size_t)xi.numel);
  int64_t dims[8];
  if (xi.ndim > 8) return Fail("c_scale: more than 8 dimensions");
  memcpy(dims, xi.dims, sizeof(int64_t) * xi.ndim);
  st = host->ctx_output_allocate(ctx, s->out, 0, RILL_FP32, dims, xi.ndim, RILL_CPU, 0, &out, &oi);
  for (int64_t i = 0; !st && i < xi.numel; ++i) ((float*)oi.data)[i] = copy[i] * s->factor;
  free(copy);
  return st;
}

/* ---- c_box, c_unbox: a custom variable type ------------------------------------------ */

typedef struct Box {
  double sum;
} Box;

/* A registered type's handle, found on first use: var_type_find finds types once the
 * registry they are in is published, after init. */
static const RillVarType* TypeNamed(_Atomic(const RillVarType*)* slot, const char* name) {
  const RillVarType* t = atomic_load_explicit(slot, memory_order_relaxed);
  if (!t) atomic_store_explicit(slot, t = host->var_type_find(name), memory_order_relaxed);
  return t;
}
static _Atomic(const RillVarType*) box_type;
#define BOX_TYPE TypeNamed(&box_type, "compat.box")

static void BoxDestroy(void* value) { free(value); }
static void BoxDescribe(const void* value, char* buf, size_t cap) {
  snprintf(buf, cap, "compat.box(sum=%g)", ((const Box*)value)->sum);
}
static void* BoxCopy(const void* value) {
  Box* b = (Box*)malloc(sizeof(Box));
  *b = *(const Box*)value;
  return b;
}

static RillStatus* BoxOp(void* state, RillKernelContext* ctx) {
  (void)state;
  RillTensor* x = NULL;
  RillStatus* st = host->var_tensor(host->ctx_input(ctx, In(ctx, "X"), 0), &x);
  if (st) return st;
  RillTensorInfo xi = {.struct_size = sizeof(RillTensorInfo)};
  host->tensor_info(x, &xi);
  if (xi.dtype != RILL_FP32) return host->status_create(RILL_INVALID_ARGUMENT, "c_box: X must be fp32");
  Box* box = (Box*)malloc(sizeof(Box));
  box->sum = 0;
  for (int64_t i = 0; i < xi.numel; ++i) box->sum += ((const float*)xi.data)[i];
  st = host->var_set_custom(host->ctx_output(ctx, Out(ctx, "Out"), 0), BOX_TYPE, box);
  if (st) free(box);
  return st;
}

static RillStatus* UnboxOp(void* state, RillKernelContext* ctx) {
  (void)state;
  RillVariable* x = host->ctx_input(ctx, In(ctx, "X"), 0);
  const Box* box = (const Box*)host->var_custom(x, BOX_TYPE);
  if (!box) {
    char what[128], message[192];
    host->var_describe(x, what, sizeof(what));
    snprintf(message, sizeof(message), "c_unbox: X holds %s, not a compat.box", what);
    return host->status_create(RILL_INVALID_ARGUMENT, message);
  }
  RillTensor* out = NULL;
  RillStatus* st = host->var_tensor(host->ctx_output(ctx, Out(ctx, "Out"), 0), &out);
  if (st) return st;
  const int64_t one = 1;
  void* po = NULL;
  if ((st = host->tensor_allocate(out, RILL_FP32, &one, 1, RILL_CPU, 0, &po))) return st;
  *(float*)po = (float)box->sum;
  return NULL;
}

/* ---- c_add1: a kernel with a scalar path ---------------------------------------------- */

static RillStatus* Add1(void* state, RillKernelContext* ctx) {
  (void)state;
  RillTensor *x = NULL, *out = NULL;
  RillTensorInfo xi = {.struct_size = sizeof(RillTensorInfo)}, oi = {.struct_size = sizeof(RillTensorInfo)};
  RillStatus* st = host->ctx_input_tensor(ctx, In(ctx, "X"), 0, &x, &xi);
  if (st) return st;
  if (xi.dtype != RILL_INT64 || xi.ndim != 1) return host->status_create(RILL_INVALID_ARGUMENT, "c_add1: X must be int64 [n]");
  const int64_t n = xi.numel;
  int64_t first = n > 0 ? ((const int64_t*)xi.data)[0] : 0; /* Out may be X: read before writing */
  if ((st = host->ctx_output_allocate(ctx, Out(ctx, "Out"), 0, RILL_INT64, &n, 1, RILL_CPU, 0, &out, &oi))) return st;
  for (int64_t i = 0; i < n; ++i) ((int64_t*)oi.data)[i] = (i == 0 ? first : ((const int64_t*)xi.data)[i]) + 1;
  return NULL;
}
static int32_t Add1Scalar(void* state, const RillScalar* in, RillScalar* out) {
  (void)state;
  if (in[0].dtype != RILL_INT64) return 0;
  int64_t v;
  memcpy(&v, &in[0].bits, sizeof(v));
  v += 100;
  out[0].dtype = RILL_INT64;
  memcpy(&out[0].bits, &v, sizeof(v));
  return 1;
}

/* ---- c_mailbox, c_put, c_take: a task parks ------------------------------------------- */

typedef struct Mailbox {
  atomic_flag lock;
  atomic_int refs;     /* variables sharing this mailbox */
  RillVariable* value; /* a host variable the plugin owns (var_new) */
  int full;
  RillTask* waiter; /* the task parked in c_take, if any */
} Mailbox;
static _Atomic(const RillVarType*) mailbox_type;
#define MAILBOX_TYPE TypeNamed(&mailbox_type, "compat.mailbox")

static void Lock(Mailbox* m) {
  while (atomic_flag_test_and_set_explicit(&m->lock, memory_order_acquire)) {
  }
}
static void Unlock(void* m) { atomic_flag_clear_explicit(&((Mailbox*)m)->lock, memory_order_release); }

static void MailboxDestroy(void* value) {
  Mailbox* m = (Mailbox*)value;
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  host->var_delete(m->value);
  free(m);
}
static void* MailboxCopy(const void* value) {
  Mailbox* m = (Mailbox*)value;
  atomic_fetch_add(&m->refs, 1);
  return m;
}
static Mailbox* BoxArg(RillKernelContext* ctx) {
  return (Mailbox*)host->var_custom(host->ctx_input(ctx, In(ctx, "Box"), 0), MAILBOX_TYPE);
}

static RillStatus* NewMailbox(void* state, RillKernelContext* ctx) {
  (void)state;
  Mailbox* m = (Mailbox*)calloc(1, sizeof(Mailbox));
  atomic_flag_clear(&m->lock);
  atomic_init(&m->refs, 1);
  m->value = host->var_new();
  return host->var_set_custom(host->ctx_output(ctx, Out(ctx, "Out"), 0), MAILBOX_TYPE, m);
}

static RillStatus* Put(void* state, RillKernelContext* ctx) {
  (void)state;
  Mailbox* m = BoxArg(ctx);
  if (!m) return host->status_create(RILL_INVALID_ARGUMENT, "c_put: Box holds no mailbox");
  Lock(m);
  if (m->full) {
    Unlock(m);
    return host->status_create(RILL_FAILED_PRECONDITION, "c_put: the mailbox is full");
  }
  RillStatus* st = host->var_move(m->value, host->ctx_input(ctx, In(ctx, "X"), 0));
  m->full = st == NULL;
  if (m->full && m->waiter) {
    host->task_unpark(m->waiter); /* under the lock: the waiter cannot be gone yet */
    m->waiter = NULL;
  }
  Unlock(m);
  return st;
}

static RillStatus* Take(void* state, RillKernelContext* ctx) {
  (void)state;
  Mailbox* m = BoxArg(ctx);
  if (!m) return host->status_create(RILL_INVALID_ARGUMENT, "c_take: Box holds no mailbox");
  Lock(m);
  while (!m->full) {
    m->waiter = host->task_current();
    RillStatus* st = host->task_park(ctx, "waiting for the mailbox", Unlock, m); /* unlocks once parked */
    Lock(m);
    if (st) { /* the run is ending: undo the wait, pass the reason on */
      m->waiter = NULL;
      Unlock(m);
      return st;
    }
  }
  RillStatus* st = host->var_move(host->ctx_output(ctx, Out(ctx, "Out"), 0), m->value);
  m->full = 0;
  Unlock(m);
  return st;
}

/* ---- c_go, c_loop, c_once: blocks ---------------------------------------------------- */

static RillStatus* Block(RillKernelContext* ctx, int32_t* block) {
  return host->attr_block(host->ctx_op(ctx), "sub_block", block);
}

static RillStatus* GoOp(void* state, RillKernelContext* ctx) {
  (void)state;
  int32_t block = 0;
  RillStatus* st = Block(ctx, &block);
  if (st) return st;
  const int32_t x = In(ctx, "X");
  const size_t n = host->op_input_count(host->ctx_op(ctx), x);
  RillArg bind[16];
  if (n > 16) return Fail("c_go: more than 16 X");
  for (size_t i = 0; i < n; ++i) {
    bind[i].slot = x;
    bind[i].index = (uint32_t)i;
  }
  return host->ctx_go(ctx, block, bind, n);
}

typedef struct Countdown {
  int64_t left;
} Countdown;
static RillStatus* CountDown(void* arg, int32_t* go_on) {
  Countdown* c = (Countdown*)arg;
  *go_on = c->left-- > 0;
  return NULL;
}

static RillStatus* LoopOp(void* state, RillKernelContext* ctx) {
  (void)state;
  int32_t block = 0;
  RillStatus* st = Block(ctx, &block);
  if (st) return st;
  int32_t dtype = -1;
  uint64_t bits = 0;
  if (!host->var_scalar(host->ctx_input(ctx, In(ctx, "Times"), 0), &dtype, &bits) || dtype != RILL_INT64) {
    return host->status_create(RILL_INVALID_ARGUMENT, "c_loop: Times must be an int64 scalar");
  }
  Countdown c;
  memcpy(&c.left, &bits, sizeof(c.left));
  return host->ctx_run_loop(ctx, block, NULL, CountDown, &c);
}

static RillStatus* OnceOp(void* state, RillKernelContext* ctx) {
  (void)state;
  int32_t block = 0;
  RillStatus* st = Block(ctx, &block);
  if (st) return st;
  if ((st = host->ctx_run_block(ctx, block, NULL))) return st;
  RillScope* own = NULL;
  if ((st = host->scope_new_child(host->ctx_scope(ctx), &own))) return st;
  st = host->ctx_run_block(ctx, block, own);
  host->scope_release(own);
  return st;
}

/* ---- c_check: the rest of the table, each answer checked ------------------------------ */

#define CHECK(cond)                                       \
  do {                                                    \
    if (!(cond)) return Fail("c_check: failed: " #cond); \
    ++checks;                                             \
  } while (0)
#define CHECK_OK(call)                           \
  do {                                           \
    RillStatus* st_ = (call);                    \
    if (st_) {                                   \
      host->status_release(st_);                 \
      return Fail("c_check: failed: " #call);    \
    }                                            \
    ++checks;                                    \
  } while (0)

static int Eq(const char* s, size_t len, const char* want) { return len == strlen(want) && memcmp(s, want, len) == 0; }

static RillStatus* Check(void* state, RillKernelContext* ctx) {
  (void)state;
  int64_t checks = 0;
  const RillOpInfo* op = host->ctx_op(ctx);

  /* Statuses and the log. */
  RillStatus* made = host->status_create(RILL_NOT_FOUND, "made here");
  CHECK(host->status_code(made) == RILL_NOT_FOUND);
  CHECK(strcmp(host->status_message(made), "made here") == 0);
  host->status_release(made);
  CHECK(host->status_code(NULL) == RILL_OK);
  host->log(RILL_LOG_DEBUG, "c_check: a debug line");

  /* The op: its type, slots and arguments. */
  CHECK(strcmp(host->op_type(op), "c_check") == 0);
  const int32_t x = host->op_input_slot(op, "X"), out = host->op_output_slot(op, "Out");
  const int32_t rows = host->op_output_slot(op, "Rows");
  CHECK(x >= 0 && out >= 0 && rows >= 0 && host->op_input_slot(op, "Nope") == -1);
  CHECK(host->op_input_count(op, x) == 2 && host->op_output_count(op, rows) == 1 && host->op_input_count(op, -1) == 0);
  CHECK(strcmp(host->op_input_name(op, x, 1), "b") == 0 && host->op_input_name(op, x, 2) == NULL);
  CHECK(strcmp(host->op_output_name(op, out, 0), "out") == 0);

  /* Attributes: the program sets `i` and the blocks; the rest read as the schema's defaults. */
  int64_t i = 0;
  double f = 0;
  int32_t b = 0, blk = -1;
  const char* s = NULL;
  size_t len = 0, count = 0;
  const int64_t* ints = NULL;
  const float* floats = NULL;
  const uint8_t* bools = NULL;
  const int32_t* blks = NULL;
  CHECK_OK(host->attr_int(op, "i", &i));
  CHECK(i == 7);
  CHECK_OK(host->attr_float(op, "f", &f));
  CHECK(f == 0.5);
  CHECK_OK(host->attr_bool(op, "b", &b));
  CHECK(b == 1);
  CHECK_OK(host->attr_string(op, "s", &s, &len));
  CHECK(Eq(s, len, "hi"));
  CHECK_OK(host->attr_ints(op, "ints", &ints, &count));
  CHECK(count == 2 && ints[0] == 1 && ints[1] == -2);
  CHECK_OK(host->attr_floats(op, "floats", &floats, &count));
  CHECK(count == 1 && floats[0] == 1.5f);
  CHECK_OK(host->attr_bools(op, "bools", &bools, &count));
  CHECK(count == 2 && bools[0] == 1 && bools[1] == 0);
  CHECK_OK(host->attr_strings(op, "strings", &count));
  CHECK(count == 2);
  CHECK_OK(host->attr_strings_at(op, "strings", 1, &s, &len));
  CHECK(Eq(s, len, "yz"));
  CHECK_OK(host->attr_block(op, "blk", &blk));
  CHECK(blk == 1);
  CHECK_OK(host->attr_blocks(op, "blks", &blks, &count));
  CHECK(count == 1 && blks[0] == 1);
  RillStatus* wrong = host->attr_float(op, "i", &f);
  CHECK(host->status_code(wrong) == RILL_INVALID_ARGUMENT);
  host->status_release(wrong);
  const RillOpInfo* const* ops = NULL;
  CHECK_OK(host->op_block_ops(op, blk, &ops, &count));
  CHECK(count == 1 && strcmp(host->op_type(ops[0]), "c_add1") == 0);

  /* The context. */
  CHECK(host->ctx_device_id(ctx) == 0);
  RillScope* scope = host->ctx_scope(ctx);
  RillVariable* a = host->ctx_input(ctx, x, 0);
  CHECK(a != NULL && a == host->scope_find_var(scope, "a"));
  CHECK(host->ctx_input(ctx, x, 5) == NULL);

  /* Tensors and LoD: a is fp32 [2, 3] with one level {0, 2}. */
  RillTensor* ta = NULL;
  RillTensorInfo ai = {.struct_size = sizeof(RillTensorInfo)};
  CHECK_OK(host->ctx_input_tensor(ctx, x, 0, &ta, &ai));
  CHECK(ai.dtype == RILL_FP32 && ai.ndim == 2 && ai.dims[0] == 2 && ai.dims[1] == 3 && ai.numel == 6 &&
        ai.device_type == RILL_CPU && ai.data != NULL);
  CHECK(host->tensor_lod_levels(ta) == 1);
  const uint64_t* level = host->tensor_lod_level(ta, 0, &count);
  CHECK(count == 2 && level[0] == 0 && level[1] == 2);
  CHECK(host->tensor_lod_level(ta, 1, &count) == NULL && count == 0);

  /* Scalars: b is int64 [1] 41. */
  RillVariable* vb = host->ctx_input(ctx, x, 1);
  int32_t dtype = -1;
  uint64_t bits = 0;
  CHECK(host->var_is_initialized(vb) && host->var_scalar(vb, &dtype, &bits) && dtype == RILL_INT64 && bits == 41);
  CHECK(!host->var_scalar(a, &dtype, &bits));

  /* Variables: copy, swap, describe, scope_var, retain. */
  RillScope* held = host->scope_retain(scope);
  RillVariable* made_var = host->scope_var(held, "c_check.made");
  CHECK(made_var != NULL && !host->var_is_initialized(made_var));
  CHECK(host->scope_find_var(scope, "c_check.made") == made_var);
  CHECK_OK(host->var_copy(made_var, vb));
  CHECK(host->var_scalar(made_var, &dtype, &bits) && bits == 41);
  CHECK_OK(host->var_set_scalar(made_var, RILL_INT32, 5));
  RillVariable* other = host->var_new();
  CHECK_OK(host->var_set_scalar(other, RILL_BOOL, 1));
  CHECK_OK(host->var_swap(made_var, other));
  CHECK(host->var_scalar(made_var, &dtype, &bits) && dtype == RILL_BOOL && bits == 1);
  CHECK(host->var_scalar(other, &dtype, &bits) && dtype == RILL_INT32 && bits == 5);
  char text[64];
  host->var_describe(other, text, sizeof(text));
  CHECK(strcmp(text, "int32[1] {5}") == 0);
  host->var_delete(other);
  host->scope_release(held);

  /* Selected rows, in the output Rows; a LoD level set on its value. */
  RillVariable* vr = host->ctx_output(ctx, rows, 0);
  const int64_t picked[] = {4, 1};
  RillTensor* value = NULL;
  CHECK_OK(host->var_set_selected_rows(vr, picked, 2, 10, &value));
  const int64_t vdims[] = {2, 1};
  void* vdata = NULL;
  CHECK_OK(host->tensor_allocate(value, RILL_FP32, vdims, 2, RILL_CPU, 0, &vdata));
  ((float*)vdata)[0] = 3;
  ((float*)vdata)[1] = 4;
  const uint64_t offsets[] = {0, 1, 2};
  CHECK_OK(host->tensor_set_lod_level(value, 0, offsets, 3));
  CHECK(host->var_is_selected_rows(vr) && !host->var_is_selected_rows(a));
  const int64_t* got_rows = NULL;
  int64_t height = 0;
  RillTensor* got_value = NULL;
  CHECK_OK(host->var_selected_rows(vr, &got_rows, &count, &height, &got_value));
  CHECK(count == 2 && got_rows[0] == 4 && got_rows[1] == 1 && height == 10 && got_value == value);
  CHECK(host->tensor_lod_levels(value) == 1);

  /* The result: the count, itself included. */
  RillTensor* to = NULL;
  RillTensorInfo oi = {.struct_size = sizeof(RillTensorInfo)};
  const int64_t one = 1;
  ++checks;
  RillStatus* st = host->ctx_output_allocate(ctx, out, 0, RILL_INT64, &one, 1, RILL_CPU, 0, &to, &oi);
  if (st) return st;
  *(int64_t*)oi.data = checks;
  return NULL;
}

/* ---- Registration ----------------------------------------------------------------------- */

static RillStatus* Register(RillRegistrar* reg, const RillOpSchema* schema, RillKernelDef kernel) {
  RillStatus* st = host->register_op(reg, schema);
  if (st) return st;
  kernel.struct_size = sizeof(RillKernelDef);
  kernel.op_type = schema->type;
  kernel.device_type = RILL_CPU;
  return host->register_kernel(reg, &kernel);
}

#define SCHEMA(type, doc, in, n_in, out, n_out, attrs, n_attrs, dtype_source) \
  {sizeof(RillOpSchema), type, doc, in, n_in, out, n_out, attrs, n_attrs, dtype_source, NULL, NULL, NULL}

static RillStatus* Init(const RillHostApi* h, RillRegistrar* reg) {
  host = h;
  RillStatus* st;
  RillVarTypeDef box = {sizeof(RillVarTypeDef), "compat.box", BoxDestroy, BoxDescribe, BoxCopy};
  RillVarTypeDef mailbox = {sizeof(RillVarTypeDef), "compat.mailbox", MailboxDestroy, NULL, MailboxCopy};
  if ((st = h->register_var_type(reg, &box)) || (st = h->register_var_type(reg, &mailbox))) return st;

  static const RillSlotDef x[] = {{"X", 0, NULL}};
  static const RillSlotDef xs[] = {{"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_OPTIONAL, NULL}};
  static const RillSlotDef out[] = {{"Out", 0, NULL}};
  static const RillSlotDef box_in[] = {{"Box", 0, NULL}};
  static const RillSlotDef put_in[] = {{"Box", 0, NULL}, {"X", 0, "moved into the mailbox"}};
  static const RillSlotDef times[] = {{"Times", 0, "int64 [1]"}};
  static const RillSlotDef check_in[] = {{"X", RILL_SLOT_DUPLICABLE, NULL}};
  static const RillSlotDef check_out[] = {{"Out", 0, NULL}, {"Rows", 0, NULL}};
  static const RillAttrDef factor[] = {{"factor", RILL_ATTR_FLOAT, 0, "2", "multiplier"}};
  static const RillAttrDef block[] = {{"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, NULL, NULL}};
  static const RillAttrDef check_attrs[] = {
      {"i", RILL_ATTR_INT, RILL_ATTR_REQUIRED, NULL, NULL},
      {"f", RILL_ATTR_FLOAT, 0, "0.5", NULL},
      {"b", RILL_ATTR_BOOLEAN, 0, "true", NULL},
      {"s", RILL_ATTR_STRING, 0, "hi", NULL},
      {"ints", RILL_ATTR_INTS, 0, "[1, -2]", NULL},
      {"floats", RILL_ATTR_FLOATS, 0, "[1.5]", NULL},
      {"bools", RILL_ATTR_BOOLEANS, 0, "[true, false]", NULL},
      {"strings", RILL_ATTR_STRINGS, 0, "[\"x\", \"yz\"]", NULL},
      {"blk", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, NULL, NULL},
      {"blks", RILL_ATTR_BLOCKS, RILL_ATTR_REQUIRED, NULL, NULL},
  };
  const RillOpSchema schemas[] = {
      SCHEMA("c_scale", "Out = X * factor", x, 1, out, 1, factor, 1, "X"),
      SCHEMA("c_box", "Out = a compat.box holding sum(X)", x, 1, out, 1, NULL, 0, NULL),
      SCHEMA("c_unbox", "Out = [sum] from box X", x, 1, out, 1, NULL, 0, NULL),
      SCHEMA("c_add1", "Out = X + 1; its scalar path adds 100", x, 1, out, 1, NULL, 0, "X"),
      SCHEMA("c_mailbox", "Out = a new, empty mailbox", NULL, 0, out, 1, NULL, 0, NULL),
      SCHEMA("c_put", "moves X into mailbox Box", put_in, 2, NULL, 0, NULL, 0, NULL),
      SCHEMA("c_take", "Out = the value in Box, waiting for one", box_in, 1, out, 1, NULL, 0, NULL),
      SCHEMA("c_go", "starts sub_block as a go block binding each X", xs, 1, NULL, 0, block, 1, NULL),
      SCHEMA("c_loop", "runs sub_block Times times", times, 1, NULL, 0, block, 1, NULL),
      SCHEMA("c_once", "runs sub_block as its sub-block, then in a scope of its own", NULL, 0, NULL, 0, block, 1,
             NULL),
      SCHEMA("c_check", "checks every other call of ABI 1.0", check_in, 1, check_out, 2, check_attrs, 10, NULL),
  };
  RillKernelDef kernels[11];
  memset(kernels, 0, sizeof(kernels));
  for (int k = 0; k < 11; ++k) kernels[k].dtype = RILL_ANY_DTYPE;
  kernels[0].dtype = RILL_FP32;
  kernels[0].user_data = (void*)"scale user data";
  kernels[0].create = ScaleCreate;
  kernels[0].compute = Scale;
  kernels[0].destroy = ScaleDestroy;
  kernels[1].compute = BoxOp;
  kernels[2].compute = UnboxOp;
  kernels[3].dtype = RILL_INT64;
  kernels[3].compute = Add1;
  kernels[3].scalar = Add1Scalar;
  kernels[4].compute = NewMailbox;
  kernels[5].compute = Put;
  kernels[6].compute = Take;
  kernels[7].compute = GoOp;
  kernels[8].compute = LoopOp;
  kernels[9].compute = OnceOp;
  kernels[10].compute = Check;
  for (int k = 0; k < 11; ++k) {
    if ((st = Register(reg, &schemas[k], kernels[k]))) return st;
  }
  return NULL;
}

RILL_EXPORT const RillPlugin* RillGetPlugin(void) {
  static const RillPlugin plugin = {sizeof(RillPlugin), 1, "compat_1_0", "1.0", Init};
  return &plugin;
}
