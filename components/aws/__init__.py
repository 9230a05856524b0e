"""AWS layer: cluster (create or adopt) -> node image (driver baked in) -> GPU node pools."""
