// bench/proto_parse_bench.cc — protobuf's own parser on a program file: the peer that
// `rill check` is measured against (bench/program_load_compare.py).
//
// Reads FILE into memory, then times ParseFromString into protobuf's generated
// ProgramDesc messages (MODE plain) or into messages on one arena (MODE arena), and prints
// the parse's seconds. Nothing else is done with the messages.
//
// usage: rill_bench_proto_parse plain|arena FILE
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <google/protobuf/arena.h>

#include "core/proto/framework.pb.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s plain|arena FILE\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool arena_mode = std::string(argv[1]) == "arena";
  google::protobuf::Arena arena;
  rill::proto::ProgramDesc plain;
  rill::proto::ProgramDesc* program =
      arena_mode ? google::protobuf::Arena::CreateMessage<rill::proto::ProgramDesc>(&arena) : &plain;
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = program->ParseFromString(bytes);
  const auto t1 = std::chrono::steady_clock::now();
  if (!ok) return 1;
  std::printf("%.4f\n", std::chrono::duration<double>(t1 - t0).count());
  return 0;
}
