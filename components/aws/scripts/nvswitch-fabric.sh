#!/usr/bin/env bash
# Runs at every boot of a GPU node (gpu-platform-nvswitch.service): starts NVIDIA's fabric manager
# on an instance type with NVSwitch, and on a fourth-generation NVSwitch system (NVLink5, HGX B200)
# loads ib_umad first, which the NVLink subnet manager needs. Anywhere else it does nothing.
#
# Why at boot and not per image: one node image serves every pool of a stack (an L40S node boots
# the same AMI as an H100 node), and the fabric manager fails to start where there is no NVSwitch.
# The image carries the packages when some pool it serves has NVSwitch; the node decides whether
# they run.
#
# How the node decides: by its instance type, which IMDSv2 answers without waiting for any driver
# (the way AWS's accelerated AMI decides per instance type at boot: amazon-eks-ami v20260714,
# templates/al2023/runtime/gpu/nvidia-kmod-load.sh lines 23 and 87-98). The types that have
# NVSwitch, and those with fourth-generation NVSwitch, come from the matrix through the stack
# (/etc/gpu-platform/nvswitch.env, written by the bake). On such a type the hardware NVIDIA's own
# driver container checks must then appear, and the script waits for it, bounded: the NVSwitch
# devices under /proc/driver/nvidia-nvswitch once the nvidia module is loaded, and on NVLink5 the
# mlx5_core module and an InfiniBand device (the NVLink management NIC) whose VPD holds "SW_MNG"
# (github.com/NVIDIA/gpu-driver-container rhel9/nvidia-driver at commit 06a208ca:
# _assert_nvswitch_system lines 288-295, _assert_nvlink5_system lines 297-312, and
# _ensure_nvlink5_prerequisites lines 314-320, which waits for mlx5_core and ib_umad because they
# load asynchronously at boot). Hardware that does not appear in time fails the unit, loudly,
# instead of leaving a node whose GPUs cannot talk to each other. A type the stack did not declare
# falls back to the hardware present at that moment.
#
# The unit AWS enables on its own accelerated AMI for both kinds is nvidia-fabricmanager.service,
# with nvlsm and ib_umad beside it on NVLink5 (amazon-eks-ami v20260714,
# templates/al2023/provisioners/install-nvidia-driver.sh lines 230-239 and 278).
set -euo pipefail

# Tests only: a directory standing in for / (fake /proc and /sys trees).
ROOT="${ROOT:-}"
NVSWITCH_INSTANCE_TYPES="${NVSWITCH_INSTANCE_TYPES:-}"
NVLINK5_INSTANCE_TYPES="${NVLINK5_INSTANCE_TYPES:-}"
# How long the hardware may take to appear after the nvidia module is loaded.
WAIT_SECONDS="${WAIT_SECONDS:-300}"
readonly POLL_SECONDS=5
readonly IMDS="http://169.254.169.254/latest"

log() { printf '[gpu-platform-nvswitch] %s\n' "$*"; }

# IMDSv2: a session token first (the launch templates require tokens, hop limit 1: the host reaches it).
instance_type() {
  local token
  token="$(curl -fsS --retry 5 -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 60" "${IMDS}/api/token")" || return 1
  curl -fsS --retry 5 -H "X-aws-ec2-metadata-token: ${token}" "${IMDS}/meta-data/instance-type"
}

listed() { [[ " $2 " == *" $1 "* ]]; }

has_module() { grep -q "^$1 " "${ROOT}/proc/modules" 2>/dev/null; }

has_nvlink5() {
  local vpd
  for vpd in "${ROOT}"/sys/class/infiniband/*/device/vpd; do
    if [[ -f "${vpd}" ]] && grep -q "SW_MNG" "${vpd}"; then
      return 0
    fi
  done
  return 1
}

has_nvswitch() {
  local device
  for device in "${ROOT}"/proc/driver/nvidia-nvswitch/devices/*; do
    if [[ -e "${device}" ]]; then
      return 0
    fi
  done
  return 1
}

nvlink5_ready() { has_module mlx5_core && has_nvlink5; }

# Polls until the check passes or WAIT_SECONDS have gone by.
wait_for() {
  local waited=0
  until "$@"; do
    if (( waited >= WAIT_SECONDS )); then
      return 1
    fi
    sleep "${POLL_SECONDS}"
    waited=$((waited + POLL_SECONDS))
  done
}

start_nvlink5() {
  modprobe ib_umad
  systemctl start nvidia-fabricmanager.service
}

main() {
  local type=""
  type="$(instance_type)" || log "IMDS did not answer the instance type: deciding from the hardware present now"
  if [[ -n "${type}" ]] && listed "${type}" "${NVLINK5_INSTANCE_TYPES}"; then
    log "${type} has fourth-generation NVSwitch: waiting up to ${WAIT_SECONDS}s for mlx5_core and the NVLink management NIC"
    if ! wait_for nvlink5_ready; then
      log "ERROR: ${type} should have an NVLink management NIC (an InfiniBand device whose VPD holds SW_MNG) with mlx5_core loaded, and after ${WAIT_SECONDS}s it has not: the fabric manager is not started"
      exit 1
    fi
    log "ib_umad for the NVLink subnet manager, then the fabric manager"
    start_nvlink5
  elif [[ -n "${type}" ]] && listed "${type}" "${NVSWITCH_INSTANCE_TYPES}"; then
    log "${type} has NVSwitch: waiting up to ${WAIT_SECONDS}s for its NVSwitch devices"
    if ! wait_for has_nvswitch; then
      log "ERROR: ${type} should have NVSwitch devices under /proc/driver/nvidia-nvswitch, and after ${WAIT_SECONDS}s it has none: the fabric manager is not started"
      exit 1
    fi
    systemctl start nvidia-fabricmanager.service
  elif has_nvlink5; then
    log "${type:-this instance type} is not one the stack declared, but has fourth-generation NVSwitch: ib_umad, then the fabric manager"
    start_nvlink5
  elif has_nvswitch; then
    log "${type:-this instance type} is not one the stack declared, but has NVSwitch: starting the fabric manager"
    systemctl start nvidia-fabricmanager.service
  else
    log "no NVSwitch on ${type:-this node}: the fabric manager stays off"
  fi
}

main "$@"
