#include "core/program/program.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>

#include "core/errors.h"

namespace rill::core {

namespace {

using google::protobuf::io::CodedInputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;
constexpr int kVarint = WireFormat::WIRETYPE_VARINT;
constexpr int kFixed64 = WireFormat::WIRETYPE_FIXED64;
constexpr int kBytes = WireFormat::WIRETYPE_LENGTH_DELIMITED;
constexpr int kFixed32 = WireFormat::WIRETYPE_FIXED32;

// What the decoder throws on bytes that are no ProgramDesc; Parse adds the source.
struct Malformed {
  std::string what;
};

}  // namespace

// Strings stored once each: string k is pool[offsets[k], offsets[k + 1]). The table finds
// one by content: open addressing over a power-of-two array, 0 an empty slot, k + 1 string
// k, kept at most half full.
StrId Program::StringTable::Intern(std::string_view s) {
  if ((offsets.size() - 1) * 2 >= table.size()) Grow();
  const size_t mask = table.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(s)&mask;; i = (i + 1) & mask) {
    const uint32_t slot = table[i];
    if (slot == 0) {
      if (pool.size() + s.size() > UINT32_MAX) throw Malformed{"more than 4 GiB of distinct strings"};
      const auto id = static_cast<StrId>(offsets.size() - 1);
      pool.append(s);
      offsets.push_back(static_cast<uint32_t>(pool.size()));
      table[i] = id + 1;
      return id;
    }
    if (Get(slot - 1) == s) return slot - 1;
  }
}

std::optional<StrId> Program::StringTable::Find(std::string_view s) const {
  if (table.empty()) return std::nullopt;
  const size_t mask = table.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(s)&mask;; i = (i + 1) & mask) {
    const uint32_t slot = table[i];
    if (slot == 0) return std::nullopt;
    if (Get(slot - 1) == s) return slot - 1;
  }
}

void Program::StringTable::Grow() {
  std::vector<uint32_t> bigger(std::max<size_t>(1024, table.size() * 2), 0);
  const size_t mask = bigger.size() - 1;
  for (uint32_t id = 0; id + 1 < offsets.size(); ++id) {
    size_t i = std::hash<std::string_view>{}(Get(id)) & mask;
    while (bigger[i] != 0) i = (i + 1) & mask;
    bigger[i] = id + 1;
  }
  table.swap(bigger);
}

std::string VarTypeName(int32_t type) {
  if (type == -1) return "no type";
  if (!proto::VarType::Type_IsValid(type)) return "var_type(" + std::to_string(type) + ")";
  return proto::VarType::Type_Name(static_cast<proto::VarType::Type>(type));
}

Program::ListKind Program::ListKindOf(int32_t type) {
  switch (type) {
    case proto::INTS:
    case proto::LONGS:
    case proto::BOOLEANS:
    case proto::BLOCKS: return kInts;
    case proto::FLOATS:
    case proto::FLOAT64S: return kFloats;
    case proto::STRINGS:
    case proto::VARS: return kStrs;
    default: return kNone;
  }
}

std::optional<StrId> Program::FindStr(std::string_view s) const { return names_.Find(s); }

const ProgramVar* Program::FindVar(int block, std::string_view name) const {
  const std::optional<StrId> id = FindStr(name);
  if (!id || block < 0 || block >= blocks_size()) return nullptr;
  const ProgramVar* found = nullptr;
  for (const ProgramVar& v : vars(this->block(block))) {
    if (v.name == *id) found = &v;
  }
  return found;
}

// Reads framework.proto's wire form field by field, as protobuf's own parser does (a
// field of an unexpected wire type is skipped as unknown; repeated scalars packed or not),
// appending to the program's arrays. Each message is read whole before the next begins,
// so a block's vars and ops, and a slot's arguments, land contiguous; an op's inputs and
// outputs, which may interleave on the wire, are gathered first.
class ProgramDecoder {
 public:
  ProgramDecoder(Program& p, CodedInputStream& in) : p_(p), in_(in) {}

