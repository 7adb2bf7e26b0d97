// core/cli/render_dot.h — writing a Graphviz graph to a file, as text or as a picture.
//
// Contract: WriteGraph(dot, path) writes the DOT text as it is when `path` ends in .dot or
// .gv, and otherwise renders it with Graphviz's `dot -T<extension>` (svg, png, pdf, ...),
// run as a child process found on PATH. Errors (Error) name the file and what failed;
// when `dot` cannot be found they say how to get it and that .dot needs none.
#ifndef RILL_CORE_CLI_RENDER_DOT_H_
#define RILL_CORE_CLI_RENDER_DOT_H_

#include <string>

namespace rill::core {

void WriteGraph(const std::string& dot, const std::string& path);

}  // namespace rill::core

#endif  // RILL_CORE_CLI_RENDER_DOT_H_
