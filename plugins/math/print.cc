// print: writes a tensor to standard output (Fluid's print op), passing it through to Out.
#include <cstdio>
#include <mutex>

#include "ops.h"

namespace rill::math {
namespace {

class Print {
 public:
  explicit Print(const OpInfo& op)
      : first_n_(op.Attr<int64_t>("first_n")), message_(op.Attr<std::string>("message")), name_(op.InputName("In")) {}

  void Compute(KernelContext& ctx) {
    Variable in = ctx.InputVar("In");
    if (ctx.HasOutput("Out")) {
      Variable out = ctx.OutputVar("Out");
      if (out.handle() != in.handle()) out.CopyFrom(in);
    }
    std::lock_guard lock(mu_);  // one op instance may run on several threads
    if (first_n_ >= 0 && printed_ >= first_n_) return;
    ++printed_;
    const std::string line = (message_.empty() ? "" : message_ + " ") + name_ + ": " + in.Describe();
    std::fprintf(stdout, "%s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  const int64_t first_n_;
  const std::string message_;
  const std::string name_;
  std::mutex mu_;
  int64_t printed_ = 0;
};

}  // namespace

void RegisterPrint(Registrar& r) {
  r.Op(OpSchema("print")
           .Doc("Prints In (name, dtype, shape, values) to standard output and passes it to Out.")
           .Input("In", "the variable to print")
           .Output("Out", "a copy of In", RILL_SLOT_OPTIONAL)
           .Attr("first_n", int64_t{-1}, "print only the first n runs (-1: every run)")
           .Attr("message", "", "text printed before the value")
           .Attr("summarize", int64_t{-1}, "Fluid's element limit (values are summarized)")
           .Attr("print_tensor_name", true, "")
           .Attr("print_tensor_type", true, "")
           .Attr("print_tensor_shape", true, "")
           .Attr("print_tensor_lod", true, "")
           .Attr("print_phase", "both", "Fluid's forward/backward selector"));
  r.StatefulKernel<Print>("print", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::math