  void Decode() {
    p_.names_.Intern("");  // StrId 0: an unset string field reads as "", as in protobuf
    Fields(in_, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return Message(tag, [&] { Block(); });
        case 2: return Message(tag, [&] { Version(&fluid_version_); });
        case 4: return Message(tag, [&] { Version(&version_); });
        default: return false;
      }
    });
    if (!in_.ConsumedEntireMessage()) throw Malformed{"malformed field"};
    p_.version_ = version_ != 0 ? version_ : fluid_version_;
  }

 private:
  static int Field(uint32_t tag) { return static_cast<int>(tag >> 3); }
  static int Wire(uint32_t tag) { return static_cast<int>(tag & 7); }

  // Calls handle(tag) for each field up to the current limit; a field it does not take
  // (returns false for) is skipped.
  template <class F> void Fields(CodedInputStream& in, F handle) {
    while (const uint32_t tag = in.ReadTag()) {
      if (!handle(tag) && !WireFormat::SkipField(&in, tag))
        throw Malformed{"malformed field " + std::to_string(Field(tag))};
    }
  }
  // A nested message: its length, then `read` within it.
  template <class F> bool Message(uint32_t tag, F read, CodedInputStream* in = nullptr) {
    CodedInputStream& s = in != nullptr ? *in : in_;
    if (Wire(tag) != kBytes) return false;
    int length = 0;
    if (!s.ReadVarintSizeAsInt(&length)) throw Malformed{"truncated message length"};
    const int64_t end = int64_t{s.CurrentPosition()} + length;  // a limit past the input's end is clamped to it
    const auto limit = s.PushLimit(length);
    read();
    if (s.CurrentPosition() != end) throw Malformed{"truncated message"};
    if (!s.ConsumedEntireMessage()) throw Malformed{"malformed message"};
    s.PopLimit(limit);
    return true;
  }
  static int64_t Varint(CodedInputStream& in) {
    uint64_t v = 0;
    if (!in.ReadVarint64(&v)) throw Malformed{"truncated varint"};
    return static_cast<int64_t>(v);
  }
  // An int32/int64/bool/enum field: false (skip it) if not sent as a varint.
  template <class T> static bool Scalar(CodedInputStream& in, uint32_t tag, T* out) {
    if (Wire(tag) != kVarint) return false;
    *out = static_cast<T>(Varint(in));
    return true;
  }
  // The bytes of a string field: a view of the stream's buffer when they lie in one piece
  // (valid until the next read), else of scratch_.
  std::string_view Bytes(CodedInputStream& in) {
    int length = 0;
    if (!in.ReadVarintSizeAsInt(&length)) throw Malformed{"truncated string length"};
    const void* data = nullptr;
    int size = 0;
    if (in.GetDirectBufferPointer(&data, &size) && size >= length) {
      in.Skip(length);
      return {static_cast<const char*>(data), static_cast<size_t>(length)};
    }
    if (!in.ReadString(&scratch_, length)) throw Malformed{"truncated string"};
    return scratch_;
  }
  bool String(CodedInputStream& in, uint32_t tag, StrId* out) {
    if (Wire(tag) != kBytes) return false;
    *out = p_.names_.Intern(Bytes(in));
    return true;
  }
  // A repeated scalar field, packed or one value per field; `one` reads one value.
  template <class F> static bool Repeated(CodedInputStream& in, uint32_t tag, int wire, F one) {
    if (Wire(tag) == wire) {
      one();
      return true;
    }
    if (Wire(tag) != kBytes) return false;
    int length = 0;
    if (!in.ReadVarintSizeAsInt(&length)) throw Malformed{"truncated packed field"};
    const int64_t end = int64_t{in.CurrentPosition()} + length;
    const auto limit = in.PushLimit(length);
    while (in.BytesUntilLimit() > 0) one();
    if (in.CurrentPosition() != end) throw Malformed{"truncated packed field"};
    in.PopLimit(limit);
    return true;
  }
  // A float or double field's value, as protobuf reads it.
  template <class T, WireFormat::FieldType kType> static T Fixed(CodedInputStream& in) {
    T v{};
    if (!WireFormat::ReadPrimitive<T, kType>(&in, &v)) throw Malformed{"truncated number"};
    return v;
  }
  static float Float(CodedInputStream& in) { return Fixed<float, WireFormat::TYPE_FLOAT>(in); }
  static double Double(CodedInputStream& in) { return Fixed<double, WireFormat::TYPE_DOUBLE>(in); }

  void Version(int64_t* out) {
    Fields(in_, [&](uint32_t tag) { return Field(tag) == 1 && Scalar(in_, tag, out); });
  }

  void Block() {
    ProgramBlock b;
    b.vars_begin = static_cast<uint32_t>(p_.vars_.size());
    b.ops_begin = static_cast<uint32_t>(p_.ops_.size());
    Fields(in_, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return (b.has_idx = Scalar(in_, tag, &b.idx));
        case 2: return Scalar(in_, tag, &b.parent_idx);
        case 3: return Message(tag, [&] { Var(); });
        case 4: return Message(tag, [&] { Op(); });
        case 5: return Scalar(in_, tag, &b.forward_block_idx);
        default: return false;
      }
    });
    b.vars_size = static_cast<uint32_t>(p_.vars_.size() - b.vars_begin);
    b.ops_size = static_cast<uint32_t>(p_.ops_.size() - b.ops_begin);
    p_.blocks_.push_back(b);
  }

  void Var() {
    ProgramVar v;
    Fields(in_, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return String(in_, tag, &v.name);
        case 2: return Message(tag, [&] { VarType(&v); });
        case 3: return Scalar(in_, tag, &v.persistable);
        case 4: return Scalar(in_, tag, &v.need_check_feed);
        case 5: return Scalar(in_, tag, &v.is_parameter);
        case 6: return Scalar(in_, tag, &v.stop_gradient);
        default: return false;
      }
    });
    p_.vars_.push_back(v);
  }

  void VarType(ProgramVar* v) {
    Fields(in_, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return Scalar(in_, tag, &v->type);
        case 3:
        case 4:  // lod_tensor, tensor_array: a TensorDesc and a LoD level
          return Message(tag, [&] {
            Fields(in_, [&](uint32_t t) {
              if (Field(t) == 1) return Message(t, [&] { TensorDesc(v); });
              return Field(t) == 2 && Scalar(in_, t, &v->lod_level);
            });
          });
        case 2:
        case 8:
        case 9:
        case 10:
        case 11:
        case 12:  // a TensorDesc itself
          return Message(tag, [&] { TensorDesc(v); });
        default: return false;
      }
    });
  }

  void TensorDesc(ProgramVar* v) {
    v->has_tensor = true;
    v->dims_begin = static_cast<uint32_t>(p_.dims_.size());
    Fields(in_, [&](uint32_t tag) {
      if (Field(tag) == 1) return Scalar(in_, tag, &v->data_type);
      return Field(tag) == 2 && Repeated(in_, tag, kVarint, [&] { p_.dims_.push_back(Varint(in_)); });
    });
    v->dims_size = static_cast<uint32_t>(p_.dims_.size() - v->dims_begin);
  }

  void Op() {
    ProgramOp op;
    inputs_.clear();
    outputs_.clear();
    op.attrs_begin = static_cast<uint32_t>(p_.op_attrs_.size());
    Fields(in_, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return Message(tag, [&] { inputs_.push_back(Slot()); });
        case 2: return Message(tag, [&] { outputs_.push_back(Slot()); });
        case 3: return (op.has_type = String(in_, tag, &op.type));
        case 4: return Wire(tag) == kBytes && (p_.op_attrs_.push_back(Attr()), true);
        case 5: return Scalar(in_, tag, &op.is_target);
        default: return false;
      }
    });
    op.slots_begin = static_cast<uint32_t>(p_.slots_.size());
    op.inputs_size = static_cast<uint32_t>(inputs_.size());
    op.outputs_size = static_cast<uint32_t>(outputs_.size());
    p_.slots_.insert(p_.slots_.end(), inputs_.begin(), inputs_.end());
    p_.slots_.insert(p_.slots_.end(), outputs_.begin(), outputs_.end());
    op.attrs_size = static_cast<uint32_t>(p_.op_attrs_.size() - op.attrs_begin);
    p_.ops_.push_back(op);
  }

  ProgramSlot Slot() {
    ProgramSlot s;
    s.args_begin = static_cast<uint32_t>(p_.args_.size());
    Fields(in_, [&](uint32_t tag) {
      if (Field(tag) == 1) return String(in_, tag, &s.parameter);
      if (Field(tag) != 2 || Wire(tag) != kBytes) return false;
      p_.args_.push_back(p_.names_.Intern(Bytes(in_)));
      return true;
    });
    s.args_size = static_cast<uint32_t>(p_.args_.size() - s.args_begin);
    return s;
  }

  // An attribute: the same bytes as one read before are that one; others are decoded.
  AttrId Attr() {
    const std::string_view bytes = Bytes(in_);
    const size_t known = attr_bytes_.offsets.size() - 1;
    const StrId seen = attr_bytes_.Intern(bytes);
    if (seen < known) return seen;
    const std::string_view stored = attr_bytes_.Get(seen);
    CodedInputStream in(reinterpret_cast<const uint8_t*>(stored.data()), static_cast<int>(stored.size()));
    p_.attrs_.push_back(DecodeAttr(in));
    return static_cast<AttrId>(p_.attrs_.size() - 1);
  }

  // Every value field of OpDesc.Attr, as read; ProgramAttr keeps those `type` selects.
  struct AttrFields {
    int64_t i = 0, b = 0, block_idx = 0, l = 0;
    double f = 0, float64 = 0;
    std::string s, var_name;
    std::vector<int64_t> ints, bools, blocks_idx, longs;
    std::vector<double> floats, float64s;
    std::vector<std::string> strings, vars_name;
    int32_t scalar_type = 0;
    int64_t scalar_i = 0;
    double scalar_r = 0;
    uint32_t scalars = 0;
  };

  ProgramAttr DecodeAttr(CodedInputStream& in) {
    ProgramAttr a;
    AttrFields v;
    const auto text = [&](uint32_t tag, std::string* out) {
      if (Wire(tag) != kBytes) return false;
      *out = std::string(Bytes(in));
      return true;
    };
    const auto ints = [&](uint32_t tag, std::vector<int64_t>* out) {
      return Repeated(in, tag, kVarint, [&] { out->push_back(Varint(in)); });
    };
    Fields(in, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return String(in, tag, &a.name);
        case 2: return Scalar(in, tag, &a.type);
        case 3: return Scalar(in, tag, &v.i);
        case 4: return Wire(tag) == kFixed32 && ((v.f = Float(in)), true);
        case 5: return text(tag, &v.s);
        case 6: return ints(tag, &v.ints);
        case 7: return Repeated(in, tag, kFixed32, [&] { v.floats.push_back(Float(in)); });
        case 8: return Wire(tag) == kBytes && (v.strings.emplace_back(Bytes(in)), true);
        case 10: return Scalar(in, tag, &v.b);
        case 11: return ints(tag, &v.bools);
        case 12: return Scalar(in, tag, &v.block_idx);
        case 13: return Scalar(in, tag, &v.l);
        case 14: return ints(tag, &v.blocks_idx);
        case 15: return ints(tag, &v.longs);
        case 16: return Repeated(in, tag, kFixed64, [&] { v.float64s.push_back(Double(in)); });
        case 17: return text(tag, &v.var_name);
        case 18: return Wire(tag) == kBytes && (v.vars_name.emplace_back(Bytes(in)), true);
        case 19: return Wire(tag) == kFixed64 && ((v.float64 = Double(in)), true);
        case 20:
          return Message(
              tag, [&] { ScalarValue(in, &v); }, &in);
        case 21:
          return Message(
              tag,
              [&] {
                AttrFields ignored;
                ScalarValue(in, &ignored);
                ++v.scalars;
              },
              &in);
        default: return false;
      }
    });
    if (!in.ConsumedEntireMessage()) throw Malformed{"malformed attribute"};
    const auto list = [&](auto& array, const auto& values, auto convert) {
      a.list_begin = static_cast<uint32_t>(array.size());
      a.list_size = static_cast<uint32_t>(values.size());
      for (const auto& x : values) array.push_back(convert(x));
    };
    const auto same = [](auto x) { return x; };
    const auto intern = [&](const std::string& x) { return p_.names_.Intern(x); };
    switch (a.type) {
      case proto::INT: a.i = static_cast<int32_t>(v.i); break;
      case proto::LONG: a.i = v.l; break;
      case proto::BOOLEAN: a.i = v.b != 0; break;
      case proto::BLOCK: a.i = static_cast<int32_t>(v.block_idx); break;
      case proto::FLOAT: a.f = v.f; break;
      case proto::FLOAT64: a.f = v.float64; break;
      case proto::STRING: a.s = intern(v.s); break;
      case proto::VAR: a.s = intern(v.var_name); break;
      case proto::INTS: list(p_.ints_, v.ints, [](int64_t x) { return int64_t{static_cast<int32_t>(x)}; }); break;
      case proto::LONGS: list(p_.ints_, v.longs, same); break;
      case proto::BOOLEANS: list(p_.ints_, v.bools, [](int64_t x) { return int64_t{x != 0}; }); break;
      case proto::BLOCKS:
        list(p_.ints_, v.blocks_idx, [](int64_t x) { return int64_t{static_cast<int32_t>(x)}; });
        break;
      case proto::FLOATS: list(p_.floats_, v.floats, same); break;
      case proto::FLOAT64S: list(p_.floats_, v.float64s, same); break;
      case proto::STRINGS: list(p_.strs_, v.strings, intern); break;
      case proto::VARS: list(p_.strs_, v.vars_name, intern); break;
      case proto::SCALAR:
        a.scalar_type = v.scalar_type;
        a.i = v.scalar_i;
        a.f = v.scalar_r;
        break;
      case proto::SCALARS: a.list_size = v.scalars; break;
      default: break;
    }
    return a;
  }

  void ScalarValue(CodedInputStream& in, AttrFields* v) {
    int64_t b = 0;
    Fields(in, [&](uint32_t tag) {
      switch (Field(tag)) {
        case 1: return Scalar(in, tag, &v->scalar_type);
        case 2: return Scalar(in, tag, &b);
        case 3: return Scalar(in, tag, &v->scalar_i);
        case 4: return Wire(tag) == kFixed64 && ((v->scalar_r = Double(in)), true);
        default: return false;  // a complex value (5) is skipped: no schema type reads one
      }
    });
    if (v->scalar_type == proto::Scalar::BOOLEAN) v->scalar_i = b != 0;
  }

  Program& p_;
  CodedInputStream& in_;
  Program::StringTable attr_bytes_;  // the wire bytes of each distinct attribute, by AttrId
  std::vector<ProgramSlot> inputs_, outputs_;
  std::string scratch_;
  int64_t version_ = 0, fluid_version_ = 0;
};

