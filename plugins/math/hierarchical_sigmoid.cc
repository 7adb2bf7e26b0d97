// hierarchical_sigmoid: the loss of a classifier whose classes are the leaves of a binary
// tree (word2vec's hierarchical softmax), with Paddle's contract
// (paddle/fluid/operators/hierarchical_sigmoid_op.*, math/matrix_bit_code.*).
//
// Class c's path runs through the tree's inner nodes, each with a row of W (and of Bias):
// by default the complete binary tree over num_classes leaves (c's code is c + num_classes:
// at level j its node is (code >> (j + 1)) - 1 and the branch taken bit j of the code, for
// the bits below the highest); or a custom tree given per example as PathTable (the nodes,
// ending at a negative one) and PathCode (the branches). With p_j = clip(X[i] . W[node_j] +
// Bias[node_j], -40, 40) over the path and p_j = 0 past it (to code_length columns),
// Out[i] = sum over all columns of log(1 + exp(p_j)) - sum over the path of bit_j * p_j
// (the columns past the path add log 2 each, as Paddle's do). PreOut keeps log(1 + exp(p)).
// The gradient, sigmoid(p_j) - bit_j on the path, reaches X, W and Bias through the path's
// nodes only (the clip is not differentiated, as in Paddle); with is_sparse, W@GRAD is
// SelectedRows of those nodes' rows.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels.h"
#include "ops.h"
#include "parallel_for.h"
#include "reduction_loops.h"
#include "selected_rows.h"

namespace rill::math {
namespace {

// Each example's path: its nodes and branches, and the table's width (code_length).
struct Paths {
  int64_t width = 0;
  std::vector<std::vector<int64_t>> nodes;
  std::vector<std::vector<bool>> bits;
};

// The position of the highest set bit, from 1 (0 for none).
int64_t HighestBit(uint64_t v) {
  int64_t n = 0;
  for (; v != 0; v >>= 1) ++n;
  return n;
}

Paths PathsOf(KernelContext& ctx, int64_t rows, int64_t inner_nodes) {
  Tensor label = ctx.Input("Label");
  if (label.dtype() != RILL_INT64 || label.numel() != rows) {
    throw Error("Label must be int64 with one class per row of X (" + std::to_string(rows) + "), is " +
                DataTypeName(label.dtype()) + " " + DimsString(label.dims()));
  }
  const int64_t* labels = label.data<int64_t>();
  const int64_t classes = ctx.Attr<int64_t>("num_classes");
  Paths p;
  p.nodes.resize(static_cast<size_t>(rows));
  p.bits.resize(static_cast<size_t>(rows));
  if (ctx.HasInput("PathTable")) {
    Tensor table = ctx.Input("PathTable"), code = ctx.Input("PathCode");
    if (table.ndim() != 2 || table.dims()[0] != rows || code.dims() != table.dims() || table.dtype() != RILL_INT64 ||
        code.dtype() != RILL_INT64) {
      throw Error("PathTable and PathCode must be int64 [N, code_length] with N = " + std::to_string(rows) + ", are " +
                  DimsString(table.dims()) + " and " + DimsString(code.dims()));
    }
    p.width = table.dims()[1];
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < p.width && table.data<int64_t>()[i * p.width + j] >= 0; ++j) {
        const int64_t node = table.data<int64_t>()[i * p.width + j];
        if (node >= inner_nodes) {
          throw Error("PathTable[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(node) +
                      " is not a row of W (" + std::to_string(inner_nodes) + ")");
        }
        p.nodes[static_cast<size_t>(i)].push_back(node);
        p.bits[static_cast<size_t>(i)].push_back(code.data<int64_t>()[i * p.width + j] != 0);
      }
    }
    return p;
  }
  p.width = HighestBit(static_cast<uint64_t>(classes - 1));
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw Error("Label[" + std::to_string(i) + "] = " + std::to_string(labels[i]) + " is not a class in [0, " +
                  std::to_string(classes) + ")");
    }
    const auto code = static_cast<uint64_t>(labels[i] + classes);
    for (int64_t j = 0; j + 1 < HighestBit(code); ++j) {
      p.nodes[static_cast<size_t>(i)].push_back(static_cast<int64_t>(code >> (j + 1)) - 1);
      p.bits[static_cast<size_t>(i)].push_back(((code >> j) & 1) != 0);
    }
  }
  return p;
}

template <class T> void HierarchicalSigmoid(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), w = ctx.Input("W");
  if (x.ndim() != 2 || w.ndim() != 2 || w.dims()[1] != x.dims()[1]) {
    throw Error("X must be [N, D] and W [nodes, D]; are " + DimsString(x.dims()) + " and " + DimsString(w.dims()));
  }
  const int64_t rows = x.dims()[0], dim = x.dims()[1];
  const Paths p = PathsOf(ctx, rows, w.dims()[0]);
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<T>() : nullptr;
  T* out = ctx.AllocateOutput<T>("Out", {rows, 1});
  T* pre = ctx.AllocateOutput<T>("PreOut", {rows, p.width});
  // The rows in chunks on the passes' team, each writing its own Out and PreOut (the bytes:
  // the W rows the paths read).
  const double bytes = sizeof(T) * static_cast<double>(rows) * static_cast<double>(p.width * dim);
  ParallelFor(rows, bytes, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const auto& nodes = p.nodes[static_cast<size_t>(i)];
      double loss = 0;
      for (int64_t j = 0; j < p.width; ++j) {
        double z = 0;
        if (j < static_cast<int64_t>(nodes.size())) {
          const int64_t node = nodes[static_cast<size_t>(j)];
          z = bias ? static_cast<double>(bias[node]) : 0.0;
          z += reduction::DotInDoubleFor<T>()(px + i * dim, pw + node * dim, dim);
          z = std::min(40.0, std::max(-40.0, z));
          if (p.bits[static_cast<size_t>(i)][static_cast<size_t>(j)]) loss -= z;
        }
        const double soft = std::log1p(std::exp(z));
        pre[i * p.width + j] = static_cast<T>(soft);
        loss += soft;
      }
      out[i] = static_cast<T>(loss);
    }
  });
}

