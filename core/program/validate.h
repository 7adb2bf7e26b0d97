// core/program/validate.h — checking a program against the registry before it runs.
//
// Checks: blocks are numbered in order and every parent exists with no cycle; every op
// type is registered (else: which plugin has it, or that none loaded does); inputs and
// outputs name declared slots, required slots are present, non-duplicable slots hold
// one variable; attributes have the declared type, required ones are set, block indices
// exist. Each problem names the block and op index. Attributes a schema does not declare
// (Paddle's op_role, op_callstack, op_device, ...) are allowed and ignored, and so is a
// slot a schema does not declare if it names no variable (Paddle writes scale's unused
// ScaleTensor so).
#ifndef RILL_CORE_PROGRAM_VALIDATE_H_
#define RILL_CORE_PROGRAM_VALIDATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/program/program.h"
#include "core/proto/framework.pb.h"
#include "core/registry/registry.h"

namespace rill::core {

// Op types no enabled plugin provides, with how many ops of each the program has: most
// frequent first, then by name.
using MissingOps = std::vector<std::pair<std::string, int64_t>>;

// Every problem found, one line each; empty if the program is valid. With `missing`, ops
// of a type no enabled plugin provides are counted there instead of listed one by one.
std::vector<std::string> ValidateProgram(const Program& program, const Registry& registry,
                                         MissingOps* missing = nullptr);
// Throws Error with the first problem (and how many more there are).
void ValidateProgramOrThrow(const Program& program, const Registry& registry);
// The same for a program built in memory (by the builder, the transpiler, backward).
std::vector<std::string> ValidateProgram(const proto::ProgramDesc& program, const Registry& registry,
                                         MissingOps* missing = nullptr);
void ValidateProgramOrThrow(const proto::ProgramDesc& program, const Registry& registry);

}  // namespace rill::core

#endif  // RILL_CORE_PROGRAM_VALIDATE_H_
