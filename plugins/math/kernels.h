// plugins/math/kernels.h — helpers shared by the math kernels: registering one kernel
// template for a list of dtypes, and Eigen views over tensors.
#ifndef RILL_PLUGINS_MATH_KERNELS_H_
#define RILL_PLUGINS_MATH_KERNELS_H_

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "parallel_for.h"
#include "rill/sdk.hpp"
#include "shape.h"

namespace rill::math {

// Registers `pick(T{})` — a KernelFn for element type T — as the CPU kernel of `op` for
// every T in Ts:  RegisterCpu<float, double>(r, "relu", [](auto t) { return &Relu<decltype(t)>; });
template <class... Ts, class Pick> void RegisterCpu(Registrar& r, const char* op, Pick pick) {
  (r.Kernel(op, RILL_CPU, DataTypeOf<Ts>::value, pick(Ts{})), ...);
}

// The same for a kernel class K<T> (Registrar::StatefulKernel), for every T in Ts:
// RegisterCpuStateful<Ts...>(r, "elementwise_add", KernelClass<Elementwise, Add>{}).
template <class T> struct TypeTag { using type = T; };
template <class... Ts, class Pick> void RegisterCpuStateful(Registrar& r, const char* op, Pick pick) {
  (r.StatefulKernel<typename decltype(pick(Ts{}))::type>(op, RILL_CPU, DataTypeOf<Ts>::value), ...);
}

template <class T> using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T> using ConstVecMap = Eigen::Map<const Vec<T>>;
template <class T> using VecMap = Eigen::Map<Vec<T>>;
template <class T> using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using ConstMatrixMap = Eigen::Map<const Matrix<T>>;
template <class T> using MatrixMap = Eigen::Map<Matrix<T>>;

// Scratch space for `n` elements of T (std::vector<bool> has no data(), so not vectors).
template <class T> std::unique_ptr<T[]> Scratch(int64_t n) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(n)]);
}

// Fluid's ShareLoD: output `out` takes input `in`'s LoD, for an op whose output rows are its
// input's rows in order (an activation, an embedding of each id), so the sequences those
// rows pack carry through it.
inline void ShareLoD(KernelContext& ctx, SlotRef in, SlotRef out) { ctx.Output(out).set_lod(ctx.Input(in).lod()); }

// Whether the op names a variable for input (output) `slot`: an optional slot may be absent,
// or name RILL_EMPTY_VAR_NAME, as a gradient op's output does for an input needing no gradient.
inline bool HasInputVariable(KernelContext& ctx, const char* slot) {
  return ctx.HasInput(slot) && ctx.op().InputName(slot) != RILL_EMPTY_VAR_NAME;
}
inline bool HasOutputVariable(KernelContext& ctx, const char* slot) {
  return ctx.HasOutput(slot) && ctx.op().OutputName(slot) != RILL_EMPTY_VAR_NAME;
}

// Input `slot` when the op names a variable for it (HasInputVariable), else nothing.
inline std::optional<Tensor> OptionalInput(KernelContext& ctx, const char* slot) {
  if (!HasInputVariable(ctx, slot)) return std::nullopt;
  return ctx.Input(slot);
}

// A tensor's elements as a flat Eigen array.
template <class T> ConstVecMap<T> Flat(const Tensor& t) { return {t.data<T>(), t.numel()}; }

// Whether output `out` is the same variable as one of the arguments of the input slots
// `inputs` (a program may write an op's result over its operand): allocating it may then
// free what is still to be read.
inline bool OutputIsInput(KernelContext& ctx, const char* out, std::initializer_list<const char*> inputs) {
  RillVariable* o = ctx.OutputVar(out).handle();
  for (const char* in : inputs) {
    for (size_t i = 0; i < ctx.op().InputCount(in); ++i) {
      if (o == ctx.InputVar(in, i).handle()) return true;
    }
  }
  return false;
}

// Runs `write(p)`, which fills output `out` of `dims` at p, straight into the output, or,
// when it is one of `inputs`, into scratch first and then into the output.
template <class T, class Write>
void WriteOutput(KernelContext& ctx, const char* out, std::initializer_list<const char*> inputs,
                 const std::vector<int64_t>& dims, Write write) {
  if (!OutputIsInput(ctx, out, inputs)) return write(ctx.AllocateOutput<T>(out, dims));
  const int64_t n = CheckedCount(dims, sizeof(T), out);
  std::unique_ptr<T[]> aside = Scratch<T>(n);
  write(aside.get());
  ParallelCopy(aside.get(), ctx.AllocateOutput<T>(out, dims), static_cast<size_t>(n) * sizeof(T));
}

// The same for an output of any dtype, filled as bytes by `write(char* p)`: the kernels
// that move elements without reading them (slice, tile, flip, multiplex, ...).
template <class Write>
void WriteOutputBytes(KernelContext& ctx, const char* out, std::initializer_list<const char*> inputs, int32_t dtype,
                      const std::vector<int64_t>& dims, Write write) {
  if (!OutputIsInput(ctx, out, inputs)) return write(static_cast<char*>(ctx.Output(out).Allocate(dtype, dims)));
  const size_t bytes = static_cast<size_t>(CheckedCount(dims, DataTypeSize(dtype), out)) * DataTypeSize(dtype);
  std::vector<char> aside(bytes);
  write(aside.data());
  ParallelCopy(aside.data(), ctx.Output(out).Allocate(dtype, dims), bytes);
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_KERNELS_H_
