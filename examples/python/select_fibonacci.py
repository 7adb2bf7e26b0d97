"""The select design document's example, completed as Fluid's test_concurrency runs it: a
go block receives ten Fibonacci numbers from ch1 and then signals quit_ch; the main block's
While loop runs a Select that sends the next number on ch1, or ends the loop once quit_ch
is ready.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/select_fibonacci.py
"""
import rill.fluid as fluid
from rill.fluid import core, layer_helper
from rill.fluid.layers import While, assign, elementwise_add, fill_constant

ch1 = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)
quit_ch = fluid.make_channel(dtype=core.VarDesc.VarType.LOD_TENSOR)

result = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
quit_ch_input = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
with fluid.Go():
    for i in range(10):
        fluid.channel_recv(ch1, result)
        fluid.layers.Print(result, message="fibonacci")
    fluid.channel_send(quit_ch, quit_ch_input)

x = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
y = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=1)
x_tmp = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
while_cond = fill_constant(shape=[1], dtype=core.VarDesc.VarType.BOOL, value=True)
while_false = fill_constant(shape=[1], dtype=core.VarDesc.VarType.BOOL, value=False)
while_op = While(cond=while_cond)

with while_op.block():
    result2 = fill_constant(shape=[1], dtype=core.VarDesc.VarType.INT32, value=0)
    with fluid.Select() as select:
        with select.case(fluid.channel_send, ch1, x, is_copy=True):
            # Send x, then perform Fibonacci calculation on x and y
            assign(input=x, output=x_tmp)
            assign(input=y, output=x)
            assign(elementwise_add(x=x_tmp, y=y), output=y)
        with select.case(fluid.channel_recv, quit_ch, result2):
            # Exit out of While loop
            helper = layer_helper.LayerHelper('assign')
            helper.append_op(type='assign', inputs={'X': [while_false]}, outputs={'Out': [while_cond]})

value, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[result])
print("the tenth Fibonacci number received: %d" % value[0])
assert value[0] == 34
