"""Go's concurrency from Python, as the seed documents and Fluid's test_concurrency write
it: go blocks, channels, select."""
import pytest

import rill
import rill.fluid as fluid
from rill.fluid import core, layers
from rill.fluid.layer_helper import LayerHelper

TENSOR = core.VarDesc.VarType.LOD_TENSOR


def test_simple_go_routine(exe):
    # The go design document's example.
    channel = fluid.make_channel(dtype=TENSOR)
    with fluid.Go():
        tensor = layers.fill_constant(shape=[1], dtype="int", value=99)
        tensor.stop_gradient = True
        fluid.channel_send(channel, tensor)
    result = layers.fill_constant(shape=[1], dtype="int", value=-1)
    result, status = fluid.channel_recv(channel, result)
    out, ok = exe.run(fetch_list=[result, status])
    assert out.tolist() == [99] and ok.tolist() == [True]
    go_ops = [op for op in fluid.default_main_program().global_block().ops if op.type == "go"]
    assert len(go_ops) == 1 and go_ops[0].attr("sub_block").idx == 1


def test_daisy_chain_of_100(exe):
    # Go's daisy chain, built by a Python loop: each go block receives from the right and
    # sends one more to the left.
    n = 100
    leftmost = fluid.make_channel(dtype=TENSOR)
    left = leftmost
    for _ in range(n):
        right = fluid.make_channel(dtype=TENSOR)
        with fluid.Go():
            one = layers.fill_constant(shape=[1], dtype="int64", value=1)
            value = layers.fill_constant(shape=[1], dtype="int64", value=0)
            fluid.channel_recv(right, value)
            fluid.channel_send(left, layers.elementwise_add(value, one))
        left = right
    start = layers.fill_constant(shape=[1], dtype="int64", value=1)
    fluid.channel_send(right, start)
    result = layers.fill_constant(shape=[1], dtype="int64", value=0)
    fluid.channel_recv(leftmost, result)
    out, = exe.run(fetch_list=[result])
    assert out.tolist() == [n + 1]


def test_select_with_default(exe):
    ch = fluid.make_channel(dtype=TENSOR)  # nobody sends: the default case runs
    x = layers.fill_constant(shape=[1], dtype="int32", value=0)
    picked = layers.fill_constant(shape=[1], dtype="int32", value=0)
    with fluid.Select() as select:
        with select.case(fluid.channel_recv, ch, x):
            layers.fill_constant(shape=[1], dtype="int32", value=1, out=picked)
        with select.default():
            layers.fill_constant(shape=[1], dtype="int32", value=2, out=picked)
    out, = exe.run(fetch_list=[picked])
    assert out.tolist() == [2]
    with pytest.raises(ValueError, match="at most one default"):
        with fluid.Select() as select:
            with select.default():
                pass
            with select.default():
                pass


def fibonacci(n):
    quit_ch_input = layers.fill_constant(shape=[1], dtype="int32", value=0)
    result = layers.fill_constant(shape=[1], dtype="int32", value=0)
    x = layers.fill_constant(shape=[1], dtype="int32", value=0)
    y = layers.fill_constant(shape=[1], dtype="int32", value=1)
    while_cond = layers.fill_constant(shape=[1], dtype="bool", value=True)
    while_false = layers.fill_constant(shape=[1], dtype="bool", value=False)
    x_tmp = layers.fill_constant(shape=[1], dtype="int32", value=0)
    ch1 = fluid.make_channel(dtype=TENSOR)
    quit_ch = fluid.make_channel(dtype=TENSOR)
    with fluid.Go():
        for _ in range(n):
            fluid.channel_recv(ch1, result)
            layers.Print(result, message="fib")
        fluid.channel_send(quit_ch, quit_ch_input)
    while_op = fluid.While(cond=while_cond)
    with while_op.block():
        result2 = layers.fill_constant(shape=[1], dtype="int32", value=0)
        with fluid.Select() as select:
            with select.case(fluid.channel_send, ch1, x, is_copy=True):
                layers.assign(input=x, output=x_tmp)
                layers.assign(input=y, output=x)
                layers.assign(layers.elementwise_add(x=x_tmp, y=y), output=y)
            with select.case(fluid.channel_recv, quit_ch, result2):
                # The select design document's way out of the loop.
                helper = LayerHelper("assign")
                helper.append_op(type="assign", inputs={"X": [while_false]}, outputs={"Out": [while_cond]})
    return result


def test_fibonacci_with_select_inside_while(exe, capfd):
    result = fibonacci(10)
    out, = exe.run(fetch_list=[result])
    assert out.tolist() == [34]
    printed = [line for line in capfd.readouterr().out.splitlines() if "fib" in line]
    assert len(printed) == 10


def test_ping_pong_over_buffered_channels(exe):
    ping = fluid.make_channel(dtype=TENSOR, capacity=1)
    pong = fluid.make_channel(dtype=TENSOR, capacity=1)
    rounds = 20
    with fluid.Go():  # the ponger: sends back what it gets, plus one
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = layers.fill_constant(shape=[1], dtype="int64", value=rounds)
        cond = layers.less_than(i, n)
        loop = fluid.While(cond=cond)
        with loop.block():
            ball = layers.fill_constant(shape=[1], dtype="int64", value=0)
            fluid.channel_recv(ping, ball)
            fluid.channel_send(pong, layers.increment(ball, in_place=False))
            layers.increment(i, in_place=True)
            layers.less_than(i, n, cond=cond)
    ball = layers.fill_constant(shape=[1], dtype="int64", value=0)
    j = layers.fill_constant(shape=[1], dtype="int64", value=0)
    m = layers.fill_constant(shape=[1], dtype="int64", value=rounds)
    cond2 = layers.less_than(j, m)
    loop2 = fluid.While(cond=cond2)
    with loop2.block():
        fluid.channel_send(ping, layers.increment(ball, in_place=False))
        fluid.channel_recv(pong, ball)
        layers.increment(j, in_place=True)
        layers.less_than(j, m, cond=cond2)
    out, = exe.run(fetch_list=[ball])
    assert out.tolist() == [2 * rounds]


def test_channel_close_and_send_on_closed_channel(exe):
    ch = fluid.make_channel(dtype=TENSOR, capacity=2)
    v = layers.fill_constant(shape=[1], dtype="int32", value=5)
    fluid.channel_send(ch, v, is_copy=True)
    fluid.channel_close(ch)
    got = layers.fill_constant(shape=[1], dtype="int32", value=0)
    got, status = fluid.channel_recv(ch, got)
    again = layers.fill_constant(shape=[1], dtype="int32", value=0)
    again, status2 = fluid.channel_recv(ch, again)
    out = exe.run(fetch_list=[got, status, status2])
    assert [o.tolist() for o in out] == [[5], [True], [False]]

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        ch = fluid.make_channel(dtype=TENSOR)
        fluid.channel_close(ch)
        fluid.channel_send(ch, layers.fill_constant(shape=[1], dtype="int32", value=1))
    with pytest.raises(rill.Error, match="closed") as e:
        exe.run(main)
    assert "channel_send" in str(e.value)


def test_deadlock_is_an_error_not_a_hang(exe):
    ch = fluid.make_channel(dtype=TENSOR)
    v = layers.fill_constant(shape=[1], dtype="int32", value=0)
    fluid.channel_recv(ch, v)
    with pytest.raises(rill.Error, match="deadlock|blocked"):
        exe.run(fetch_list=[v])
