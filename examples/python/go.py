"""The go design document's example: a go block sends 99 on a channel; the main block
receives it.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/go.py
"""
import rill.fluid as fluid
from rill.fluid import core
from rill.fluid.layers import fill_constant

channel = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)

with fluid.Go():
    # Send a tensor of value 99 to "channel" from a go block (a task of its own)
    tensor = fill_constant(shape=[1], dtype='int', value=99)
    tensor.stop_gradient = True
    fluid.channel_send(channel, tensor)

# Receive the sent tensor from "channel" on the main block
result = fill_constant(shape=[1], dtype='int', value=-1)
result, status = fluid.channel_recv(channel, result)

value, ok = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[result, status])
print("received %d (status %s)" % (value[0], ok[0]))
assert value[0] == 99 and ok[0]
