-- Fixed window in one script: count this request and compare, as one step.
-- KEYS[1]  this window's counter. The caller names the window from its clock, as incr-window and
--          multi-window do, so the three differ only in how the count is made.
-- ARGV[1]  limit: requests allowed per window
-- ARGV[2]  expiry in ms, set once, by the request that creates the counter
-- ARGV[3]  ms until this window ends, handed back as the retry hint when denied
-- Returns {allowed (1|0), requests left in the window, retry after ms (0 when allowed)}
local limit = tonumber(ARGV[1])

local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end

if count <= limit then
  return {1, limit - count, 0}
end
-- Denied requests are counted too, as INCR-based limiters do: the count is only ever compared.
return {0, 0, tonumber(ARGV[3])}
