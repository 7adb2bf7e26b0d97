// core/registry/attribute.h — attribute values, as declared by schemas and set by programs.
//
// One struct holds every attribute kind (Fluid's OpDesc.Attr flattened); `type` says which
// field is meaningful. Integers are widened to int64 and floats to double on read, so INT
// and LONG attributes are interchangeable in programs. Paddle 2.x's wider program types
// fill the schema types kernels read: LONGS an INTS, FLOAT64 a FLOAT, FLOAT64S a FLOATS,
// and a SCALAR the one of INT, LONG, FLOAT or BOOLEAN its value is. Beside these, a
// program may give what Paddle's loader (ExtractAttribute) converts: an INT, LONG or
// FLOAT for a BOOLEAN (non-zero is true; Paddle up to 1.6 saved booleans as INT), an
// INTS or LONGS for a BOOLEANS, an INT or LONG for a FLOAT, and a FLOAT for a LONG
// (truncated). Anything else is refused, as Paddle refuses it.
#ifndef RILL_CORE_REGISTRY_ATTRIBUTE_H_
#define RILL_CORE_REGISTRY_ATTRIBUTE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/program/program.h"

namespace rill::core {

struct AttrValue {
  int32_t type = -1;  // RillAttrType
  int64_t i = 0;      // INT, LONG, BOOLEAN (0/1), BLOCK
  double f = 0;       // FLOAT
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<uint8_t> bools;
  std::vector<std::string> strings;
  std::vector<int32_t> blocks;

  std::string ToString() const;
};

// "INT", "FLOATS", ..., and Paddle 2.x's program types ("LONGS", "SCALAR", ...).
std::string AttrTypeName(int32_t type);
// Whether program attribute `given` may fill a schema attribute of type `declared`.
bool AttrCompatible(int32_t declared, const ProgramAttr& given);
// How `given` reads in an error message: its type, and a SCALAR's kind ("SCALAR (fp64)").
std::string AttrDescription(const Program& program, const ProgramAttr& given);
// Parses a schema default in text form (see RillAttrDef); throws Error if malformed.
AttrValue ParseAttrDefault(int32_t type, const std::string& text);
// The zero value of `type`.
AttrValue ZeroAttr(int32_t type);
// Converts a program attribute to the declared type. REQUIRES AttrCompatible.
AttrValue AttrFromProgram(const Program& program, const ProgramAttr& attr, int32_t declared);

}  // namespace rill::core

#endif  // RILL_CORE_REGISTRY_ATTRIBUTE_H_
