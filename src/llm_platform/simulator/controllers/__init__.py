"""The Kubernetes control loop the simulator re-implements: the HPA, KEDA (cron windows too), the ScaledObjects
the strategies give them, and the CPU nodes of the platform beside the GPUs."""
