"""What serves the requests: one vLLM replica (its model and calibration, what would meet an SLO it misses) and
the GPU capacity behind the replicas (Karpenter nodes, cold starts, billing)."""
