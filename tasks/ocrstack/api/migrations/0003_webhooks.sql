-- Job callbacks (issue 23 item 4): the request's callback_url and the delivery record (JSON text).
ALTER TABLE jobs ADD COLUMN callback TEXT, ADD COLUMN webhook TEXT;
