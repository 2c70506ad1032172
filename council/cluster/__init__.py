"""Sharded runs on a Ray cluster: the driver, the shard workers and the run's writer."""
