#!/usr/bin/env bash
# Bakes the pinned NVIDIA driver into the EKS-optimized Amazon Linux 2023 image, the way AWS bakes
# its own accelerated AMI (awslabs/amazon-eks-ami v20260714, commit b4fffb70,
# templates/al2023/provisioners/install-nvidia-driver.sh, cited below as "AWS <lines>"), but at the
# exact versions the stack names, from NVIDIA's repository, signature-checked, and version-locked.
# Runs once, in the EC2 Image Builder build phase: no node ever builds a kernel module at boot.
#
# Inputs (environment, set by components/aws/node_image.py):
#   DRIVER_VERSION          e.g. 580.105.08 (required): every driver package at exactly this version
#   KERNEL_MODULE           open | proprietary (required): the flavour the image's GPUs need
#   TOOLKIT_VERSION         e.g. 1.18.1; empty: the container runtime is left to the toolkit DaemonSet
#   FABRIC_MANAGER          "true" when some pool of the image is an NVSwitch family
#   NVLINK_SUBNET_MANAGER   "true" when some pool is a fourth-generation NVSwitch family (p6-b200)
#   NVSWITCH_INSTANCE_TYPES the instance types (space-separated) whose boot starts the fabric manager
#   NVLINK5_INSTANCE_TYPES  those of them with fourth-generation NVSwitch
#   GSP_FIRMWARE_OFF        "true" when the image's GPUs are ones AWS turns the GSP firmware off for (g5)
#   NVIDIA_DOMAIN           nvidia.com, or nvidia.cn in the China regions (AWS 34-39)
#
# What this script relies on and cannot be verified before a bake (README, "What is not verified
# offline"), each checked here so that a bake stops with a message saying which one failed: NVIDIA's
# amzn2023 repository signs its metadata (repodata/repomd.xml.asc, needed by repo_gpgcheck=1), it
# has the module stream nvidia-driver:<branch>-open or -dkms, and it has every package at exactly
# the versions named.
set -euo pipefail

: "${DRIVER_VERSION:?DRIVER_VERSION is required, e.g. 580.105.08}"
: "${KERNEL_MODULE:?KERNEL_MODULE is required: open or proprietary}"
TOOLKIT_VERSION="${TOOLKIT_VERSION:-}"
FABRIC_MANAGER="${FABRIC_MANAGER:-false}"
NVLINK_SUBNET_MANAGER="${NVLINK_SUBNET_MANAGER:-false}"
NVSWITCH_INSTANCE_TYPES="${NVSWITCH_INSTANCE_TYPES:-}"
NVLINK5_INSTANCE_TYPES="${NVLINK5_INSTANCE_TYPES:-}"
GSP_FIRMWARE_OFF="${GSP_FIRMWARE_OFF:-false}"
NVIDIA_DOMAIN="${NVIDIA_DOMAIN:-nvidia.com}"
# Tests only: a directory standing in for / for the files this script writes.
ROOT="${ROOT:-}"

readonly MAJOR="${DRIVER_VERSION%%.*}"
readonly REPO_URL="https://developer.download.${NVIDIA_DOMAIN}/compute/cuda/repos/amzn2023/x86_64"
# NVIDIA's CUDA repository key for RPM distributions, D42D0685.pub ("cudatools <cudatools@nvidia.com>"),
# which signs the packages and the repository metadata (repodata/repomd.xml.asc). Its fingerprint,
# pinned so that a key swapped on the download server is refused: github.com/NVIDIA/cuda-repo-management
# SIGNATURES.md at commit ee8303df ("RPM repo", examples 9 and 10).
readonly REPO_KEY_FINGERPRINT="610C7B14E068A878070DA4E99CD0A493D42D0685"
readonly REPO_KEY_FILE="/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA"
readonly BOOT_UNIT="gpu-platform-nvswitch.service"
readonly NVSWITCH_SCRIPT="/usr/libexec/gpu-platform/nvswitch-fabric"
readonly NVSWITCH_ENV="/etc/gpu-platform/nvswitch.env"

# What the build installed, locked at exactly these versions at the end, and for each lock the line
# `dnf versionlock list` must then show.
LOCKED=()
LOCK_PATTERNS=()

log() { printf '[install-nvidia-driver] %s\n' "$*"; }
fail() { log "ERROR: $*"; exit 1; }

escaped() { printf '%s' "${1//./\\.}"; }

