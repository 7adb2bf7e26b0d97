#!/usr/bin/env bash
# Installs every build and test dependency of Rill from Debian packages.
# Idempotent: packages already present are left as they are. Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  # core
  libboost-dev libboost-context-dev libprotobuf-dev protobuf-compiler libspdlog-dev libfmt-dev
  # math plugin: Eigen, and oneDNN for the fp32 GEMMs and convolutions
  libeigen3-dev libdnnl-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev python3 python3-numpy
  # rill graph renders pictures with Graphviz's dot; rill's command line is on CLI11
  graphviz libcli11-dev
  # the Python package (rill.fluid) and its tests
  pybind11-dev python3-dev python3-protobuf python3-pytest
  # the model ops' independent reference, and the models' benchmark peer; the detection
  # ops' peer (torchvision.ops); edit_distance's peer in bench/op_compare.py
  python3-torch python3-torchvision python3-levenshtein
  # Paddle's own op tests (tests/paddle/run_op_tests.py) compute some expected values with it
  python3-scipy
  # the CSP benchmarks' peer: the same benchmarks in Go
  golang-go
  # out-of-tree plugin test: a different compiler and standard library from the host's;
  # the fuzz targets: clang's libFuzzer and sanitizer runtimes
  clang libc++-dev libc++abi-dev libclang-rt-14-dev
  # distribution plugins (gRPC, Open MPI)
  libgrpc++-dev protobuf-compiler-grpc libopenmpi-dev openmpi-bin libssl-dev
  # dist tests: a cluster across network namespaces, TLS certificates
  iproute2 openssl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
