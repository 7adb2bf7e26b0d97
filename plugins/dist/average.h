// average.h — the mean of the trainers' gradients, read from where they were received.
//
// Contract:
//  - A ReceivedGradient is one trainer's gradient of a parameter of `dims`: dense (numel of
//    dims values) or SelectedRows (`rows` of the parameter, one row of values each).
//  - WriteAverage reads each part once, in place: the bytes may lie in any number of pieces,
//    at any alignment. When every part is SelectedRows the mean stays SelectedRows (the rows
//    of all parts in order, each value / parts, written to sparse(rows)); otherwise it is
//    dense, written to dense(), rows of sparse parts added where they belong.
//  - dtype is float32 or float64; the parts have been checked against dims by the caller.
#ifndef RILL_DIST_PS_AVERAGE_H_
#define RILL_DIST_PS_AVERAGE_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "wire.h"

namespace rill::dist {

struct ReceivedGradient {
  ReceivedBytes bytes;
  bool sparse = false;
  std::vector<int64_t> rows;  // sparse: the parameter's rows the values are of
};

void WriteAverage(int32_t dtype, const std::vector<int64_t>& dims, const std::vector<const ReceivedGradient*>& parts,
                  const std::function<void*()>& dense, const std::function<void*(const std::vector<int64_t>&)>& sparse);

}  // namespace rill::dist

#endif  // RILL_DIST_PS_AVERAGE_H_
