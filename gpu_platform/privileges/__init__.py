"""The privilege ledger: every grant a stack makes (workloads, IAM, node and build settings, cluster
admins, devices) written in one canonical form, hashed, and compared with the approved hash."""
