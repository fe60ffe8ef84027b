"""Running many sessions: the runner, worker processes, shards, Ray, progress."""