template <class T> void HierarchicalSigmoidGrad(KernelContext& ctx) {
  Tensor x = ctx.Input("X"), w = ctx.Input("W");
  const int64_t rows = x.dims()[0], dim = x.dims()[1];
  const Paths p = PathsOf(ctx, rows, w.dims()[0]);
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* pre = ctx.Input("PreOut").data<T>();
  const T* out_grad = ctx.Input("Out@GRAD").data<T>();
  // d Out / d p on the path: sigmoid(p) - bit, where sigmoid(p) = 1 - exp(-PreOut).
  std::vector<std::vector<double>> g(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < p.nodes[static_cast<size_t>(i)].size(); ++j) {
      const double sigmoid = 1.0 - std::exp(-static_cast<double>(pre[i * p.width + static_cast<int64_t>(j)]));
      g[static_cast<size_t>(i)].push_back((sigmoid - (p.bits[static_cast<size_t>(i)][j] ? 1.0 : 0.0)) * out_grad[i]);
    }
  }
  if (ctx.HasOutput("X@GRAD")) {
    T* dx = ctx.AllocateOutput<T>("X@GRAD", x.dims());
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t d = 0; d < dim; ++d) {
        double sum = 0;
        for (size_t j = 0; j < g[static_cast<size_t>(i)].size(); ++j) {
          sum += g[static_cast<size_t>(i)][j] * pw[p.nodes[static_cast<size_t>(i)][j] * dim + d];
        }
        dx[i * dim + d] = static_cast<T>(sum);
      }
    }
  }
  if (ctx.HasOutput("W@GRAD")) {
    std::vector<int64_t> touched;
    for (const auto& nodes : p.nodes) touched.insert(touched.end(), nodes.begin(), nodes.end());
    TableGradient<T> dw(ctx.OutputVar("W@GRAD"), std::move(touched), w.dims()[0], dim, ctx.Attr<bool>("is_sparse"));
    for (int64_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < g[static_cast<size_t>(i)].size(); ++j) {
        T* row = dw.Row(p.nodes[static_cast<size_t>(i)][j]);
        for (int64_t d = 0; d < dim; ++d) row[d] += static_cast<T>(g[static_cast<size_t>(i)][j] * px[i * dim + d]);
      }
    }
  }
  if (ctx.HasOutput("Bias@GRAD")) {
    Tensor bias = ctx.Input("Bias");
    T* db = ctx.AllocateOutput<T>("Bias@GRAD", bias.dims());
    std::fill(db, db + bias.numel(), T(0));
    for (int64_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < g[static_cast<size_t>(i)].size(); ++j) {
        db[p.nodes[static_cast<size_t>(i)][j]] += static_cast<T>(g[static_cast<size_t>(i)][j]);
      }
    }
  }
}

}  // namespace

void RegisterHierarchicalSigmoid(Registrar& r) {
  const OpSchema hsigmoid =
      OpSchema("hierarchical_sigmoid")
          .Doc(
              "Out = the hierarchical-sigmoid loss of each row of X for its Label class, a leaf of the complete "
              "binary tree over num_classes leaves (or of the custom tree PathTable and PathCode give), [N, 1]; "
              "PreOut = log(1 + exp(p)) of each node's clipped score on the path (0 past it). As Paddle's.")
          .Input("X", "[N, D]")
          .Input("W", "[inner nodes, D]: num_classes - 1 for the default tree")
          .Input("Label", "int64 [N, 1]")
          .Input("PathTable", "int64 [N, code_length], each example's nodes, ending at a negative one",
                 RILL_SLOT_OPTIONAL)
          .Input("PathCode", "int64 [N, code_length], each node's branch", RILL_SLOT_OPTIONAL)
          .Input("Bias", "[inner nodes, 1]", RILL_SLOT_OPTIONAL)
          .Output("Out", "[N, 1]")
          .Output("PreOut", "[N, code_length]")
          .Output("W_Out", "Paddle's remote-prefetch output (not written)", RILL_SLOT_OPTIONAL)
          .RequiredAttr("num_classes", RILL_ATTR_INT, "the number of classes (leaves)")
          .Attr("is_sparse", false, "W@GRAD as SelectedRows of the path nodes' rows")
          .Attr("remote_prefetch", false, "Paddle's distributed prefetch (no effect)")
          .KernelDtypeFrom("X")
          .Grad("hierarchical_sigmoid_grad", "X,W,Label,PathTable,PathCode,Bias,PreOut,Out@GRAD", "X,W,Bias");
  r.Op(hsigmoid);
  r.Op(hsigmoid.MakeGradSchema());
  RegisterCpu<float, double>(r, "hierarchical_sigmoid", [](auto t) { return &HierarchicalSigmoid<decltype(t)>; });
  RegisterCpu<float, double>(r, "hierarchical_sigmoid_grad",
                             [](auto t) { return &HierarchicalSigmoidGrad<decltype(t)>; });
}

}  // namespace rill::math
