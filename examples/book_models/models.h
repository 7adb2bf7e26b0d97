// examples/book_models/models.h — Paddle's book models as Rill programs, written with the
// C++ builders at any size: recognize_digits' MLP and conv net (Paddle book chapter 2)
// and a small residual net. Each takes images "img" [N, C, H, W] (fp32) and gives class
// probabilities "prob" [N, classes]. The tests train them at small sizes; bench/
// model_compare.py times them at the book's sizes against the same nets in PyTorch.
#ifndef RILL_EXAMPLES_BOOK_MODELS_MODELS_H_
#define RILL_EXAMPLES_BOOK_MODELS_MODELS_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/program/builder.h"
#include "core/registry/registry.h"
#include "core/runtime/scope.h"

namespace rill::examples {

struct BookModel {
  std::vector<int64_t> image;  // [C, H, W] of one input image
  int64_t classes = 0;
  // Trained parameters (name, dims), in the order the program declares them.
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  // batch_norm's running means and variances (name, channels): saved, not trained.
  std::vector<std::pair<std::string, int64_t>> running;
  // Appends the forward pass from "img" to "prob"; batch_norm in inference mode when
  // is_test.
  std::function<void(core::BlockBuilder&, bool is_test)> forward;
};

// recognize_digits' MLP: fc layers of `hidden` sizes with relu, then fc and softmax.
BookModel Mlp(std::vector<int64_t> image, std::vector<int64_t> hidden, int64_t classes);

// recognize_digits' conv net: two simple_img_conv_pools (conv2d of `kernel` with
// `padding`, bias and relu, then 2x2 max pooling), batch_norm between them, and fc with
// softmax. The book's: image {1, 28, 28}, filters {20, 50}, kernel 5, padding 0, 10 classes.
BookModel ConvNet(std::vector<int64_t> image, std::pair<int64_t, int64_t> filters, int64_t kernel, int64_t padding,
                  int64_t classes);

// A residual net: a stem (3x3 conv, batch_norm, relu) to `channels`, `blocks` residual
// blocks (conv-bn-relu, conv-bn, plus the shortcut, relu), global average pooling, fc and
// softmax.
BookModel ResidualNet(std::vector<int64_t> image, int64_t channels, int blocks, int64_t classes);

// The training program: the forward pass, cross_entropy against "label" (int64 [N, 1]),
// its mean "loss", top_k and "acc"uracy, the backward pass (AppendBackward) and an Adam
// update of every parameter, its state in <param>_m1, _m2, _b1, _b2 and its rate in "lr".
proto::ProgramDesc TrainingProgram(const BookModel& m, const core::Registry& registry);

// The inference program save_inference_model writes: feed "img", the forward pass with
// is_test, fetch "prob"; parameters and running statistics persistable.
proto::ProgramDesc InferenceProgram(const BookModel& m);

// Sets what a startup program would: parameters drawn from `rng` (scales 1, biases 0,
// weights N(0, scale^2) with scale = sqrt(2 / fan_in)), Adam's state, running means 0 and
// variances 1, and "lr".
void Initialize(const BookModel& m, core::Scope& scope, float lr, std::mt19937& rng);

// What save_inference_model saves: the parameters, then the running statistics.
std::vector<std::string> SavedVariables(const BookModel& m);

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_BOOK_MODELS_MODELS_H_
