"""One simulated day: traffic through the replicas, Prometheus and the controllers to pods, nodes and cost."""
