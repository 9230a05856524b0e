"""gpu_platform/privileges/isolation.py through the ledger: network policies, runtime classes and device classes
are rows, so an allow-all policy beside the default-deny one, another runtime handler or a device
class that selects everything is a new approval. Expectations written by hand."""

from __future__ import annotations

import hashlib
import json

from gpu_platform.privileges import ledger

NP = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RC = "kubernetes:node.k8s.io/v1:RuntimeClass"
DC = "kubernetes:resource.k8s.io/v1:DeviceClass"
DENY = {
    "metadata": {"name": "default-deny-ingress", "namespace": "gpu-operator"},
    "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
}


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_a_network_policy_is_its_spec_with_the_api_servers_defaults():
    # The live object (ports' protocol TCP, policyTypes from the rules) hashes as the program's.
    written = {
        "metadata": {"name": "m", "namespace": "gpu-operator"},
        "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 9400}]}]},
    }
    live = {
        "metadata": {"name": "m", "namespace": "gpu-operator"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"port": 9400, "protocol": "TCP"}]}],
        },
    }
    by_hand = '{"ingress":[{"ports":[{"port":9400,"protocol":"TCP"}]}],"podSelector":{},"policyTypes":["Ingress"]}'
    assert (
        ledger.rows([(NP, "n", written)])
        == ledger.rows([(NP, "n", live)])
        == [("NetworkPolicy gpu-operator/m", "(network)", f"spec {_sha(by_hand)} (SHA-256 of the canonical JSON)")]
    )


def test_an_allow_all_policy_beside_the_default_deny_is_a_new_approval():
    allow_all = {
        "metadata": {"name": "open", "namespace": "gpu-operator"},
        "spec": {"podSelector": {}, "ingress": [{}]},
    }
    assert ledger.digest(ledger.rows([(NP, "d", DENY), (NP, "o", allow_all)])) != ledger.digest(
        ledger.rows([(NP, "d", DENY)])
    )


def test_a_runtime_class_is_its_handler_and_its_scheduling():
    props = {
        "metadata": {"name": "nvidia"},
        "handler": "nvidia",
        "scheduling": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
    }
    assert ledger.rows([(RC, "r", props)]) == [
        ("RuntimeClass nvidia", "(runtime)", "handler nvidia"),
        ("RuntimeClass nvidia", "(runtime)", 'scheduling {"nodeSelector":{"nvidia.com/gpu.present":"true"}}'),
    ]
    assert ("RuntimeClass nvidia", "(runtime)", "handler runc") in ledger.rows(
        [(RC, "r", {**props, "handler": "runc"})]
    )


def test_a_device_class_selecting_everything_is_another_row():
    spec = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    rows = ledger.rows([(DC, "g", {"metadata": {"name": "gpu.nvidia.com"}, "spec": spec})])
    assert rows == [
        (
            "DeviceClass gpu.nvidia.com",
            "(devices)",
            f"spec {_sha(json.dumps(spec, separators=(',', ':')))} (SHA-256 of the canonical JSON)",
        )
    ]
    anything = {"selectors": [{"cel": {"expression": "true"}}]}
    assert ledger.rows([(DC, "g", {"metadata": {"name": "gpu.nvidia.com"}, "spec": anything})]) != rows


