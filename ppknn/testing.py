"""The protocol contract kit, for a protocol's own tests (:mod:`ppknn.simulations.testing`).

>>> from ppknn.testing import builtin_names
>>> builtin_names()
['dp-knn', 'dp-nb', 'dptt', 'pca-perturbation', 'ppknn-ring', 'ring-nb']
"""

from __future__ import annotations

from ppknn.simulations.testing import (
    AUDIT_TRIALS,
    COMMON_FILES,
    MAX_QUERIES,
    ContractSuite,
    builtin_names,
    check_audit,
    check_config,
    check_declaration,
    check_leakage,
    check_plan,
    check_plugin,
    check_ray,
    check_repeatable,
    check_results,
    check_run,
    check_sweep,
    example,
    plugin_of,
    registered,
    run_folder,
    scenario_data,
)

__all__ = ["AUDIT_TRIALS", "COMMON_FILES", "ContractSuite", "MAX_QUERIES", "builtin_names",
           "check_audit", "check_config", "check_declaration", "check_leakage", "check_plan",
           "check_plugin", "check_ray", "check_repeatable", "check_results", "check_run",
           "check_sweep", "example", "plugin_of", "registered", "run_folder", "scenario_data"]
