// plugins/math/intra_op_threads.h — how many threads one large op (a oneDNN GEMM or
// convolution) may use, so that intra-op parallelism and the task scheduler share the
// cores instead of multiplying.
//
// The budget is $RILL_INTRA_OP_THREADS if set, else OpenMP's default (OMP_NUM_THREADS, or
// one per hardware thread). An op holding an IntraOpThreads for its library calls gets
// budget / (such ops running now), at least 1: a model run alone (one op at a time) uses
// every core; go blocks running large ops at once split the budget between them, so the
// OpenMP threads stay near the budget instead of workers x budget. The count is fixed
// when the op starts; one started earlier keeps its share until it ends.
//
// oneDNN's OpenMP runtime (Debian's libdnnl) sizes each parallel region by the calling
// thread's omp_get_max_threads(), which this sets for the calling thread only.
// Under ThreadSanitizer the budget is 1: libgomp is not instrumented, so TSan cannot see
// its barriers, and one thread runs every region inline.
#ifndef RILL_PLUGINS_MATH_INTRA_OP_THREADS_H_
#define RILL_PLUGINS_MATH_INTRA_OP_THREADS_H_

namespace rill::math {

class IntraOpThreads {
 public:
  IntraOpThreads();
  ~IntraOpThreads();
  IntraOpThreads(const IntraOpThreads&) = delete;
  IntraOpThreads& operator=(const IntraOpThreads&) = delete;

  // The threads this op's library calls use (also what primitives are created for).
  int threads() const { return threads_; }

  // The whole budget (what one op alone gets).
  static int Budget();

 private:
  int threads_;
};

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_INTRA_OP_THREADS_H_