def test_a_service_reads_as_its_exposure_and_a_load_balancer_is_another_row():
    svc = {
        "metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"},
        "spec": {"ports": [{"port": 9400}]},
    }
    assert ledger.rows([("kubernetes:core/v1:Service", "s", svc)]) == [
        ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", "type ClusterIP")
    ]
    public = {**svc, "spec": {**svc["spec"], "type": "LoadBalancer", "loadBalancerSourceRanges": ["0.0.0.0/0"]}}
    assert ledger.rows([("kubernetes:core/v1:Service", "s", public)]) == [
        ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", 'loadBalancerSourceRanges ["0.0.0.0/0"]'),
        ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", 'ports ["9400/TCP"]'),
        ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", "selector {}"),
        ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", "type LoadBalancer"),
    ]
    # A load balancer made internet-facing, another port, or other pods behind it: each a new approval.
    facing = {
        **public,
        "metadata": {
            **public["metadata"],
            "annotations": {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internet-facing", "team": "ml"},
        },
    }
    assert (
        "Service gpu-operator/nvidia-dcgm-exporter",
        "(exposure)",
        "annotation service.beta.kubernetes.io/aws-load-balancer-scheme=internet-facing",
    ) in ledger.rows([("kubernetes:core/v1:Service", "s", facing)])
    assert not any("team" in row[2] for row in ledger.rows([("kubernetes:core/v1:Service", "s", facing)]))
    wider = {
        **public,
        "spec": {
            **public["spec"],
            "ports": [{"port": 9400}, {"port": 22, "protocol": "TCP"}],
            "selector": {"app": "x"},
        },
    }
    rows = ledger.rows([("kubernetes:core/v1:Service", "s", wider)])
    assert ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", 'ports ["22/TCP","9400/TCP"]') in rows
    assert ("Service gpu-operator/nvidia-dcgm-exporter", "(exposure)", 'selector {"app":"x"}') in rows
    # The node port the API server allocates is no choice of the stack: a live object reads alike.
    live = {
        **public,
        "spec": {**public["spec"], "ports": [{"port": 9400, "nodePort": 31234, "protocol": "TCP", "targetPort": 9400}]},
    }
    assert ledger.rows([("kubernetes:core/v1:Service", "s", live)]) == ledger.rows(
        [("kubernetes:core/v1:Service", "s", public)]
    )


def test_security_group_rules_with_addresses_are_rows_and_a_rule_naming_a_group_is_not_read():
    open_ssh = (
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "ssh",
        {"cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp", "fromPort": 22.0, "toPort": 22.0},
    )
    # A rule resource is read under the group it is added to: the stack's group its id is built from,
    # else the id as written.
    assert ledger.rows([open_ssh]) == [("security group ?", "(network)", "ingress from 0.0.0.0/0, tcp 22-22")]
    rule = ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ssh")
    assert ledger.rows([open_ssh], {rule: {"securityGroupId": ("gpu-efa-sg",)}}) == [
        ("security group gpu-efa-sg", "(network)", "ingress from 0.0.0.0/0, tcp 22-22")
    ]
    itself = (
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "efa",
        {"ipProtocol": "-1", "referencedSecurityGroupId": "sg-1"},
    )
    assert ledger.rows([itself]) == []
    inline = (
        "aws:ec2/securityGroup:SecurityGroup",
        "build",
        {"egress": [{"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]}]},
    )
    assert ledger.rows([inline]) == [("security group build", "(network)", "egress to 0.0.0.0/0, tcp 443-443")]


def test_a_deployed_group_that_reads_back_a_rule_resources_rule_inline_has_the_same_rows():
    # A deployed group's ingress lists every rule it has, those added by rule resources too
    # (terraform-provider-aws vpc_security_group.go resourceSecurityGroupRead).
    rule = (
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "office",
        {
            "cidrIpv4": "203.0.113.0/24",
            "ipProtocol": "tcp",
            "fromPort": 443.0,
            "toPort": 443.0,
            "securityGroupId": "sg-1",
        },
    )
    refs = {rule[:2]: {"securityGroupId": ("gpu-efa-sg",)}}
    written = ledger.rows([("aws:ec2/securityGroup:SecurityGroup", "gpu-efa-sg", {}), rule], refs)
    deployed = ledger.rows(
        [
            (
                "aws:ec2/securityGroup:SecurityGroup",
                "gpu-efa-sg",
                {
                    "ingress": [
                        {"protocol": "tcp", "fromPort": 443.0, "toPort": 443.0, "cidrBlocks": ["203.0.113.0/24"]}
                    ]
                },
            ),
            rule,
        ],
        refs,
    )
    assert (
        written == deployed == [("security group gpu-efa-sg", "(network)", "ingress from 203.0.113.0/24, tcp 443-443")]
    )
