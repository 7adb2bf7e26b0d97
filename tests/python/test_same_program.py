"""A program built with rill.fluid is the program the C++ builders build for the same model
(fluid_reference_programs.cc, written from Fluid 0.14's layers): the serialized
ProgramDescs are equal byte for byte, main and startup, for fit_a_line and the conv net."""
import os
import subprocess

from google.protobuf import text_format

import rill.fluid as fluid
from rill.proto import framework_pb2


def reference(tmp_path, name):
    subprocess.run([os.environ["RILL_REFERENCE_PROGRAMS"], str(tmp_path)], check=True, timeout=60)
    with open(str(tmp_path / (name + ".pb")), "rb") as f:
        return f.read()


def assert_same(tmp_path, program, name):
    expected = reference(tmp_path, name)
    got = program.serialize_to_string()
    if got != expected:  # show the difference as text
        want = framework_pb2.ProgramDesc()
        want.ParseFromString(expected)
        assert text_format.MessageToString(program.desc) == text_format.MessageToString(want)
    assert got == expected


def test_fit_a_line_is_the_cpp_builders_program(tmp_path):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    fluid.layers.mean(cost)
    assert_same(tmp_path, fluid.default_main_program(), "fit_a_line")
    assert_same(tmp_path, fluid.default_startup_program(), "fit_a_line_startup")


def test_conv_net_is_the_cpp_builders_program(tmp_path):
    img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    conv_pool_1 = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20, pool_size=2,
                                                  pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2,
                                                  pool_stride=2, act="relu")
    prediction = fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")
    fluid.layers.mean(fluid.layers.cross_entropy(input=prediction, label=label))
    fluid.layers.accuracy(input=prediction, label=label)
    assert_same(tmp_path, fluid.default_main_program(), "conv_net")
    assert_same(tmp_path, fluid.default_startup_program(), "conv_net_startup")
