-- Callback outbox (issue 23 item 4): a job that ends with a callback_url gets webhook_state
-- 'pending' in the statement that finishes it; any replica claims it ('sending', webhook_owner,
-- webhook_until on the database clock), so a replica killed before delivering loses nothing.
ALTER TABLE jobs ADD COLUMN webhook_state TEXT, ADD COLUMN webhook_owner TEXT,
    ADD COLUMN webhook_until DOUBLE PRECISION, ADD COLUMN webhook_claims INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET webhook_state = webhook::json ->> 'state' WHERE webhook IS NOT NULL;
CREATE INDEX jobs_outbox ON jobs (seq) WHERE webhook_state IN ('pending', 'sending');
