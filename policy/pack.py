"""Every policy of the pack, in the order reports list them."""

from policy.compatibility import release_supports_kubernetes

POLICIES = [
    release_supports_kubernetes,
]
