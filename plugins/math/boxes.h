// plugins/math/boxes.h — the box geometry Paddle's detection ops share (nms_util.h).
//
// A box is 4 values (x1, y1, x2, y2), x2 >= x1 and y2 >= y1 for a proper one. With
// `normalized` the coordinates are fractions of the image and a box's width is x2 - x1;
// otherwise they are pixel indices and the width counts the last pixel, x2 - x1 + 1.
#ifndef RILL_PLUGINS_MATH_BOXES_H_
#define RILL_PLUGINS_MATH_BOXES_H_

#include <algorithm>

namespace rill::math {

// A box's area; 0 for a box with x2 < x1 or y2 < y1.
template <class T>
T BoxArea(const T* b, bool normalized) {
  if (b[2] < b[0] || b[3] < b[1]) return T(0);
  const T w = b[2] - b[0], h = b[3] - b[1];
  return normalized ? w * h : (w + 1) * (h + 1);
}

// Intersection over union of two boxes (Paddle's JaccardOverlap): 0 when they do not meet.
template <class T>
T JaccardOverlap(const T* a, const T* b, bool normalized) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return T(0);
  const T norm = normalized ? T(0) : T(1);
  const T iw = std::min(a[2], b[2]) - std::max(a[0], b[0]) + norm;
  const T ih = std::min(a[3], b[3]) - std::max(a[1], b[1]) + norm;
  const T inter = iw * ih;
  return inter / (BoxArea(a, normalized) + BoxArea(b, normalized) - inter);
}

}  // namespace rill::math

#endif  // RILL_PLUGINS_MATH_BOXES_H_
