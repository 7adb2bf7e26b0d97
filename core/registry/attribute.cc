#include "core/registry/attribute.h"

#include <sstream>

#include "core/errors.h"
#include "rill/abi.h"

namespace rill::core {

// The schema types (RillAttrType) are framework.proto's AttrType numbers 0 to 10.
static_assert(int{RILL_ATTR_BLOCKS} == int{proto::BLOCKS} && int{RILL_ATTR_LONG} == int{proto::LONG} &&
              int{RILL_ATTR_BOOLEANS} == int{proto::BOOLEANS});

std::string AttrTypeName(int32_t type) {
  static const char* kNames[] = {"INT",      "FLOAT",    "STRING", "INTS",    "FLOATS", "STRINGS",
                                 "BOOLEAN",  "BOOLEANS", "BLOCK",  "LONG",    "BLOCKS", "LONGS",
                                 "FLOAT64S", "VAR",      "VARS",   "FLOAT64", "SCALAR", "SCALARS"};
  if (type >= 0 && type <= proto::SCALARS) return kNames[type];
  return "attr_type(" + std::to_string(type) + ")";
}

namespace {

bool IsIntType(int32_t t) { return t == RILL_ATTR_INT || t == RILL_ATTR_LONG; }
bool IsFloatType(int32_t t) { return t == RILL_ATTR_FLOAT || t == proto::FLOAT64; }

// The schema type a SCALAR value reads as; -1 for a complex one, which none declares.
int32_t ScalarReadsAs(const ProgramAttr& a) {
  switch (a.scalar_type) {
    case proto::Scalar::BOOLEAN: return RILL_ATTR_BOOLEAN;
    case proto::Scalar::LONG: return RILL_ATTR_LONG;
    case proto::Scalar::FLOAT64: return RILL_ATTR_FLOAT;
    default: return -1;
  }
}

}  // namespace

bool AttrCompatible(int32_t declared, const ProgramAttr& given) {
  int32_t t = given.type;
  if (t < 0) return false;
  if (t == proto::SCALAR) {
    t = ScalarReadsAs(given);
    if (t < 0) return false;
  }
  if (t == declared || (IsIntType(declared) && IsIntType(t))) return true;
  switch (declared) {
    // Paddle's loader reads an int or a float as a bool (non-zero is true): Paddle up to 1.6
    // saved every boolean attribute as INT.
    case RILL_ATTR_BOOLEAN: return IsIntType(t) || IsFloatType(t);
    case RILL_ATTR_BOOLEANS: return t == proto::INTS || t == proto::LONGS;
    // An int64 reads a float by truncation, as Paddle's ExtractAttribute<int64_t> does.
    case RILL_ATTR_LONG: return IsFloatType(t);
    case RILL_ATTR_FLOAT: return IsIntType(t) || t == proto::FLOAT64;
    case RILL_ATTR_INTS: return t == proto::LONGS;
    case RILL_ATTR_FLOATS: return t == proto::FLOAT64S;
    default: return false;
  }
}

std::string AttrDescription(const Program& program, const ProgramAttr& given) {
  if (given.type < 0) return "no type";
  std::string d = AttrTypeName(given.type);
  if (given.type == proto::SCALAR) {
    static const char* kKinds[] = {"?", "bool", "int64", "fp64", "complex128"};
    const int k = given.scalar_type;
    d += std::string(" (") + (k >= 1 && k <= 4 ? kKinds[k] : "?") + ")";
  }
  if (given.type == proto::VAR) d += " (variable '" + std::string(program.str(given.s)) + "')";
  return d;
}

AttrValue ZeroAttr(int32_t type) {
  AttrValue v;
  v.type = type;
  return v;
}

namespace {

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

int64_t ParseInt(const std::string& text) {
  const std::string t = Trim(text);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size()) throw Error("'" + text + "' is not an integer");
  return v;
}

double ParseFloat(const std::string& text) {
  const std::string t = Trim(text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (t.empty() || used != t.size()) throw Error("'" + text + "' is not a number");
  return v;
}

bool ParseBool(const std::string& text) {
  const std::string t = Trim(text);
  if (t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  throw Error("'" + text + "' is not a boolean");
}

// Splits "[a, b, c]" into its elements; "" -> "[]" is not allowed.
std::vector<std::string> SplitList(const std::string& text) {
  const std::string t = Trim(text);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') {
    throw Error("list default '" + text + "' must be written [a, b, ...]");
  }
  std::vector<std::string> out;
  const std::string body = Trim(t.substr(1, t.size() - 2));
  if (body.empty()) return out;
  std::string item;
  bool quoted = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\\' && quoted && i + 1 < body.size()) {
      item += body[++i];
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(Trim(item));
      item.clear();
    } else {
      item += c;
    }
  }
  if (quoted) throw Error("unterminated string in list default '" + text + "'");
  out.push_back(Trim(item));
  return out;
}

}  // namespace

