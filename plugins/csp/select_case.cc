#include "select_case.h"

#include <stdexcept>
#include <vector>

namespace rill::csp {
namespace {

std::vector<std::string> SplitFields(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',') out.emplace_back();
    else if (c != ' ') out.back() += c;
  }
  return out;
}

}  // namespace

CaseText ParseCase(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return Error("select: case \"" + text + "\": " + why +
                 " (expected \"idx,type,channel,value\", "
                 "type 0 default, 1 send, 2 receive)");
  };
  const std::vector<std::string> f = SplitFields(text);
  if (f.size() < 2 || f.size() > 4) throw bad("wrong number of fields");
  CaseText c;
  try {
    size_t used = 0;
    c.idx = std::stoi(f[0], &used);
    if (used != f[0].size()) throw bad("idx is not an integer");
    const int type = std::stoi(f[1], &used);
    if (used != f[1].size() || type < 0 || type > 2) throw bad("type must be 0, 1 or 2");
    c.kind = static_cast<SelectCase::Kind>(type);
  } catch (const std::logic_error&) {
    throw bad("idx and type must be integers");
  }
  if (f.size() > 2) c.channel = f[2];
  if (f.size() > 3) c.value = f[3];
  if (c.kind != SelectCase::kDefault && (c.channel.empty() || c.value.empty())) {
    throw bad("a send or receive case names a channel and a value");
  }
  return c;
}

}  // namespace rill::csp
