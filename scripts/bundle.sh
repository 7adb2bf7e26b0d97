#!/usr/bin/env bash
# Packs a built tree for a machine that has a GPU driver but none of Rill's build
# dependencies (a rented GPU box, a container with only the CUDA runtime):
#
#   bash scripts/bundle.sh [BUILD_DIR] [OUT_DIR]     # defaults: build, .bundle
#
# OUT_DIR/build mirrors BUILD_DIR's binaries, plugins and test fixtures, stripped, at the
# same relative paths (tests find them by the paths compiled in: point BUILD_DIR's absolute
# path at OUT_DIR/build there with a symbolic link); OUT_DIR/lib holds every shared library
# they load that is not the C/C++ runtime or the CUDA driver. cuBLAS and cuDNN are not
# packed (over 500 MiB each): the target's CUDA toolkit provides them. On the target:
#
#   export LD_LIBRARY_PATH=OUT_DIR/lib:/usr/local/cuda/lib64
set -euo pipefail

build=${1:-build}
out=${2:-.bundle}
[[ -x $build/bin/rill ]] || { echo "bundle.sh: $build/bin/rill not found: build first (scripts/build.sh)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/build" "$out/lib"

# Binaries, plugins and fixtures, stripped of debug information.
while IFS= read -r f; do
  mkdir -p "$out/build/$(dirname "$f")"
  strip --strip-debug -o "$out/build/$f" "$build/$f" 2>/dev/null || cp "$build/$f" "$out/build/$f"  # not ELF: copied as is
done < <(cd "$build" && find bin lib tests/fixtures -type f \( -perm -u+x -o -name '*.so' \) ! -path '*/CMakeFiles/*')

# The shared libraries they load, except those every Linux (and every CUDA machine) has.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libcudnn)\.so'
{ find "$out/build" -type f \( -perm -u+x -o -name '*.so' \) -print0 | xargs -0 ldd 2>/dev/null || true; } \
  | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u \
  | while read -r name path; do
      if [[ ! $name =~ $skip ]] && [[ ! $name == librill_* ]]; then cp -L "$path" "$out/lib/$name"; fi
    done

du -sh "$out"
