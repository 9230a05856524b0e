"""What the program and the policy pack agree on: the taint and label contract, resource type
tokens, the props readers, the workload readers and the admission policies both sides render."""
