#!/usr/bin/env bash
# Installs the pinned NVIDIA driver (open kernel modules, built for the image's kernel) on
# the EKS-optimized Amazon Linux 2023 image, and optionally the NVIDIA container toolkit and the
# fabric manager. Runs once, in the EC2 Image Builder build phase: the node image carries the
# driver, so no node ever compiles a kernel module at boot.
#
# Inputs (environment):
#   DRIVER_VERSION    e.g. 580.105.08 (required)
#   TOOLKIT_VERSION   e.g. 1.18.1; empty: leave the container runtime to the toolkit DaemonSet
#   FABRIC_MANAGER    "true" on NVSwitch instance families (p4d, p4de, p5, p5e, p5en, p6-b200)
set -euo pipefail

: "${DRIVER_VERSION:?DRIVER_VERSION is required, e.g. 580.105.08}"
TOOLKIT_VERSION="${TOOLKIT_VERSION:-}"
FABRIC_MANAGER="${FABRIC_MANAGER:-false}"

readonly DOWNLOADS="https://us.download.nvidia.com/tesla"
readonly FM_ARCHIVE="https://developer.download.nvidia.com/compute/nvidia-driver/redist/fabricmanager/linux-x86_64"
readonly TOOLKIT_REPO="https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo"

log() { printf '[install-nvidia-driver] %s\n' "$*"; }

install_build_dependencies() {
  local kernel
  kernel="$(uname -r)"
  log "kernel ${kernel}: installing its headers and a compiler"
  # The virtual provide names the headers of exactly the running kernel, whatever the package is
  # called (kernel-devel on 6.1 images, kernel6.12-devel on 6.12 images).
  dnf install -y "kernel-devel-uname-r == ${kernel}" gcc make tar xz
}

install_driver() {
  local installer="NVIDIA-Linux-x86_64-${DRIVER_VERSION}.run"
  local workdir
  workdir="$(mktemp -d)"
  log "driver ${DRIVER_VERSION}: downloading ${installer}"
  curl -fsSL --retry 5 -o "${workdir}/${installer}" "${DOWNLOADS}/${DRIVER_VERSION}/${installer}"
  # Open kernel modules: required by Blackwell, supported on every GPU the matrix lists. R560+
  # installers name the choice --kernel-module-type; older ones pick the kernel-open build directory.
  local module_flag="--kernel-module-type=open"
  if (( ${DRIVER_VERSION%%.*} < 560 )); then
    module_flag="--kernel-module-build-directory=kernel-open"
  fi
  # No DKMS: the image is never updated in place. A new kernel comes with a new image, which
  # builds the modules again here.
  sh "${workdir}/${installer}" --silent "${module_flag}" --no-questions --ui=none
  rm -rf "${workdir}"
  # Persistence keeps the driver initialised between jobs (slow first CUDA call otherwise).
  systemctl enable nvidia-persistenced.service || log "nvidia-persistenced unit not shipped; skipping"
}

install_fabric_manager() {
  local archive="fabricmanager-linux-x86_64-${DRIVER_VERSION}-archive"
  local workdir
  workdir="$(mktemp -d)"
  log "fabric manager ${DRIVER_VERSION}: NVSwitch family"
  curl -fsSL --retry 5 -o "${workdir}/${archive}.tar.xz" "${FM_ARCHIVE}/${archive}.tar.xz"
  tar -xJf "${workdir}/${archive}.tar.xz" -C "${workdir}"
  cp -r "${workdir}/${archive}/bin/." /usr/bin/
  cp -r "${workdir}/${archive}/lib/." /usr/lib64/
  mkdir -p /usr/share/nvidia/nvswitch
  cp -r "${workdir}/${archive}/share/nvidia/nvswitch/." /usr/share/nvidia/nvswitch/
  cp "${workdir}/${archive}/systemd/nvidia-fabricmanager.service" /usr/lib/systemd/system/
  cp "${workdir}/${archive}/etc/fabricmanager.cfg" /usr/share/nvidia/nvswitch/fabricmanager.cfg
  systemctl enable nvidia-fabricmanager.service
  rm -rf "${workdir}"
}

install_toolkit() {
  log "container toolkit ${TOOLKIT_VERSION}: registering the nvidia runtime in containerd"
  curl -fsSL --retry 5 -o /etc/yum.repos.d/nvidia-container-toolkit.repo "${TOOLKIT_REPO}"
  dnf install -y "nvidia-container-toolkit-${TOOLKIT_VERSION}"
  # A drop-in, not an edit of config.toml: nodeadm regenerates config.toml at every boot and
  # imports /etc/containerd/config.d/*.toml.
  mkdir -p /etc/containerd/config.d
  nvidia-ctk runtime configure --runtime=containerd --config=/etc/containerd/config.d/99-nvidia.toml --set-as-default=false
}

main() {
  install_build_dependencies
  install_driver
  if [[ "${FABRIC_MANAGER}" == "true" ]]; then
    install_fabric_manager
  fi
  if [[ -n "${TOOLKIT_VERSION}" ]]; then
    install_toolkit
  fi
  dnf clean all
  log "done: driver ${DRIVER_VERSION}${TOOLKIT_VERSION:+, toolkit ${TOOLKIT_VERSION}}, fabric manager ${FABRIC_MANAGER}"
}

main "$@"
