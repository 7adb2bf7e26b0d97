"""rill.fluid.core's ProgramDesc, BlockDesc, OpDesc and VarDesc (fluid/desc.py): views of
framework.proto messages with Fluid's C++ desc methods, and Program.sync_with_cpp."""
import pytest

import rill.fluid as fluid
from rill.fluid import core

VarType = core.VarDesc.VarType


def test_blocks_ops_and_their_identity():
    program = core.ProgramDesc()
    root = program.block(0)
    assert root.id == 0 and root.parent == -1 and program.num_blocks() == 1
    child = program.append_block(root)
    grandchild = program.append_block(child)
    assert (child.id, child.parent, grandchild.parent, program.num_blocks()) == (1, 0, 1, 3)
    first, second = root.append_op(), root.append_op()
    front = root.prepend_op()
    middle = root.insert_op(2)
    assert [root.op(i) for i in range(root.op_size())] == [front, first, middle, second]
    assert first != second and len({first, second, front, middle}) == 4
    root.remove_op(1, 3)
    assert [root.op(i) for i in range(root.op_size())] == [front, second]
    copy = core.ProgramDesc(program)
    assert copy.num_blocks() == 3 and copy.block(0) != root
    assert core.ProgramDesc(program.serialize_to_string()) == program


def test_op_attributes_by_type_and_schema_defaults():
    op = core.ProgramDesc().block(0).append_op()
    op.set_type("mul")
    op.set_input("X", ["a", "b"])
    op.set_input("X", ["c"])  # replaces
    op.set_output("Out", ["z"])
    assert (op.type(), op.input("X"), op.input_names(), op.output("Out"), op.input("Y")) == \
        ("mul", ["c"], ["X"], ["z"], [])
    for name, value, kind in [("i", 7, core.AttrType.INT), ("b", True, core.AttrType.BOOLEAN),
                              ("s", "x", core.AttrType.STRING), ("l", 1 << 40, core.AttrType.LONG),
                              ("ints", [1, 2], core.AttrType.INTS), ("strs", ["a"], core.AttrType.STRINGS)]:
        op.set_attr(name, value)
        assert op.attr(name) == value and op.attr_type(name) == kind
    op.set_attr("i", 8)  # replaces, keeping one attribute of the name
    assert op.attr("i") == 8 and op.attr_names().count("i") == 1
    op.set_block_attr("sub", core.ProgramDesc().block(0))
    assert op.block_attr("sub") == 0
    with pytest.raises(ValueError, match="has no attribute 'nope'"):
        op.attr("nope")
    op.check_attrs()
    assert op.attr("x_num_col_dims") == 1 and op.attr("y_num_col_dims") == 1
    op.remove_attr("i")
    assert not op.has_attr("i")
    unknown = core.ProgramDesc().block(0).append_op()
    unknown.set_type("no_such_op")
    with pytest.raises(ValueError, match="no_such_op"):
        unknown.check_attrs()


def test_variables_by_type():
    block = core.ProgramDesc().block(0)
    v = block.var("v")
    assert block.var("v") == v and block.find_var("v") == v and block.find_var("w") is None
    assert v.type() == VarType.LOD_TENSOR
    v.set_dtype(VarType.INT32)
    v.set_shape([3, -1])
    v.set_lod_level(2)
    assert (v.dtype(), v.shape(), v.lod_level()) == (VarType.INT32, [3, -1], 2)
    rows = block.var("rows")
    rows.set_type(VarType.SELECTED_ROWS)
    rows.set_shape([10, 4])
    assert rows.shape() == [10, 4]
    with pytest.raises(ValueError, match="no LoD level"):
        rows.lod_level()
    reader = block.var("reader")
    reader.set_type(VarType.READER)
    reader.set_shapes([[2, 3], [4]])
    reader.set_dtypes([VarType.FP32, VarType.INT64])
    reader.set_lod_levels([0, 1])
    assert (reader.shapes(), reader.dtypes(), reader.lod_levels()) == \
        ([[2, 3], [4]], [VarType.FP32, VarType.INT64], [0, 1])
    reader.set_dtypes([VarType.FP64] * 3)  # a reader grows to the count given, keeping the first
    assert reader.shapes() == [[2, 3], [4], []] and reader.dtypes() == [VarType.FP64] * 3
    with pytest.raises(ValueError, match="holds 1 tensors, given 2"):
        v.set_shapes([[1], [2]])
    assert set(block.all_vars()) == {v, rows, reader}


def test_a_change_through_program_desc_reaches_the_program_at_sync():
    program = fluid.Program()
    with fluid.program_guard(program, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")
        fluid.layers.relu(x)
        fluid.layers.tanh(x)
    block = program.desc.block(0)
    assert block.op_size() == 2
    block.remove_op(0, 1)
    block.var("extra").set_dtype(VarType.FP64)
    assert [op.type for op in program.global_block().ops] == ["relu", "tanh"]  # not yet
    program.sync_with_cpp()
    assert [op.type for op in program.global_block().ops] == ["tanh"]
    assert program.global_block().var("extra").dtype == VarType.FP64
    assert program.global_block().var("x") is x  # the Variables it keeps stay the same objects
