// core/program/program.h — a program as Rill holds it to check and run: compact, read-only.
//
// Contract: Program::Parse reads a serialized ProgramDesc (framework.proto, Fluid's to
// Paddle 2.x's) straight into this form, with no protobuf message made:
//  - every distinct string (variable, slot, op type, attribute name) is stored once and
//    named by a StrId;
//  - every distinct attribute (the same bytes on the wire) is decoded once and named by
//    an AttrId, so what an unrolled program repeats on each op (op_role, op_callstack,
//    the same shape) costs one copy;
//  - a block's vars and ops, an op's slots and attributes, a slot's arguments are ranges
//    of flat arrays.
// Fields no part of Rill reads (a channel's or reader's description, VarDesc attrs, the
// op version maps) are skipped, as protobuf skips unknown ones. Bytes that are no
// ProgramDesc throw Error naming `source`. FromProto reads a program built in memory by
// way of its wire form, so both read alike. A Program never changes once made: share it
// as shared_ptr<const Program>.
#ifndef RILL_CORE_PROGRAM_PROGRAM_H_
#define RILL_CORE_PROGRAM_PROGRAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/proto/framework.pb.h"

namespace rill::core {

using StrId = uint32_t;  // a string of the program; Program::str reads it; 0 is ""

using AttrId = uint32_t;  // an attribute of the program; Program::attr reads it

// A run of elements of one of the program's arrays.
template <class T> class Range {
 public:
  Range(const T* first, size_t size) : first_(first), size_(size) {}
  const T* begin() const { return first_; }
  const T* end() const { return first_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return first_[i]; }

 private:
  const T* first_;
  size_t size_;
};

// Each field is framework.proto's of the same name; `has_` says whether the bytes set it.
struct ProgramVar {
  StrId name = 0;
  int32_t type = -1;  // VarType.Type; -1: not set
  // Its tensor's description (of a LOD_TENSOR, SELECTED_ROWS, LOD_TENSOR_ARRAY...): the
  // element type (-1: none given), dims (in Program::dims) and LoD level.
  int32_t data_type = -1;
  int32_t lod_level = 0;
  uint32_t dims_begin = 0, dims_size = 0;
  bool has_tensor = false;
  bool persistable = false;
  bool need_check_feed = false, is_parameter = false, stop_gradient = false;
};

struct ProgramSlot {  // OpDesc.Var
  StrId parameter = 0;
  uint32_t args_begin = 0, args_size = 0;
};

struct ProgramOp {
  StrId type = 0;
  bool has_type = false;
  bool is_target = false;
  uint32_t slots_begin = 0, inputs_size = 0, outputs_size = 0;  // inputs, then outputs
  uint32_t attrs_begin = 0, attrs_size = 0;
};

struct ProgramBlock {
  int32_t idx = 0, parent_idx = -1, forward_block_idx = -1;
  bool has_idx = false;
  uint32_t vars_begin = 0, vars_size = 0, ops_begin = 0, ops_size = 0;
};

// An attribute: its name, its AttrType and the value that type selects (the message's
// other value fields are dropped).
struct ProgramAttr {
  StrId name = 0;
  int32_t type = -1;        // AttrType; -1: not set
  int64_t i = 0;            // INT, LONG, BOOLEAN (0/1), BLOCK; a SCALAR's bool or int64
  double f = 0;             // FLOAT, FLOAT64; a SCALAR's float64
  StrId s = 0;              // STRING; VAR's variable
  int32_t scalar_type = 0;  // SCALAR: Scalar.Type (0: not set; COMPLEX128 keeps no value)
  // INTS, LONGS, BOOLEANS (0/1), BLOCKS: in Program::ints; FLOATS, FLOAT64S: in
  // Program::floats; STRINGS, VARS: in Program::strings. SCALARS: their count only.
  uint32_t list_begin = 0, list_size = 0;
};

// "LOD_TENSOR", "FEED_MINIBATCH", ...; "no type" for -1, "var_type(N)" for an unknown N.
std::string VarTypeName(int32_t type);

class Program {
 public:
  static std::shared_ptr<const Program> Parse(std::string_view bytes, const std::string& source);
  // Reads the file at `path` as it goes (the bytes are never all in memory at once).
  static std::shared_ptr<const Program> ParseFile(const std::string& path);
  static std::shared_ptr<const Program> FromProto(const proto::ProgramDesc& program);

