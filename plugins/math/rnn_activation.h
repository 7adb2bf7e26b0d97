// plugins/math/rnn_activation.h — the activations the recurrent ops (lstm, gru, gru_unit) take
// by name or by Paddle's enum in their attributes, with Paddle's formulas (math/detail/activation_functions.h):
//
//   sigmoid(x) = 1 / (1 + exp(-clamp(x, -40, 13)))
//   tanh(x)    = 2 / (1 + exp(min(-2x, 40))) - 1
//   relu(x)    = max(x, 0),   identity(x) = x
//
// The clamps are part of the contract: Paddle's outputs (and its tests' references)
// saturate there, a sigmoid at 1 / (1 + e^-13) rather than nearer 1. Each gradient is taken
// from the activation's output y, as the recurrent ops keep their activated gates:
// sigmoid' = y (1 - y), tanh' = 1 - y^2, relu' = [y > 0], identity' = 1.
#ifndef RILL_PLUGINS_MATH_RNN_ACTIVATION_H_
#define RILL_PLUGINS_MATH_RNN_ACTIVATION_H_

#include <cstdint>
#include <string>

#include "kernels.h"

namespace rill::math {

enum class RnnActivation { kIdentity, kSigmoid, kTanh, kRelu };

// The activation attribute `attr` names; a clear error for any other name.
inline RnnActivation RnnActivationOf(KernelContext& ctx, const char* attr) {
  const std::string name = ctx.Attr<std::string>(attr);
  if (name == "sigmoid") return RnnActivation::kSigmoid;
  if (name == "tanh") return RnnActivation::kTanh;
  if (name == "relu") return RnnActivation::kRelu;
  if (name == "identity" || name.empty()) return RnnActivation::kIdentity;
  throw Error(std::string(attr) + " '" + name + "' is none of sigmoid, tanh, relu, identity");
}

// The activation an int attribute `attr` names by Paddle's enum (gru_unit's): 0 identity,
// 1 sigmoid, 2 tanh, 3 relu; a clear error for any other value.
inline RnnActivation RnnActivationOfIndex(KernelContext& ctx, const char* attr) {
  const int32_t index = ctx.Attr<int32_t>(attr);
  switch (index) {
    case 0: return RnnActivation::kIdentity;
    case 1: return RnnActivation::kSigmoid;
    case 2: return RnnActivation::kTanh;
    case 3: return RnnActivation::kRelu;
  }
  throw Error(std::string(attr) + " " + std::to_string(index) +
              " is none of 0 (identity), 1 (sigmoid), 2 (tanh), 3 (relu)");
}

// y[0, n) = act(x[0, n)); y may be x.
template <class T> void Activate(RnnActivation act, const T* x, int64_t n, T* y) {
  ConstVecMap<T> in(x, n);
  VecMap<T> out(y, n);
  switch (act) {
    case RnnActivation::kSigmoid: out = T(1) / (T(1) + (-in.max(T(-40)).min(T(13))).exp()); break;
    case RnnActivation::kTanh: out = T(2) / (T(1) + (T(-2) * in).min(T(40)).exp()) - T(1); break;
    case RnnActivation::kRelu: out = in.max(T(0)); break;
    case RnnActivation::kIdentity:
      if (y != x) out = in;
      break;
  }
}

// dx[0, n) = dy * act'(x), the derivative from the output y = act(x); dx may be dy.
template <class T> void ActivationGrad(RnnActivation act, const T* dy, const T* y, int64_t n, T* dx) {
  ConstVecMap<T> g(dy, n), out(y, n);
  VecMap<T> d(dx, n);
  switch (act) {
    case RnnActivation::kSigmoid: d = g * out * (T(1) - out); break;
    case RnnActivation::kTanh: d = g * (T(1) - out * out); break;
    case RnnActivation::kRelu: d = (out > T(0)).select(g, T(0)); break;
    case RnnActivation::kIdentity:
      if (dx != dy) d = g;
      break;
  }
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_RNN_ACTIVATION_H_
