"""Start, stop and check recognition servers (guide 4, 6): profiles, launcher, readiness, metrics."""