# dnf-plugins-core's versionlock stores a lock as NAME-EPOCH:VERSION-RELEASE.* (plugins/versionlock.py
# at tag 4.3.0, pkgtup2spec lines 317-319), which `dnf versionlock list` prints line by line (195-197);
# NVIDIA's driver packages carry an epoch (kmod-nvidia-open-dkms-3:580.105.08-1.amzn2023.*), so a
# version is matched after the colon.
lock() {
  local name="$1" version="${2:-}"
  LOCKED+=("${name}${version:+-${version}}")
  LOCK_PATTERNS+=("^$(escaped "${name}")-[0-9]+:${version:+$(escaped "${version}")[-.]}")
}

# A package install that fails names what was asked for: a version NVIDIA's repository does not have
# is the likeliest cause, and the one this script cannot check before the bake.
install_exact() {
  dnf install -y "$@" || fail "dnf could not install $* from NVIDIA's repository ${REPO_URL} (or the Amazon Linux ones): check that each package exists there at exactly that version"
}

# The kernel package the running kernel came from: AL2023 names them kernel (6.1), kernel6.12,
# kernel6.18 (AWS 99-106).
kernel_package() {
  local release="$1"
  case "${release}" in
    6.1.*) echo "kernel" ;;
    *) echo "kernel$(cut -d. -f1,2 <<<"${release}")" ;;
  esac
}

add_repository() {
  local key fingerprint
  key="$(mktemp)"
  log "NVIDIA repository ${REPO_URL}, key ${REPO_KEY_FINGERPRINT}"
  curl -fsSL --retry 5 -o "${key}" "${REPO_URL}/D42D0685.pub"
  fingerprint="$(gpg --show-keys --with-colons "${key}" | awk -F: '$1 == "fpr" { print $10; exit }')"
  if [[ "${fingerprint}" != "${REPO_KEY_FINGERPRINT}" ]]; then
    fail "the repository key's fingerprint is '${fingerprint}', not ${REPO_KEY_FINGERPRINT}: refusing it"
  fi
  install -D -m 0644 "${key}" "${ROOT}${REPO_KEY_FILE}"
  rm -f "${key}"
  rpm --import "${ROOT}${REPO_KEY_FILE}"
  # Our own repo file rather than NVIDIA's downloaded one: packages and metadata both checked
  # against the pinned key (AWS 47-48 turns gpgcheck on for every repository after adding NVIDIA's).
  # module_hotfixes: the repository ships the kmod packages in module streams, whose filtering lets
  # dnf see only each stream's newest driver; a pinned older one is found only with the filtering
  # off (AWS 120-124 installs with --setopt=*.module_hotfixes=true for that reason). The exact
  # versions below keep the choice ours.
  mkdir -p "${ROOT}/etc/yum.repos.d"
  cat >"${ROOT}/etc/yum.repos.d/nvidia-cuda.repo" <<EOF
[nvidia-cuda]
name=NVIDIA CUDA repository for Amazon Linux 2023
baseurl=${REPO_URL}
enabled=1
gpgcheck=1
repo_gpgcheck=1
module_hotfixes=1
gpgkey=file://${REPO_KEY_FILE}
EOF
  # repo_gpgcheck=1 makes dnf verify repodata/repomd.xml against repomd.xml.asc: if NVIDIA does not
  # sign this repository's metadata, or signs it with another key, nothing can be installed from it.
  dnf -q makecache --disablerepo='*' --enablerepo=nvidia-cuda \
    || fail "NVIDIA's repository ${REPO_URL} could not be read, or its metadata signature (repodata/repomd.xml.asc, required by repo_gpgcheck=1) does not verify against key ${REPO_KEY_FINGERPRINT}"
}

install_kernel_build_dependencies() {
  local release package version
  release="$(uname -r)"
  package="$(kernel_package "${release}")"
  # 6.12.94-123.180.amzn2023.x86_64 -> 6.12.94-123.180.amzn2023: exactly the running kernel's
  # headers, so DKMS builds for the kernel this image boots (AWS 108-112 takes the newest instead).
  version="${release%.*}"
  log "kernel ${release} (${package}): headers and extra modules at exactly its version"
  install_exact "${package}-devel-${version}" "${package}-modules-extra-${version}"
  install_exact dkms
  lock "${package}" "${version}"
  lock "${package}-devel" "${version}"
  lock "${package}-modules-extra" "${version}"
  lock dkms
}

