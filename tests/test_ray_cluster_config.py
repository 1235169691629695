"""ray_cluster.yaml is a valid cluster-launcher config by Ray's own schema."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CONFIG = Path(__file__).resolve().parent.parent / "ray_cluster.yaml"


def test_cluster_yaml_validates_against_ray_schema():
    config = yaml.safe_load(CONFIG.read_text())
    prepared = prepare_config(config)  # what `ray up` does first
    validate_config(prepared)
    assert prepared["cluster_name"] == "ppknn"
    assert any("pip install" in c for c in prepared["setup_commands"])


def test_schema_check_has_teeth():
    config = prepare_config(yaml.safe_load(CONFIG.read_text()))
    broken = copy.deepcopy(config)
    broken["idle_timeout_minutes"] = "soon"
    with pytest.raises(jsonschema.ValidationError):
        validate_config(broken)
