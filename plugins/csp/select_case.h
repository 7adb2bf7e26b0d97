// plugins/csp/select_case.h — one case of a select op as Fluid's `cases` attribute writes it.
//
// Contract: ParseCase reads "idx,type,channel,value" (spaces ignored; type 0 default,
// 1 send, 2 receive; a default case may leave out channel and value). Anything else throws
// Error quoting the case and what is wrong with it; no input makes it fail otherwise.
#ifndef RILL_PLUGINS_CSP_SELECT_CASE_H_
#define RILL_PLUGINS_CSP_SELECT_CASE_H_

#include <cstdint>
#include <string>

#include "select.h"

namespace rill {
namespace [[gnu::visibility("hidden")]] csp {

struct CaseText {
  int32_t idx = 0;
  SelectCase::Kind kind = SelectCase::kDefault;
  std::string channel, value;
};

CaseText ParseCase(const std::string& text);

}  // namespace csp
}  // namespace rill

#endif  // RILL_PLUGINS_CSP_SELECT_CASE_H_