install_driver() {
  local kmod stream license
  # The CUDA repository's kmod packages come in module streams per branch and flavour (AWS 49-50,
  # 118-124); the branch's stream of the chosen flavour, then exact versions.
  if [[ "${KERNEL_MODULE}" == "open" ]]; then
    kmod="kmod-nvidia-open-dkms"
    stream="nvidia-driver:${MAJOR}-open"
    license="Dual MIT/GPL"
  elif [[ "${KERNEL_MODULE}" == "proprietary" ]]; then
    kmod="kmod-nvidia-latest-dkms"
    stream="nvidia-driver:${MAJOR}-dkms"
    license="NVIDIA"
  else
    fail "KERNEL_MODULE is '${KERNEL_MODULE}', not open or proprietary"
  fi
  log "driver ${DRIVER_VERSION}, ${KERNEL_MODULE} kernel modules (${kmod})"
  # AWS enables the open stream of the branch (AWS 50); the -dkms stream of the proprietary flavour
  # is NVIDIA's naming for the same repository, not seen in AWS's script.
  dnf -y module enable "${stream}" \
    || fail "NVIDIA's repository has no module stream ${stream} (the ${KERNEL_MODULE} kernel modules of the ${MAJOR} branch): see 'dnf module list nvidia-driver' on an AL2023 instance"
  # Compute only: the kernel modules, the CUDA user-space driver with nvidia-smi, and the
  # persistence daemon (AWS 266-267); no X11 packages.
  install_exact "${kmod}-${DRIVER_VERSION}" "nvidia-driver-cuda-${DRIVER_VERSION}" "nvidia-persistenced-${DRIVER_VERSION}"
  lock "${kmod}" "${DRIVER_VERSION}"
  lock nvidia-driver-cuda "${DRIVER_VERSION}"
  lock nvidia-persistenced "${DRIVER_VERSION}"
  # DKMS built the modules during the install: prove they are this version, this flavour (the open
  # modules declare MODULE_LICENSE("Dual MIT/GPL"), NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv.c;
  # the proprietary ones "NVIDIA"), and for the kernel the image boots, or stop the bake here rather
  # than at the test boot.
  local built
  built="$(modinfo -k "$(uname -r)" -F version nvidia)"
  [[ "${built}" == "${DRIVER_VERSION}" ]] || fail "DKMS built nvidia ${built}, not ${DRIVER_VERSION}, for $(uname -r)"
  [[ "$(modinfo -k "$(uname -r)" -F license nvidia)" == "${license}" ]] || fail "the nvidia module is not the ${KERNEL_MODULE} flavour"
  if [[ "${GSP_FIRMWARE_OFF}" == "true" ]]; then
    # The image serves only GPUs AWS turns the GSP firmware off for (g5's A10G; the stack refuses to
    # mix them with others), which only the proprietary flavour allows (AWS
    # runtime/gpu/nvidia-kmod-load.sh 84-93, by instance type at each boot: here one image, one GPU).
    [[ "${KERNEL_MODULE}" == "proprietary" ]] || fail "GSP_FIRMWARE_OFF needs the proprietary kernel modules (the open ones always run the GSP firmware)"
    mkdir -p "${ROOT}/etc/modprobe.d"
    echo "options nvidia NVreg_EnableGpuFirmware=0" >"${ROOT}/etc/modprobe.d/nvidia-gsp.conf"
  fi
  # Persistence keeps the driver initialised between jobs; the package ships the unit (AWS 279).
  systemctl enable nvidia-persistenced.service
}

install_fabric_manager() {
  # The package was renamed at 580: nvidia-fabric-manager before, nvidia-fabricmanager since (AWS 255-262).
  local package="nvidia-fabricmanager"
  if (( MAJOR < 580 )); then
    package="nvidia-fabric-manager"
  fi
  log "fabric manager ${DRIVER_VERSION} (${package}): some pool of this image has NVSwitch (${NVSWITCH_INSTANCE_TYPES})"
  install_exact "${package}-${DRIVER_VERSION}"
  lock "${package}" "${DRIVER_VERSION}"
  if [[ "${NVLINK_SUBNET_MANAGER}" == "true" ]]; then
    # Fourth-generation NVSwitch (AWS 230-239); ib_umad is loaded at boot, on such hardware only.
    log "NVLink subnet manager: some pool of this image has fourth-generation NVSwitch (${NVLINK5_INSTANCE_TYPES})"
    install_exact nvlsm libibumad infiniband-diags
    lock nvlsm
    lock libibumad
    lock infiniband-diags
  fi
  # Not enabled here: the boot unit starts it on the instance types that have NVSwitch (nvswitch-fabric.sh).
  [[ -x "${ROOT}${NVSWITCH_SCRIPT}" ]] || fail "${NVSWITCH_SCRIPT} is missing (the component's build step writes it first)"
  mkdir -p "${ROOT}$(dirname "${NVSWITCH_ENV}")" "${ROOT}/etc/systemd/system"
  printf 'NVSWITCH_INSTANCE_TYPES="%s"\nNVLINK5_INSTANCE_TYPES="%s"\n' "${NVSWITCH_INSTANCE_TYPES}" "${NVLINK5_INSTANCE_TYPES}" \
    >"${ROOT}${NVSWITCH_ENV}"
  # After the network (the script asks IMDS for the instance type) and the driver; the script bounds
  # its wait for the NVSwitch hardware, and the unit's own limit stays above that bound.
  cat >"${ROOT}/etc/systemd/system/${BOOT_UNIT}" <<EOF
[Unit]
Description=Start the NVIDIA fabric manager on instance types with NVSwitch
After=network-online.target nvidia-persistenced.service systemd-modules-load.service
Wants=network-online.target nvidia-persistenced.service

[Service]
Type=oneshot
EnvironmentFile=${NVSWITCH_ENV}
ExecStart=${NVSWITCH_SCRIPT}
RemainAfterExit=true
TimeoutStartSec=420

[Install]
WantedBy=multi-user.target
EOF
  systemctl enable "${BOOT_UNIT}"
}

