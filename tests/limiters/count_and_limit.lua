-- A fixed window that answers what it counted and the limit it counts against, `{count, limit}`,
-- and leaves the decision to its caller (`count <= limit`), as client libraries that return the
-- counter to their middleware do.
-- KEYS[1]  the counter
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- Returns {count including this request, limit}.
local limit = tonumber(ARGV[1])
redis.call('SET', KEYS[1], 0, 'NX', 'PX', ARGV[2])
local count = redis.call('INCR', KEYS[1])
return {count, limit}
