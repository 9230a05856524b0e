"""`python -m preview verify-ami`: a pinned AMI is checked against AWS (moto here) before it is used."""

from __future__ import annotations

import pytest

from preview.__main__ import main
from tests.conftest import stack_config, write_stack

REGION = "us-west-2"
DRIVER = "580.105.08"
GOOD_TAGS = {
    "gpu-platform.io/driver-version": DRIVER,
    "gpu-platform.io/kubernetes-version": "1.33",
    "gpu-platform.io/toolkit-baked": "false",
    "gpu-platform.io/architecture": "x86_64",
    # The kernel module flavour, as the bake declares it (the dev pool's L4 loads either).
    "audit.gpu-platform.io/privileged-software": f"nvidia-driver {DRIVER} (open kernel modules)",
}
SOFTWARE = "audit.gpu-platform.io/privileged-software"


@pytest.fixture
def ec2(monkeypatch):
    """moto's EC2, started only for these tests (it costs seconds)."""
    import boto3
    import moto

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    with moto.mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def _register(ec2, tags: dict[str, str]) -> str:
    ami = ec2.register_image(
        Name="gpu-node-k8s1.33-nvidia-580.105.08",
        Architecture="x86_64",
        RootDeviceName="/dev/xvda",
        VirtualizationType="hvm",
        BlockDeviceMappings=[{"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 100, "VolumeType": "gp3"}}],
    )["ImageId"]
    # register_image drops TagSpecifications in moto; tag afterwards, as a bake pipeline would.
    ec2.create_tags(Resources=[ami], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    return ami


def _pinned_stack(tmp_path, ami: str, driver: str = DRIVER, source: str = "ami", instance_type: str = "") -> str:
    config = stack_config("dev")
    if instance_type:
        config["gpu-platform:nodePools"][0]["instanceType"] = instance_type
    config["gpu-platform:nodeImage"] = {"source": source, "driverVersion": driver}
    if source == "ami":
        config["gpu-platform:nodeImage"]["amiId"] = ami
    return str(write_stack(tmp_path, config, name="pinned"))


def _run(capsys, stack: str) -> tuple[int, str, str]:
    code = main(["verify-ami", "--config", stack])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_good_ami_passes(ec2, tmp_path, capsys):
    ami = _register(ec2, GOOD_TAGS)
    code, out, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 0, err
    assert ami in out and f"gpu-platform.io/driver-version={DRIVER}" in out


def test_a_missing_ami_fails_naming_it(ec2, tmp_path, capsys):
    code, _, err = _run(capsys, _pinned_stack(tmp_path, "ami-0123456789abcdef0"))
    assert code == 1
    assert "gpu-platform:nodeImage.amiId: ami-0123456789abcdef0 does not exist" in err


def test_a_wrong_driver_tag_fails_naming_the_key_and_both_values(ec2, tmp_path, capsys):
    ami = _register(ec2, {**GOOD_TAGS, "gpu-platform.io/driver-version": "570.195.03"})
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 1
    assert f"{ami} tag gpu-platform.io/driver-version is '570.195.03'; the stack expects '{DRIVER}'" in err
    assert "gpu-platform:nodeImage.driverVersion" in err


def test_a_wrong_kubernetes_tag_fails_naming_the_key_and_both_values(ec2, tmp_path, capsys):
    ami = _register(ec2, {**GOOD_TAGS, "gpu-platform.io/kubernetes-version": "1.31"})
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 1
    assert "tag gpu-platform.io/kubernetes-version is '1.31'; the stack expects '1.33'" in err
    assert "driver-version" not in err  # only what is wrong is reported


def test_a_missing_tag_and_a_wrong_architecture_tag_are_both_reported(ec2, tmp_path, capsys):
    tags = {k: v for k, v in GOOD_TAGS.items() if k != "gpu-platform.io/toolkit-baked"}
    ami = _register(ec2, {**tags, "gpu-platform.io/architecture": "arm64"})
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 1
    assert "has no tag gpu-platform.io/toolkit-baked; the stack expects 'false'" in err
    assert "tag gpu-platform.io/architecture is 'arm64'; the stack expects 'x86_64'" in err


def test_a_baking_stack_has_nothing_to_verify(capsys):
    code = main(["verify-ami", "--stack", "dev"])
    assert code == 2
    assert "source is 'bake'" in capsys.readouterr().err


def test_an_invalid_stack_is_a_config_error(tmp_path, capsys):
    code, _, err = _run(capsys, _pinned_stack(tmp_path, "ami-0123456789abcdef0", driver="latest"))
    assert code == 2
    assert "driverVersion" in err


def test_an_unknown_stack_is_a_config_error(capsys):
    assert main(["verify-ami", "--stack", "staging"]) == 2
    assert "stacks: dev, dra, prod" in capsys.readouterr().err


def test_the_subcommand_leaves_the_preview_cli_alone(capsys):
    assert main(["--stack", "dev"]) == 0
    assert capsys.readouterr().out.startswith("Stack dev ")


def test_aws_that_cannot_be_asked_is_exit_3_not_a_mismatch(tmp_path, capsys, monkeypatch):
    # No credentials (or no network): no verdict either way, so never exit 1.
    import boto3
    from botocore.exceptions import NoCredentialsError

    class Unasked:
        def describe_images(self, **_kwargs):
            raise NoCredentialsError()

    monkeypatch.setattr(boto3, "client", lambda *_a, **_k: Unasked())
    code, _, err = _run(capsys, _pinned_stack(tmp_path, "ami-0123456789abcdef0"))
    assert code == 3
    assert "could not ask AWS: " in err and "ami-0123456789abcdef0 in us-west-2" in err and "nothing is verified" in err


def test_a_stack_name_the_os_refuses_is_a_config_error(capsys):
    assert main(["verify-ami", "--stack", "x" * 300]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --stack x") and "File name too long" in err and "Traceback" not in err


@pytest.fixture
def no_aws(monkeypatch):
    """Credentials that are never used, and no instance metadata: nothing here reaches a network."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(key, value)
    return monkeypatch


@pytest.mark.parametrize(
    "key, value, reason",
    [
        ("AWS_ENDPOINT_URL_EC2", "not-a-url", "Invalid endpoint: not-a-url"),
        ("AWS_MAX_ATTEMPTS", "abc", "invalid literal for int() with base 10: 'abc'"),
        ("AWS_ENDPOINT_URL", "http://[::1", "Invalid IPv6 URL"),
    ],
)
def test_an_aws_setting_boto3_refuses_is_exit_3_in_one_line(tmp_path, capsys, no_aws, key, value, reason):
    no_aws.setenv(key, value)
    code, _, err = _run(capsys, _pinned_stack(tmp_path, "ami-0123456789abcdef0"))
    assert code == 3
    assert err.count("\n") == 1 and f"could not ask AWS: {reason}" in err and "nothing is verified" in err


def test_a_bug_is_an_internal_error_exit_3_in_one_line(tmp_path, capsys, ec2, monkeypatch):
    from preview import verify_ami

    def broken(*_args, **_kwargs):
        raise AttributeError("planted bug")

    monkeypatch.setattr(verify_ami, "problems", broken)
    stack = _pinned_stack(tmp_path, _register(ec2, GOOD_TAGS))
    assert main(["verify-ami", "--config", stack]) == 3
    assert capsys.readouterr().err == (
        "internal error: AttributeError: planted bug (a bug in gpu-platform, please "
        "report it; --debug prints the traceback)\n"
    )
    assert main(["verify-ami", "--config", stack, "--debug"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_ctrl_c_is_interrupted_exit_130(tmp_path, capsys, monkeypatch):
    from preview import verify_ami

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(verify_ami, "describe", interrupted)
    code, _, err = _run(capsys, _pinned_stack(tmp_path, "ami-0123456789abcdef0"))
    assert (code, err) == (130, "interrupted\n")


def test_an_eks_nvidia_stack_has_nothing_to_verify(capsys):
    from tests.conftest import FIXTURES

    assert main(["verify-ami", "--config", str(FIXTURES / "passing" / "eks-nvidia.yaml")]) == 2
    err = capsys.readouterr().err
    assert "source is 'eks-nvidia'" in err and "nothing to verify" in err and "SSM parameter" in err
    assert "bakes" not in err


@pytest.mark.parametrize(
    "change",
    [
        lambda config: config["gpu-platform:nodePools"][0].update(instanceType="m5.large"),
        lambda config: config.update({"aws:region": "cn-north-1"}),  # the admins' ARNs are in partition aws
    ],
)
def test_a_stack_the_program_rejects_is_refused_as_the_preview_refuses_it(tmp_path, capsys, monkeypatch, change):
    import boto3

    monkeypatch.setattr(
        boto3, "client", lambda *_a, **_k: pytest.fail("EC2 was asked about a stack the program rejects")
    )
    config = stack_config("dev")
    config["gpu-platform:nodeImage"] = {"source": "ami", "driverVersion": DRIVER, "amiId": "ami-0123456789abcdef0"}
    change(config)
    stack = str(write_stack(tmp_path, config, name="pinned"))
    assert main(["--config", stack]) == 2
    preview_err = capsys.readouterr().err
    code, _, err = _run(capsys, stack)
    assert (code, err) == (2, preview_err)


def test_an_ami_with_a_kernel_module_flavour_a_pool_s_gpu_cannot_load_fails_naming_the_pool(ec2, tmp_path, capsys):
    # g5's A10G loads only the proprietary modules (gpu_platform/catalog/matrix.yaml kernelModules).
    ami = _register(ec2, GOOD_TAGS)  # open
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="g5.2xlarge"))
    assert code == 1
    assert (
        f"{ami} carries the open NVIDIA kernel modules (tag {SOFTWARE}); gpu-platform:nodePools[0].instanceType "
        "'g5.2xlarge' (A10G) loads only the proprietary ones"
    ) in err


def test_an_ami_with_the_flavour_the_pool_s_gpu_loads_passes(ec2, tmp_path, capsys):
    ami = _register(
        ec2,
        {
            **GOOD_TAGS,
            SOFTWARE: f"nvidia-driver {DRIVER} (proprietary kernel modules) + "
            "nvidia-container-toolkit (containerd runtime nvidia)",
        },
    )
    code, out, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="g5.2xlarge"))
    assert code == 0, err
    assert out.rstrip().endswith("and the proprietary kernel modules every pool's GPU loads")


def test_an_ami_that_declares_no_flavour_fails(ec2, tmp_path, capsys):
    ami = _register(ec2, {k: v for k, v in GOOD_TAGS.items() if k != SOFTWARE})
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 1
    assert f"{ami} declares no kernel module flavour (tag {SOFTWARE}" in err
    assert "the stack's pools need open or proprietary" in err


def test_the_flavour_verify_ami_reads_is_the_one_the_bake_writes(ec2, tmp_path, capsys):
    # The AMI of a bake carries the audit tags of components/aws/tags.py (Image Builder's ami_tags).
    from components.aws import tags
    from gpu_platform.config.audit import Audit

    software = tags.audit_tags(
        Audit(owner="ml-platform", approval="SEC-1042"), tags.node_software(DRIVER, False, False, "proprietary")
    )
    ami = _register(ec2, {**{k: v for k, v in GOOD_TAGS.items() if k != SOFTWARE}, **software})
    code, out, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="g5.2xlarge"))
    assert code == 0, err
    assert "the proprietary kernel modules" in out


# A p5.48xlarge pool gets EFA by default; EKS AL2023 images carry the EFA kernel driver from v20260505
# (amazon-eks-ami 5d224e1a, gpu_platform/catalog/aws_limits.yaml efa.standard_ami_from_release).
BASE = "gpu-platform.io/base-image-release"


def test_an_efa_pool_on_an_ami_that_declares_no_base_release_fails(ec2, tmp_path, capsys):
    ami = _register(ec2, GOOD_TAGS)
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="p5.48xlarge"))
    assert code == 1
    assert f"{ami} declares no base image release (tag {BASE}" in err and "gpu-platform:nodePools[0]" in err
    assert "EFA kernel driver" in err and "efa: false" in err


def test_an_efa_pool_on_an_ami_built_before_the_efa_driver_fails_naming_both_releases(ec2, tmp_path, capsys):
    ami = _register(ec2, {**GOOD_TAGS, BASE: "v20260318"})
    code, _, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="p5.48xlarge"))
    assert code == 1
    assert f"{ami} was built from EKS AMI release v20260318 (tag {BASE}), before v20260505" in err


def test_an_efa_pool_on_an_ami_from_the_first_release_with_the_driver_passes(ec2, tmp_path, capsys):
    ami = _register(ec2, {**GOOD_TAGS, BASE: "v20260505"})
    code, out, err = _run(capsys, _pinned_stack(tmp_path, ami, instance_type="p5.48xlarge"))
    assert code == 0, err
    assert "base release v20260505, whose image has the EFA kernel driver" in out


def test_a_pool_without_efa_does_not_ask_for_a_base_release(ec2, tmp_path, capsys):
    # The dev pool (g6, no EFA) on an AMI that declares no base release: nothing to say about EFA.
    ami = _register(ec2, GOOD_TAGS)
    code, out, err = _run(capsys, _pinned_stack(tmp_path, ami))
    assert code == 0, err
    assert "EFA" not in out