install_toolkit() {
  log "container toolkit ${TOOLKIT_VERSION}"
  # NVIDIA's CUDA repository carries the toolkit (AWS 265 installs it from there); its four packages
  # at one version, as libnvidia-container requires matching versions.
  local package
  install_exact "nvidia-container-toolkit-${TOOLKIT_VERSION}" "nvidia-container-toolkit-base-${TOOLKIT_VERSION}" \
    "libnvidia-container-tools-${TOOLKIT_VERSION}" "libnvidia-container1-${TOOLKIT_VERSION}"
  for package in nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1; do
    lock "${package}" "${TOOLKIT_VERSION}"
  done
  # No containerd configuration: nodeadm renders /etc/containerd/config.toml at every boot from its
  # own templates, which import no drop-in, and makes `nvidia` the default runtime whenever
  # /usr/bin/nvidia-container-runtime exists (awslabs/amazon-eks-ami v20260714,
  # nodeadm/internal/containerd/runtime_config_nvidia.go lines 10-35, config.template.toml lines 8-29).
  # The binary is the registration.
  [[ -x "${ROOT}/usr/bin/nvidia-container-runtime" ]] || fail "the toolkit installed no /usr/bin/nvidia-container-runtime"
  # With `nvidia` the default runtime for every pod, refuse NVIDIA_VISIBLE_DEVICES from unprivileged
  # containers (the toolkit accepts it by default: internal/config/config.go line 106 at v1.18.1):
  # a pod gets GPUs only from the device plugin (CDI) or through a /var/run/nvidia-container-devices
  # volume mount, which needs a hostPath only an admitted pod may have (NVIDIA, "Preventing
  # unprivileged access to GPUs in Kubernetes"; internal/config/image/cuda_image.go lines 258-292).
  nvidia-ctk config --in-place \
    --set accept-nvidia-visible-devices-envvar-when-unprivileged=false \
    --set accept-nvidia-visible-devices-as-volume-mounts=true
}

lock_versions() {
  # A kernel or driver that moves on a node breaks the modules DKMS built for this one: both stay
  # exactly as baked (AWS 114 locks kernel*; the base image already has the versionlock plugin,
  # templates/al2023/provisioners/install-worker.sh line 68).
  local listed i
  log "version locks: ${LOCKED[*]}"
  dnf versionlock add "${LOCKED[@]}" || fail "dnf versionlock add failed"
  # `versionlock add` of a spec that matches no package only prints a notice (versionlock.py 273-274):
  # every lock is looked for as the plugin writes it.
  listed="$(dnf versionlock list)"
  for i in "${!LOCKED[@]}"; do
    grep -Eq -- "${LOCK_PATTERNS[$i]}" <<<"${listed}" \
      || fail "dnf versionlock holds no lock for ${LOCKED[$i]} (no line matching ${LOCK_PATTERNS[$i]} in 'dnf versionlock list')"
  done
}

main() {
  add_repository
  install_kernel_build_dependencies
  install_driver
  if [[ "${FABRIC_MANAGER}" == "true" ]]; then
    install_fabric_manager
  fi
  if [[ -n "${TOOLKIT_VERSION}" ]]; then
    install_toolkit
  fi
  lock_versions
  dnf clean all
  log "done: driver ${DRIVER_VERSION} (${KERNEL_MODULE}, GSP firmware off: ${GSP_FIRMWARE_OFF})${TOOLKIT_VERSION:+, toolkit ${TOOLKIT_VERSION}}, fabric manager ${FABRIC_MANAGER}, subnet manager ${NVLINK_SUBNET_MANAGER}"
}

main "$@"
