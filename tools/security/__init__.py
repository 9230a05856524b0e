"""The security scan of the rendered manifests: checkov against a reviewed list of accepted failures.

findings.py   what checkov reported, one finding per (check, resource, stack)
accepted.py   the accepted-failures list (accepted.yaml): load, compare, regenerate
doc_block.py  the "Security scan" block of docs/ci-and-supply-chain.md, generated from that list
scan.py       the command: render every stack, run checkov, compare (make scan, make scan-accept)
"""
