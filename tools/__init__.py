"""The development tooling: the mutation run, the security scan and the benchmarks. None of it
is imported by the program or the policy pack."""
