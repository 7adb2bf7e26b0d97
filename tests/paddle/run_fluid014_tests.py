"""Runs Fluid 0.14's own Python tests on rill.fluid and says which pass.

usage: PADDLE_SRC=/path/to/Paddle-0.14 /usr/bin/python3 tests/paddle/run_fluid014_tests.py [--build BUILD]
           [--json FILE] [--verbose] [test_NAME.py ...]

PADDLE_SRC is a Paddle checkout at the v0.14.0 tag (only python/paddle/fluid/tests is read,
from where it is: nothing of Paddle's is copied; `git archive v0.14.0 python/paddle/fluid/tests`
of a Paddle clone is enough). Those tests are Python 2: each file, and each module it
imports from its own directory, is converted to Python 3 as it is imported (harness.py).
They run with the stand-in `paddle` package (standin/), whose paddle.fluid is rill.fluid.
Without file names it runs the files of Fluid's own API (FILES below) and the book's
chapters it can run (BOOK_FILES; name one as book/test_NAME.py). It prints each file's
passed, failed and skipped methods, the skips by reason, and the totals; exit status 0
when no method failed.
"""
import os
import sys

import harness
from run_op_tests import DIVERGENCES as PADDLE_21_DIVERGENCES

# Fluid 0.14's tests of rill.fluid's API: unittests/ and, for four, tests/ itself.
FILES = """test_array_read_write_op test_calc_gradient test_conditional_block test_const_value test_debugger
test_default_scope_funcs test_dist_transpiler test_executor_and_mul test_feed_fetch_method test_fetch_var
test_fill_constant_op test_framework_debug_str test_get_places_op test_inference_model_io test_initializer
test_layers test_learning_rate_scheduler test_math_op_patch test_memory_optimization_transpiler
test_network_with_dtype test_operator_desc test_optimizer test_parameter test_print_op test_profiler test_program
test_protobuf_descs test_registry test_regularizer test_scope test_slice_var test_switch test_tensor
test_unique_name test_variable test_while_op test_dyn_rnn test_dynrnn_gradient_check test_dynrnn_static_input
test_lod_tensor_array test_shrink_rnn_memory test_split_and_merge_lod_tensor_op test_recurrent_op""".split()
TOP_LEVEL_FILES = "test_data_feeder test_error_clip test_gradient_clip test_python_operator_overriding".split()
# The book's chapters, low-level and high-level API (under book/): those that need no
# sequences; understand_sentiment's conv, stacked-LSTM and DynamicRNN nets (Paddle 0.14
# names the low-level file notest_ and skips its RNN methods); recommender_system and
# label_semantic_roles; machine_translation (DynamicRNN training, beam-search decoding) and
# its RNN encoder-decoder.
BOOK_FILES = """test_fit_a_line test_recognize_digits test_image_classification test_word2vec notest_understand_sentiment
test_recommender_system test_label_semantic_roles test_machine_translation test_rnn_encoder_decoder
high-level-api/machine_translation/test_machine_translation
high-level-api/understand_sentiment/test_understand_sentiment_conv
high-level-api/understand_sentiment/test_understand_sentiment_stacked_lstm
high-level-api/understand_sentiment/test_understand_sentiment_dynamic_rnn
high-level-api/recommender_system/test_recommender_system_newapi
high-level-api/label_semantic_roles/test_label_semantic_roles_newapi
high-level-api/fit_a_line/test_fit_a_line high-level-api/recognize_digits/test_recognize_digits_conv
high-level-api/recognize_digits/test_recognize_digits_mlp high-level-api/image_classification/test_image_classification_resnet
high-level-api/image_classification/test_image_classification_vgg high-level-api/word2vec/test_word2vec_new_api""".split()

