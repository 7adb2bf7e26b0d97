#!/usr/bin/env bash
# Builds examples/third_party_plugin out of tree with clang++ and libc++ against the
# *installed* SDK, checks the plugin really uses libc++ while the host uses libstdc++,
# and runs a program with the plugin's op through the installed `rill`.
# usage: out_of_tree_plugin_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null

# The plugin is uninstrumented even when the host is built with sanitizers.
env -u CXXFLAGS -u LDFLAGS cmake -S "$src/examples/third_party_plugin" -B "$work/build" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
  -DCMAKE_MODULE_LINKER_FLAGS="-stdlib=libc++" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
plugin=$work/build/librill_softsign.so

needed() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; }
needed "$plugin" | grep -q '^libc++\.so' || { echo "FAIL: plugin does not link libc++"; needed "$plugin"; exit 1; }
needed "$work/prefix/bin/rill" | grep -q '^libstdc++\.so' || { echo "FAIL: host does not link libstdc++"; exit 1; }
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}')
[ "$exports" = "RillGetPlugin" ] || { echo "FAIL: plugin exports more than its entry point: $exports"; exit 1; }

out=$(env -u RILL_PLUGIN_PATH "$work/prefix/bin/rill" --plugin "$plugin" run "$src/examples/third_party_plugin/softsign.pbtxt" --fetch y --fetch i)
expected=$'y fp32 [3] 0.75 0.75 0.75\ni int64 [1] 2'
if [ "$out" != "$expected" ]; then
  echo "FAIL: unexpected output:"; echo "$out"; exit 1
fi
"$work/prefix/bin/rill" --plugin "$plugin" describe softsign | grep -q "softsign  (plugin softsign)"
echo "PASS: clang++/libc++ plugin built against the installed SDK runs in the g++/libstdc++ host"
