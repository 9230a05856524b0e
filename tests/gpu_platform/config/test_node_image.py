"""gpu-platform:nodeImage: which images carry the container toolkit when the stack does not say."""

from __future__ import annotations

from gpu_platform.config.node_image import NodeImage


def test_a_baked_image_bakes_the_toolkit_unless_told_otherwise():
    assert NodeImage.model_validate({"source": "bake", "driverVersion": "580.105.08"}).toolkit_baked is True
    assert (
        NodeImage.model_validate({"source": "bake", "driverVersion": "580.105.08", "toolkitBaked": False}).toolkit_baked
        is False
    )


def test_a_pinned_ami_gets_the_toolkit_daemonset_unless_it_says_it_has_the_toolkit():
    pinned = {"source": "ami", "amiId": "ami-0123456789abcdef0", "driverVersion": "580.105.08"}
    assert NodeImage.model_validate(pinned).toolkit_baked is False
    assert NodeImage.model_validate({**pinned, "toolkitBaked": True}).toolkit_baked is True
