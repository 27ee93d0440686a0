# Shared by share/dev/start and share/dev/test: what Sandgate needs from
# Debian and npm, installed only when missing. Sourced, not run.

sandgate_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${SANDGATE_BUILD_DIR:-$sandgate_root/build}

# What building and running the gateway and its kernels needs.
build_packages=(
  cmake g++ make pkg-config
  libzmq3-dev cppzmq-dev libssl-dev nlohmann-json3-dev
  libboost1.81-dev libseccomp-dev libsqlite3-dev
  xeus-dev xeus-python-dev pybind11-dev python3-dev
  python3-numpy python3-matplotlib python3-matplotlib-inline python3-pandas python3-xeus-python-shell
  nodejs node-typescript
  bash coreutils procps util-linux iproute2
)
# The R kernel (kernelspec `ir`: Debian's R with IRkernel, ggplot2 for
# charts, a font for their text). share/dev/start installs it only with
# --with-r or SANDGATE_WITH_R=1; the tests always.
r_packages=(r-base-core r-cran-irkernel r-cran-ggplot2 fonts-dejavu-core)
# What the tests need besides.
test_packages=(
  "${r_packages[@]}"
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-jupyter-client python3-ipykernel jupyter-notebook python3-jupyter-server python3-websocket xpython
  python3-mypy python3-venv python3-pip python3-setuptools python3-wheel
  clang-14 libclang-rt-14-dev clang-format clang-tidy
  chromium fonts-dejavu-core openssl python3-ipywidgets jupyter-nbextension-jupyter-js-widgets
  haproxy tmux
)

# Installs the named Debian packages that are not installed yet.
install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "sandgate: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "sandgate: run as root to install packages (or install them yourself)" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures and builds into $build_dir with the given extra cmake options.
build_sandgate() {
  cmake -S "$sandgate_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)"
}

# Builds only what runs (the gateway, the sandbox supervisor, the kernels and
# their data) into $build_dir. A build dir the tests configured keeps its
# options; a new one is configured without tests and benchmarks.
build_runtime() {
  local options=()
  [ -f "$build_dir/CMakeCache.txt" ] || options=(-DSANDGATE_BUILD_TESTS=OFF -DSANDGATE_BUILD_BENCH=OFF)
  cmake -S "$sandgate_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${options[@]}" >/dev/null
  cmake --build "$build_dir" -j "$(nproc)" --target sandgate-runtime
}
