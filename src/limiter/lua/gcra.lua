-- GCRA (generic cell rate algorithm), as go-redis/redis_rate and redis-cell run it. One number per
-- client: the theoretical arrival time (TAT) of its next request at the steady rate. A request may
-- pass while it is at most `burst` emission intervals ahead of that schedule.
-- KEYS[1]  the TAT, in µs of Redis's clock
-- ARGV[1]  emission interval in µs: window / limit (may be fractional)
-- ARGV[2]  burst: how many requests may arrive back to back (the limit)
-- Returns {allowed (1|0), requests left in the burst, retry after ms (0 when allowed)}
local emission = tonumber(ARGV[1])
local burst    = tonumber(ARGV[2])

-- One clock for every caller: Redis's own. µs since the epoch (about 1.7e15) is below 2^53, so it
-- is exact in a Lua number.
local t   = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- A missing key is a client on schedule; a TAT in the past is one that has been idle.
local tat = tonumber(redis.call('GET', KEYS[1])) or now
tat = math.max(tat, now)

local new_tat  = tat + emission
local allow_at = new_tat - emission * burst
local diff     = now - allow_at
if diff < 0 then
  -- Denied: nothing is written, so refusals never push the schedule back.
  return {0, 0, math.ceil(-diff / 1000)}
end

-- Once idle until the new TAT, the client is back to a full burst and the key carries no
-- information, so that is its expiry.
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor(diff / emission), 0}
