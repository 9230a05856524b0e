"""The forms Kubernetes gives names and labels (Kubernetes docs, "Object Names and IDs" and
"Labels and Selectors"): checked here, so the API server never refuses what the stack renders."""

from __future__ import annotations

import re

# Namespace names are DNS-1123 labels.
NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
NAMESPACE_FORM = (
    "a DNS-1123 label: 63 characters at most: lower-case letters, digits and '-', starting and ending "
    "with a letter or digit; e.g. monitoring"
)
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
