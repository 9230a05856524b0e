"""Tests of the config model, one module per module of gpu_platform/config/."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine


def message_for(change) -> str:
    """The error parse() gives the dev stack after `change` (which edits its raw config in place)."""
    raw = engine.read_stack_file(engine.stack_file("dev"))
    change(raw)
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    return str(error.value)