  int blocks_size() const { return static_cast<int>(blocks_.size()); }
  const ProgramBlock& block(int i) const { return blocks_[static_cast<size_t>(i)]; }
  Range<ProgramVar> vars(const ProgramBlock& b) const { return {vars_.data() + b.vars_begin, b.vars_size}; }
  Range<ProgramOp> ops(const ProgramBlock& b) const { return {ops_.data() + b.ops_begin, b.ops_size}; }
  Range<ProgramSlot> inputs(const ProgramOp& op) const { return {slots_.data() + op.slots_begin, op.inputs_size}; }
  Range<ProgramSlot> outputs(const ProgramOp& op) const {
    return {slots_.data() + op.slots_begin + op.inputs_size, op.outputs_size};
  }
  Range<StrId> arguments(const ProgramSlot& s) const { return {args_.data() + s.args_begin, s.args_size}; }
  Range<AttrId> attrs(const ProgramOp& op) const { return {op_attrs_.data() + op.attrs_begin, op.attrs_size}; }
  const ProgramAttr& attr(AttrId id) const { return attrs_[id]; }
  Range<int64_t> dims(const ProgramVar& v) const { return {dims_.data() + v.dims_begin, v.dims_size}; }
  Range<int64_t> ints(const ProgramAttr& a) const { return {ints_.data() + a.list_begin, ListOf(a, kInts)}; }
  Range<double> floats(const ProgramAttr& a) const { return {floats_.data() + a.list_begin, ListOf(a, kFloats)}; }
  Range<StrId> strings(const ProgramAttr& a) const { return {strs_.data() + a.list_begin, ListOf(a, kStrs)}; }

  std::string_view str(StrId id) const { return names_.Get(id); }
  // The id of `s` if the program has that string anywhere.
  std::optional<StrId> FindStr(std::string_view s) const;
  // Block `block`'s declaration of variable `name` (the last, as Paddle's BlockDesc keeps
  // it when a block declares a name twice), or nullptr.
  const ProgramVar* FindVar(int block, std::string_view name) const;
  // Version.version: Paddle 1.8 on (field 4), or Fluid's (field 2); 0 if neither.
  int64_t version() const { return version_; }
  size_t attrs_count() const { return attrs_.size(); }  // distinct attributes

 private:
  friend class ProgramDecoder;
  enum ListKind { kInts, kFloats, kStrs, kNone };
  static ListKind ListKindOf(int32_t type);
  static size_t ListOf(const ProgramAttr& a, ListKind want) { return ListKindOf(a.type) == want ? a.list_size : 0; }

  // Strings stored once each (program.cc).
  struct StringTable {
    std::string pool;
    std::vector<uint32_t> offsets{0};
    std::vector<uint32_t> table;
    StrId Intern(std::string_view s);
    std::optional<StrId> Find(std::string_view s) const;
    std::string_view Get(StrId id) const {
      return {pool.data() + offsets[id], static_cast<size_t>(offsets[id + 1] - offsets[id])};
    }
    void Grow();
  };

  StringTable names_;
  std::vector<ProgramBlock> blocks_;
  std::vector<ProgramVar> vars_;
  std::vector<int64_t> dims_;
  std::vector<ProgramOp> ops_;
  std::vector<ProgramSlot> slots_;
  std::vector<StrId> args_;
  std::vector<AttrId> op_attrs_;
  std::vector<ProgramAttr> attrs_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
  std::vector<StrId> strs_;
  int64_t version_ = 0;
};

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_PROGRAM_H_