# Methods whose failure is a deliberate difference, each with its reason (harness.py).
DIVERGENCES = {
    "test_layers.TestBook.test_label_smooth":
        "Paddle 2.1 refuses one_hot of a float32 label (its test_one_hot_op asserts the TypeError); Rill keeps 2.1's rule",
    "test_layers.TestBook.test_linear_chain_crf":
        "Paddle 2.1 refuses linear_chain_crf of an int32 label (its layer checks for int64, the kernel's only "
        "label type); Rill keeps 2.1's rule",
    "test_layers.TestBook.test_mean_iou":
        "Paddle 2.1 refuses mean_iou of float32 predictions (its test_mean_iou asserts the TypeError); Rill keeps 2.1's",
    "test_layers.TestBook.test_simple_conv2d":
        "Paddle 2.1 refuses conv2d of an int32 image (its test_conv2d_op asserts the TypeError); Rill keeps 2.1's",
    "test_operator_desc.TestOperator.test_error_type":
        "asserts 0.14's exact messages: its typo 'initilized' (Paddle 2.1 and Rill say 'initialized'), and "
        "an unregistered op as a ValueError; Rill's is a NotFoundError (a LookupError) naming the loaded "
        "plugins",
    "test_dist_transpiler.TestDistTranspiler.test_transpiler":
        "asserts 0.14's exact trainer and pserver op lists (split_byref, concat, one send per block); Rill's "
        "transpiler places each variable whole and writes one send and one recv (core/program/transpiler.h)",
    "test_gradient_clip":
        "its check leaves each gradient list's first entry out of the norms it compares, and 0.14's clone lists "
        "its parameters in its C++ unordered_map's order, so on Paddle the two lists leave out different "
        "gradients and the check holds by that accident; Rill's clone keeps the order. With every gradient "
        "counted, Rill's clipped global norm is min(norm, clip) on each of its 5 batches",
    "test_variable.TestVariable.test_np_dtype_convert":
        "0.14 refuses the dtype int8, which Paddle 2.1 and Rill have",
    "test_profiler.TestProfiler.test_all_profiler":
        "GPU: the file it reads is written only by the GPU profiling run, which returns early without CUDA, as on "
        "Paddle's own CPU build",
}
# The same test in Paddle 2.1's suite, unchanged since 0.14.
DIVERGENCES["test_dynrnn_static_input.TestDyRnnStaticInput.test_network_gradient"] = (
    PADDLE_21_DIVERGENCES["test_dynrnn_static_input.TestDyRnnStaticInput.test_network_gradient"])


def main():
    args = harness.parse_args(__doc__.splitlines()[0], "test_NAME.py files (default: FILES)")
    src = os.environ.get("PADDLE_SRC")
    if not src:
        sys.exit("run_fluid014_tests: set PADDLE_SRC to a Paddle checkout at v0.14.0")
    tests = os.path.join(src, "python", "paddle", "fluid", "tests")
    if not os.path.isdir(os.path.join(tests, "unittests")):
        sys.exit("run_fluid014_tests: %s has no python/paddle/fluid/tests/unittests" % src)

    def path_of(name):
        if name.startswith("book/"):
            return os.path.join(tests, name)
        name = os.path.basename(name)
        top = os.path.join(tests, name)
        return top if name[:-3] in TOP_LEVEL_FILES or not os.path.exists(os.path.join(tests, "unittests", name)) \
            else os.path.join(tests, "unittests", name)

    if args.files:
        paths = {name: path_of(name) for name in args.files}
    else:
        paths = {"%s.py" % f: path_of("%s.py" % f) for f in FILES + TOP_LEVEL_FILES}
        paths.update({"book/%s.py" % f: os.path.join(tests, "book", f + ".py") for f in BOOK_FILES})
    # Paddle's own switch for the variants its CI skipped for time (word2vec's dense and
    # parallel cases): the book's CPU methods are the acceptance, so all of them run.
    os.environ["FULL_TEST"] = "1"
    failed = harness.run_and_report(paths, os.path.abspath(args.build), args.timeout, args.verbose, args.json,
                                    dialect="py2", divergences=DIVERGENCES)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
