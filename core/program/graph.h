// core/program/graph.h — a program as a Graphviz graph, for `rill graph` and Python's
// Program.to_graphviz().
//
// Contract: ProgramToDot returns the program as a DOT digraph. Ops are boxes (type and a
// few short attributes), variables ellipses (name, dtype, dims); parameters (persistable
// tensors) and channels are styled apart, variables used but never declared are dashed.
// Edges run from each input variable to its op and from the op to each output. A
// variable has one node, in the cluster of the block that declares it (else the block
// that first uses it), so that a sub-block's use of an outer variable is an edge into
// the outer cluster. Each sub-block is a cluster nested in its parent's, labelled with
// the op that runs it (`while` body, `conditional_block`, `go`, `select` and its cases,
// `listen_and_serv`'s optimize block), and joined to that op by a dashed edge. Channel
// sends (channel_send, a select's send case) are joined to the receives of the same
// channel (channel_recv, receive cases) by red dashed edges, across blocks. Problems
// (validation messages that start "block B, op I") mark their ops red, with the message
// as the tooltip; the others are listed in a note. Variables named in `highlight` get a
// heavy red outline. With `block` >= 0, only that block's
// ops are drawn, sub-blocks collapsed. Never throws for a malformed program: what cannot
// be drawn (a block index out of range) is left out and noted. The first line is a DOT
// comment giving the graph's size, `// rill graph: N nodes, M edges`, which WriteGraph
// (core/program/render_dot.h) reads to refuse a picture Graphviz would take minutes to lay out.
#ifndef RILL_CORE_PROGRAM_GRAPH_H_
#define RILL_CORE_PROGRAM_GRAPH_H_

#include <string>
#include <vector>

#include "core/proto/framework.pb.h"

namespace rill::core {

struct GraphOptions {
  int block = -1;                      // -1: every block
  std::vector<std::string> problems;   // ValidateProgram's messages, to mark
  std::vector<std::string> highlight;  // variables drawn with a heavy red outline
};

std::string ProgramToDot(const proto::ProgramDesc& program, const GraphOptions& options = {});

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_GRAPH_H_