namespace {

// `size`: the input's length (REQUIRES size < INT_MAX). A total-bytes limit just past it
// bounds every length the input claims, so no claim past its end makes the stream reserve
// memory for it (the end itself must lie short of the limit to count as a message's end).
std::shared_ptr<const Program> Decode(CodedInputStream& in, const std::string& source, int size) {
  in.SetTotalBytesLimit(size + 1);
  auto program = std::make_shared<Program>();
  try {
    ProgramDecoder(*program, in).Decode();
  } catch (const Malformed& m) {
    throw Error(source + ": not a valid serialized ProgramDesc (" + m.what + " near byte " +
                    std::to_string(in.CurrentPosition()) + ")",
                RILL_INVALID_ARGUMENT);
  }
  return program;
}

}  // namespace

std::shared_ptr<const Program> Program::Parse(std::string_view bytes, const std::string& source) {
  if (bytes.size() >= static_cast<size_t>(INT_MAX))
    throw Error(source + ": a program is at most 2 GiB", RILL_INVALID_ARGUMENT);
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  return Decode(in, source, static_cast<int>(bytes.size()));
}

std::shared_ptr<const Program> Program::ParseFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open program '" + path + "'", RILL_NOT_FOUND);
  google::protobuf::io::FileInputStream file(fd, 1 << 20);
  file.SetCloseOnDelete(true);
  struct stat st {};
  if (fstat(fd, &st) != 0) throw Error("cannot read program '" + path + "': " + std::strerror(errno), RILL_NOT_FOUND);
  if (st.st_size >= INT_MAX) throw Error(path + ": a program is at most 2 GiB", RILL_INVALID_ARGUMENT);
  CodedInputStream in(&file);
  auto program = Decode(in, path, static_cast<int>(st.st_size));
  if (file.GetErrno() != 0)
    throw Error("cannot read program '" + path + "': " + std::strerror(file.GetErrno()), RILL_NOT_FOUND);
  return program;
}

std::shared_ptr<const Program> Program::FromProto(const proto::ProgramDesc& program) {
  return Parse(program.SerializeAsString(), "<program>");
}

}  // namespace rill::core
