"""fluid.debugger: pictures of programs (Fluid's draw_block_graphviz), by the runtime's
graph drawing (`rill graph`, core/program/graph.h), and programs as readable pseudo-code
(Fluid's pprint_program_codes)."""
from rill.fluid.framework import VarType, _dtype_name

__all__ = ["draw_block_graphviz", "pprint_program_codes", "pprint_block_codes"]


def draw_block_graphviz(block, highlights=None, path="./temp.dot"):
    """Draws ``block`` of its program to ``path`` (.dot as text; .svg/.png/.pdf rendered by
    Graphviz's dot), outlining the variables named in ``highlights``; returns the DOT text."""
    return block.program.to_graphviz(path, block=block.idx, highlights=highlights)


def pprint_program_codes(program):
    """The program as pseudo-code: each block's variables, then its ops, one a line."""
    return "\n\n".join(pprint_block_codes(block) for block in program.blocks)


def pprint_block_codes(block):
    """One block as pseudo-code: `// block-i parent-j`, each variable as `kind name (dtype,
    shape)`, each op as `outputs = type(inputs) {attrs}`."""
    lines = ["// block-%d parent-%d" % (block.idx, block.parent_idx), "// variables"]
    for name, var in block.vars.items():
        kind = {VarType.LOD_TENSOR: "Tensor", VarType.SELECTED_ROWS: "SelectedRows",
                VarType.LOD_TENSOR_ARRAY: "TensorArray"}.get(var.type, _dtype_name(var.type))
        dtype = _dtype_name(var.dtype) if var.dtype is not None else "?"
        lines.append("%s %s (%s, %s)%s" % (kind, name, dtype, list(var.shape),
                                           " persistable" if var.persistable else ""))
    lines.append("// operators")
    for op in block.ops:
        outputs = ", ".join(n for slot in op.output_names for n in op.output(slot))
        inputs = ", ".join("%s=[%s]" % (slot, ", ".join(op.input(slot))) for slot in op.input_names)
        attrs = ", ".join("%s=%r" % (k, v) for k, v in sorted(op.attrs.items()) if not hasattr(v, "idx"))
        lines.append("%s = %s(%s)%s" % (outputs, op.type, inputs, " {%s}" % attrs if attrs else ""))
    return "\n".join(lines)
