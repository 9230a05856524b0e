"""The configuration reference (docs/configuration.md) is rendered from the config models: every key
of every section is described there, and CI fails when the committed file is stale."""

from __future__ import annotations

from gpu_platform.config import reference
from gpu_platform.config.messages import model_in
from gpu_platform.config.stack import StackConfig


def _sections(model=StackConfig, path="") -> dict[str, type]:
    found = {path: model}
    for name, field in model.model_fields.items():
        inner = model_in(field.annotation)
        if inner is not None:
            found.update(_sections(inner, f"{path}.{field.alias or name}"))
    return found


def test_every_key_of_every_section_has_a_description():
    undescribed = [
        f"{path}.{field.alias or name}"
        for path, model in _sections().items()
        for name, field in model.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert undescribed == []


def test_the_committed_configuration_reference_is_current():
    """What `python -m preview.docs --check` (CI) runs for it."""
    assert reference.stale() == []


def test_a_stale_reference_is_reported_and_rewritten(tmp_path):
    doc = tmp_path / "configuration.md"
    doc.write_text("# old\n")
    assert reference.stale(doc) == [
        "tmp_path/configuration.md: the configuration reference is stale".replace("tmp_path", tmp_path.name)
    ]
    reference.write(doc)
    assert reference.stale(doc) == []


def test_a_row_gives_the_keys_type_bounds_and_default():
    # The root volume: 200 GiB unless set, 100 to 16384 (EBS gp3 volumes are at most 16 TiB).
    row = next(line for line in reference.render().splitlines() if line.startswith("| `rootVolumeGiB` |"))
    assert row.startswith("| `rootVolumeGiB` | integer, 100 to 16384 | `200` | ")


def test_every_section_and_nested_section_has_a_heading_with_its_key_path():
    headings = [line for line in reference.render().splitlines() if line.startswith("## ")]
    assert headings == [
        "## Top-level keys",
        "## `gpu-platform:cluster`",
        "## `gpu-platform:operator`",
        "## `gpu-platform:nodeImage`",
        "## `gpu-platform:workloads`",
        "## `gpu-platform:nodePools[]`",
        "## `gpu-platform:nodePools[].timeSlicing`",
        "## `gpu-platform:nodePools[].mig`",
        "## `gpu-platform:audit`",
        "## `gpu-platform:monitoring`",
        "## `gpu-platform:allocation`",
    ]
