#!/usr/bin/env bash
# Runs at every boot of a GPU node (gpu-platform-nvswitch.service): starts NVIDIA's fabric manager
# when the node's hardware has NVSwitch, and on a fourth-generation NVSwitch system (NVLink5, HGX
# B200) loads ib_umad first, which the NVLink subnet manager needs. Anywhere else it does nothing.
#
# Why at boot and not per image: one node image serves every pool of a stack (an L40S node boots
# the same AMI as an H100 node), and the fabric manager fails to start where there is no NVSwitch.
# The image carries the packages when some pool it serves is an NVSwitch family; the hardware
# decides whether they run.
#
# The test is NVIDIA's own, from its driver container (github.com/NVIDIA/gpu-driver-container,
# rhel9/nvidia-driver at commit 06a208ca: _assert_nvswitch_system lines 288-295,
# _assert_nvlink5_system lines 297-312, the choice between them lines 764-790): NVSwitches up to the
# third generation are listed under /proc/driver/nvidia-nvswitch/devices once the nvidia module is
# loaded; a fourth-generation system has an InfiniBand device (its NVLink management NIC) whose VPD
# holds "SW_MNG". The unit that AWS enables on its own accelerated AMI for both kinds is
# nvidia-fabricmanager.service, with nvlsm and ib_umad beside it on NVLink5
# (awslabs/amazon-eks-ami v20260714, templates/al2023/provisioners/install-nvidia-driver.sh lines
# 230-239 and 278).
set -euo pipefail

# Tests only: a directory standing in for / (fake /proc and /sys trees).
ROOT="${ROOT:-}"

log() { printf '[gpu-platform-nvswitch] %s\n' "$*"; }

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

main() {
  if has_nvlink5; then
    log "fourth-generation NVSwitch (NVLink5): ib_umad for the NVLink subnet manager, then the fabric manager"
    modprobe ib_umad
    systemctl start nvidia-fabricmanager.service
  elif has_nvswitch; then
    log "NVSwitch: starting the fabric manager"
    systemctl start nvidia-fabricmanager.service
  else
    log "no NVSwitch on this node: the fabric manager stays off"
  fi
}

main "$@"
