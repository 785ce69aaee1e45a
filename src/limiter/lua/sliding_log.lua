-- Sliding log: one sorted-set entry per admitted request, scored by its time in ms. A request is
-- admitted while fewer than `limit` entries are younger than the window.
-- KEYS[1]  the log (a sorted set)
-- ARGV[1]  limit: requests allowed in any window
-- ARGV[2]  window in ms
-- ARGV[3]  member of the new entry: 'id' (ARGV[4], unique per request), 'ms' (the time in ms:
--          requests in the same ms share one entry, seed 002's bug, kept to measure it) or 'us'
--          (Redis's time in µs, unique only because no two scripts run in the same µs)
-- ARGV[4]  the caller's unique id for this request (used with 'id')
-- ARGV[5]  the caller's clock in ms, or '' to score by Redis's TIME
-- Returns {allowed (1|0), requests left in the window, retry after ms (0 when allowed)}
local limit  = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local mode   = ARGV[3]

local t
if ARGV[5] == '' or mode == 'us' then
  t = redis.call('TIME')
end
local now
if ARGV[5] == '' then
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[5])
end

-- Entries at least a window old no longer count. After a long quiet spell this removes them all at
-- once, inside one command: the big-key stall seed 002 measures.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])

if count < limit then
  local member = ARGV[4]
  if mode == 'ms' then
    member = tostring(now)
  elseif mode == 'us' then
    member = t[1] .. string.format('%06d', tonumber(t[2]))
  end
  redis.call('ZADD', KEYS[1], now, member)
  -- The newest entry leaves the window `window` ms from now, and the whole log with it.
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - count - 1, 0}
end

-- Denied: nothing is written. A slot frees when the oldest entry leaves the window.
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry_ms = 1
if oldest[2] ~= nil then
  retry_ms = math.max(1, tonumber(oldest[2]) + window - now)
end
return {0, 0, retry_ms}
