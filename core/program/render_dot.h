// core/program/render_dot.h — writing a Graphviz graph to a file, as text or as a picture.
//
// Contract: WriteGraph(dot, path) writes the DOT text as it is when `path` ends in .dot or
// .gv, and otherwise renders it with Graphviz's `dot -T<extension>` (svg, png, pdf, ...),
// run as a child process found on PATH. Either way the file is replaced whole or not at
// all (core/io/atomic_file.h), and nothing is left in any temporary directory, however
// rill ends: dot reads its input from, and writes its picture to, in-memory files.
//
// Graphviz's layout time grows much faster than the graph: thousands of nodes in a chain
// take a second, a few hundred ops sharing many parameters take minutes. So a picture is
// refused at once when the graph (its `// rill graph: N nodes` first line, graph.h) has
// more than kGraphNodeBudget nodes, and dot is stopped when it has not finished within
// RILL_GRAPH_DEADLINE_S seconds (default 60); both errors say to draw one block
// (`--block N`) or write the graph as .dot. When dot fails, the error gives its exit
// status or signal and what it printed (or that it printed nothing); when it cannot be
// found, how to get it and that .dot needs none. Errors (Error) name the file.
#ifndef RILL_CORE_PROGRAM_RENDER_DOT_H_
#define RILL_CORE_PROGRAM_RENDER_DOT_H_

#include <cstddef>
#include <string>

namespace rill::core {

constexpr size_t kGraphNodeBudget = 5000;

void WriteGraph(const std::string& dot, const std::string& path);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_RENDER_DOT_H_
