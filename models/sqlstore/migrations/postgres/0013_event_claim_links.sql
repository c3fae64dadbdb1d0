-- Refund events recorded before claim links were stored by reference held
-- the payer's link (a bearer credential) in their body. Each loses it:
-- its refund's claim_url becomes null (the API client reads the link from
-- GET /v1/refunds/{id} while it works). The refund's claim_url is the
-- first after the start of data.refund, '"refund":{"id":"rfd_' (a string
-- in the order before it has its quotes escaped), and its value, a
-- string without quotes in it, follows '"claim_url":' (12 characters).
UPDATE webhook_events
SET payload = substr(payload, 1, (strpos(payload, '"refund":{"id":"rfd_') + strpos(substr(payload, strpos(payload, '"refund":{"id":"rfd_')), '"claim_url":"') + 11) - 1) || 'null'
    || substr(payload, (strpos(payload, '"refund":{"id":"rfd_') + strpos(substr(payload, strpos(payload, '"refund":{"id":"rfd_')), '"claim_url":"') + 11) + strpos(substr(payload, (strpos(payload, '"refund":{"id":"rfd_') + strpos(substr(payload, strpos(payload, '"refund":{"id":"rfd_')), '"claim_url":"') + 11) + 1), '"') + 1)
WHERE type IN ('refund.created', 'refund.failed')
  AND strpos(payload, '"refund":{"id":"rfd_') > 0
  AND strpos(substr(payload, strpos(payload, '"refund":{"id":"rfd_')), '"claim_url":"') > 0;
