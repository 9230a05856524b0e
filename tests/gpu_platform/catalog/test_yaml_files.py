"""The fast loader reads every YAML file the program ships as PyYAML's pure-Python safe loader does."""

from __future__ import annotations

import yaml

from gpu_platform.catalog import yaml_files
from tests.conftest import ROOT

SHIPPED = sorted(
    p
    for folder in ("gpu_platform", "components", "preview", "policy", "third_party")
    for p in (ROOT / folder).rglob("*.yaml")
)


def test_the_pinned_pyyaml_has_libyaml_so_the_fast_loader_is_the_c_one():
    # PyYAML's manylinux wheels bundle libyaml; without it, every catalogue read costs ten times more.
    assert yaml.__with_libyaml__
    assert yaml_files.LOADER is yaml.CSafeLoader


def test_every_shipped_yaml_file_reads_as_the_pure_python_safe_loader_reads_it():
    assert len(SHIPPED) > 20  # the catalogue, the operand contracts, the vendored NFD CRDs
    for path in SHIPPED:
        text = path.read_text()
        assert list(yaml_files.load_all(text)) == list(yaml.load_all(text, Loader=yaml.SafeLoader)), path
        if len(list(yaml.load_all(text, Loader=yaml.SafeLoader))) == 1:
            assert yaml_files.load(text) == yaml.load(text, Loader=yaml.SafeLoader), path
