"""Transitional: the names operand modules imported from here now live in spec.py, version_table.py,
manifests.py and component.py."""

from components.kubernetes.operands.component import Operand  # noqa: F401
from components.kubernetes.operands.manifests import (  # noqa: F401
    AWAIT, CONFIG_HASH_KEY, PRIORITY_CLASS, audit_annotations, config_hash, daemonset_manifest, deployment_manifest,
)
from components.kubernetes.operands.spec import (  # noqa: F401
    VALIDATIONS_DIR, Container, Deployment, HostPath, OperandArgs, OperandSpec, Service, wait_container, with_wait,
)
from components.kubernetes.operands.version_table import Row, VersionRow, for_version, image_version, row_for  # noqa: F401
