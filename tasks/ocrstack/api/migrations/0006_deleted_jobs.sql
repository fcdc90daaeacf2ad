-- A job deleted or expired while its callback is owed (webhook_state 'pending' or 'sending')
-- loses its files at once; its row stays, hidden from the API's reads (deleted: unix seconds
-- set), until the callback is settled: then the sender, or the next expire pass, removes it.
ALTER TABLE jobs ADD COLUMN deleted DOUBLE PRECISION;
