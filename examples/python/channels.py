"""The channel design document's operations: make_channel (unbuffered and buffered),
channel_send (moving or copying), channel_recv with its status, channel_close.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/channels.py
"""
import rill.fluid as fluid
from rill.fluid import core
from rill.fluid.layers import fill_constant

# A buffered channel of capacity 10: sends do not block until it is full.
ch = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR, capacity=10)
var = fill_constant(shape=[1], dtype='int32', value=7)
fluid.channel_send(ch, var, True)  # is_copy: var keeps its value
fluid.channel_send(ch, var, True)
fluid.channel_close(ch)

# Receives drain what was buffered, then report the channel closed.
first = fill_constant(shape=[1], dtype='int32', value=0)
first, ok1 = fluid.channel_recv(ch, first)
second = fill_constant(shape=[1], dtype='int32', value=0)
second, ok2 = fluid.channel_recv(ch, second)
third = fill_constant(shape=[1], dtype='int32', value=0)
_, ok3 = fluid.channel_recv(ch, third)

# An unbuffered channel: a send waits for its receiver, here a go block.
unbuffered = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)
with fluid.Go():
    fluid.channel_send(unbuffered, fill_constant(shape=[1], dtype='int32', value=42))
handed = fill_constant(shape=[1], dtype='int32', value=0)
handed, ok4 = fluid.channel_recv(unbuffered, handed)

out = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[first, ok1, second, ok2, ok3, var, handed, ok4])
values = [o[0] for o in out]
print("buffered: %d %s, %d %s; then closed: %s; the sent var is still %d; unbuffered: %d %s" % tuple(values))
assert values == [7, True, 7, True, False, 7, 42, True]
