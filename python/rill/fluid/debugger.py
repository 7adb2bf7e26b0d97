"""fluid.debugger: pictures of programs (Fluid's draw_block_graphviz), by the runtime's
graph drawing (`rill graph`, core/program/graph.h)."""

__all__ = ["draw_block_graphviz"]


def draw_block_graphviz(block, highlights=None, path="./temp.dot"):
    """Draws ``block`` of its program to ``path`` (.dot as text; .svg/.png/.pdf rendered by
    Graphviz's dot), outlining the variables named in ``highlights``; returns the DOT text."""
    return block.program.to_graphviz(path, block=block.idx, highlights=highlights)
