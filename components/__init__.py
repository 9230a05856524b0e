"""Pulumi components: the AWS layer (`aws/`) and the Kubernetes layer (`kubernetes/`), composed by
`platform.GpuPlatform`. Components take typed arguments and never read raw config."""
