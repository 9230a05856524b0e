"""What upstream and AWS publish, as data with its sources: the version matrix, the operand registry
and each operand's contract, the EKS and AMI calendars, the DRA and AWS limits, and the version
arithmetic that reads them. Nothing here depends on a stack."""