AttrValue ParseAttrDefault(int32_t type, const std::string& text) {
  AttrValue v = ZeroAttr(type);
  switch (type) {
    case RILL_ATTR_INT:
    case RILL_ATTR_LONG:
    case RILL_ATTR_BLOCK: v.i = ParseInt(text); break;
    case RILL_ATTR_FLOAT: v.f = ParseFloat(text); break;
    case RILL_ATTR_BOOLEAN: v.i = ParseBool(text); break;
    case RILL_ATTR_STRING: v.s = text; break;
    case RILL_ATTR_INTS:
      for (auto& e : SplitList(text)) v.ints.push_back(ParseInt(e));
      break;
    case RILL_ATTR_FLOATS:
      for (auto& e : SplitList(text)) v.floats.push_back(static_cast<float>(ParseFloat(e)));
      break;
    case RILL_ATTR_BOOLEANS:
      for (auto& e : SplitList(text)) v.bools.push_back(ParseBool(e));
      break;
    case RILL_ATTR_STRINGS: v.strings = SplitList(text); break;
    case RILL_ATTR_BLOCKS:
      for (auto& e : SplitList(text)) v.blocks.push_back(static_cast<int32_t>(ParseInt(e)));
      break;
    default: throw Error("unknown attribute type " + std::to_string(type));
  }
  return v;
}

AttrValue AttrFromProgram(const Program& program, const ProgramAttr& a, int32_t declared) {
  AttrValue v = ZeroAttr(declared);
  // A scalar attribute's value, whichever of int, float and SCALAR the program stored.
  const bool given_float = a.type == proto::FLOAT || a.type == proto::FLOAT64 ||
                           (a.type == proto::SCALAR && a.scalar_type == proto::Scalar::FLOAT64);
  switch (declared) {
    case RILL_ATTR_INT:
    case RILL_ATTR_LONG:
    case RILL_ATTR_BLOCK: v.i = given_float ? static_cast<int64_t>(a.f) : a.i; break;
    case RILL_ATTR_BOOLEAN: v.i = given_float ? a.f != 0 : a.i != 0; break;
    case RILL_ATTR_FLOAT: v.f = given_float ? a.f : static_cast<double>(a.i); break;
    case RILL_ATTR_STRING: v.s = program.str(a.s); break;
    case RILL_ATTR_INTS: {
      const auto xs = program.ints(a);
      v.ints.assign(xs.begin(), xs.end());
      break;
    }
    case RILL_ATTR_BOOLEANS:
      for (int64_t b : program.ints(a)) v.bools.push_back(b != 0);
      break;
    case RILL_ATTR_BLOCKS:
      for (int64_t b : program.ints(a)) v.blocks.push_back(static_cast<int32_t>(b));
      break;
    case RILL_ATTR_FLOATS:
      for (double x : program.floats(a)) v.floats.push_back(static_cast<float>(x));
      break;
    case RILL_ATTR_STRINGS:
      for (StrId s : program.strings(a)) v.strings.emplace_back(program.str(s));
      break;
  }
  return v;
}

std::string AttrValue::ToString() const {
  std::ostringstream os;
  const auto list = [&os](const auto& xs, auto fmt) {
    os << "[";
    for (size_t k = 0; k < xs.size(); ++k) {
      if (k) os << ", ";
      fmt(xs[k]);
    }
    os << "]";
  };
  switch (type) {
    case RILL_ATTR_INT:
    case RILL_ATTR_LONG:
    case RILL_ATTR_BLOCK: os << i; break;
    case RILL_ATTR_FLOAT: os << f; break;
    case RILL_ATTR_BOOLEAN: os << (i ? "true" : "false"); break;
    case RILL_ATTR_STRING: os << '"' << s << '"'; break;
    case RILL_ATTR_INTS: list(ints, [&](int64_t x) { os << x; }); break;
    case RILL_ATTR_FLOATS: list(floats, [&](float x) { os << x; }); break;
    case RILL_ATTR_BOOLEANS: list(bools, [&](uint8_t x) { os << (x ? "true" : "false"); }); break;
    case RILL_ATTR_STRINGS: list(strings, [&](const std::string& x) { os << '"' << x << '"'; }); break;
    case RILL_ATTR_BLOCKS: list(blocks, [&](int32_t x) { os << x; }); break;
    default: os << "?";
  }
  return os.str();
}

}  // namespace rill::core
