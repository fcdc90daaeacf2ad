-- Leases (issue 23): the replica holding a running job and until when (database clock, epoch
-- seconds); its heartbeat moves lease_until on, another replica claims the job once it has passed.
ALTER TABLE jobs ADD COLUMN owner TEXT, ADD COLUMN lease_until DOUBLE PRECISION;
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE state = 'running';
