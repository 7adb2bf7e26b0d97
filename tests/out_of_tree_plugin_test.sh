#!/usr/bin/env bash
# Builds examples/third_party_plugin out of tree against the *installed* SDK twice, with
# clang++ and libc++ and with g++ and libstdc++, checks that the clang build really uses
# libc++ while the host uses libstdc++ and that each exports only its entry point, and
# runs the example's programs through the installed `rill` with each: every op works, and
# an op's error reaches the user naming the op.
# usage: out_of_tree_plugin_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
example=$src/examples/third_party_plugin
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
rill=$work/prefix/bin/rill

needed() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; }
fail() { echo "FAIL ($1): $2"; exit 1; }

# build_and_run NAME CMAKE-ARGS...: the plugin built that way; its checks.
build_and_run() {
  local name=$1
  shift
  # The plugin is uninstrumented even when the host is built with sanitizers.
  env -u CXXFLAGS -u LDFLAGS cmake -S "$example" -B "$work/$name" -DCMAKE_PREFIX_PATH="$work/prefix" "$@" >/dev/null
  cmake --build "$work/$name" >/dev/null
  plugin=$work/$name/librill_example_ops.so
  local exports
  exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
  [ "$exports" = "RillGetPlugin" ] || fail "$name" "plugin exports more than its entry point: $exports"

  local out expected
  out=$(env -u RILL_PLUGIN_PATH "$rill" --plugin "$plugin" run "$example/softsign.pbtxt" --fetch y --fetch i)
  expected=$'y fp32 [3] 0.75 0.75 0.75\ni int64 [1] 2'
  [ "$out" = "$expected" ] || fail "$name" "softsign.pbtxt printed: $out"

  out=$(env -u RILL_PLUGIN_PATH "$rill" --plugin "$plugin" run "$example/example_ops.pbtxt" \
        --fetch y --fetch p --fetch n --fetch m)
  expected=$'y fp32 [3] -2 0 3\np fp32 [3] 0 0.25 3\nn fp32 [3] -2 0 0\nm fp64 [1] 1.5'
  [ "$out" = "$expected" ] || fail "$name" "example_ops.pbtxt printed: $out"

  local err rc=0
  err=$(env -u RILL_PLUGIN_PATH "$rill" --plugin "$plugin" run "$example/hard_shrink_negative.pbtxt" 2>&1) || rc=$?
  [ "$rc" = 1 ] || fail "$name" "a failing op exited $rc: $err"
  case "$err" in
    *"block 0, op 1 (example_hard_shrink X=[x] -> Out=[y]): threshold must be at least 0, got -1"*) ;;
    *) fail "$name" "the op's error does not name it: $err" ;;
  esac
  "$rill" --plugin "$plugin" describe example_sign_split | grep -q "example_sign_split  (plugin example_ops)" ||
    fail "$name" "describe does not name the plugin"
}

build_and_run clang-libcxx -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
  -DCMAKE_MODULE_LINKER_FLAGS="-stdlib=libc++"
needed "$plugin" | grep -q '^libc++\.so' || fail clang-libcxx "plugin does not link libc++: $(needed "$plugin")"
needed "$rill" | grep -q '^libstdc++\.so' || fail clang-libcxx "host does not link libstdc++"
build_and_run gcc-libstdcxx -DCMAKE_CXX_COMPILER=g++
echo "PASS: the example plugin, built against the installed SDK with clang++/libc++ and with g++, runs in the g++/libstdc++ host"
