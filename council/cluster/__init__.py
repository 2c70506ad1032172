"""Ray: starting or joining it, the actor shells, the Ray judge pool, and sharded runs (driver, shard workers, writer)."""
