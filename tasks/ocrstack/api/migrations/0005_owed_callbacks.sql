-- Callbacks owed from before the outbox (issue 23 item 4). The code of 0003 wrote a job's
-- delivery record only after its POSTs ended ('delivered' or 'failed'), so a job that ended
-- (done, partial, failed) naming a callback_url with no record never got its callback: its
-- replica died before the POSTs ended, or had no --webhook-secret. 0004 left such jobs with
-- webhook_state NULL (and a record of any other state with that state), which no sender claims.
-- They are owed: 'pending'. Under 0004's code an ended job with a callback always has a state
-- (the write that ends it sets 'pending'), so this touches no job of after. A 'sending' without
-- a hold (webhook_until) would never be claimed either. Cancelled jobs send no callback.
UPDATE jobs SET webhook_state = 'pending', webhook_owner = NULL, webhook_until = NULL
WHERE callback IS NOT NULL AND state IN ('done', 'partial', 'failed')
    AND (webhook_state IS NULL OR webhook_state NOT IN ('pending', 'sending', 'delivered', 'failed')
         OR (webhook_state = 'sending' AND webhook_until IS NULL));
