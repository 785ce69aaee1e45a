#!lua name=ratelab
-- The ratelab library, for FUNCTION LOAD: unlike the script cache, functions are kept in the RDB
-- and the AOF and reach replicas. token_bucket runs the text of token_bucket.lua itself: the
-- harness puts that file in place of the marker line below, so FCALL and EVAL decide alike.
-- FCALL token_bucket 1 <bucket key> <capacity> <refill per s> <cost> <expiry ms>

local function token_bucket(KEYS, ARGV)
  -- @token_bucket.lua
end

-- Seed 002's own token bucket script, as the write-up publishes it (seed002_token_bucket.lua).
-- FCALL seed002_token_bucket 1 <bucket key> <capacity> <refill per s> <cost>
local function seed002_token_bucket(KEYS, ARGV)
  -- @seed002_token_bucket.lua
end

-- No flags: it writes, so Redis refuses it on a read-only replica (READONLY), as it must.
redis.register_function('token_bucket', token_bucket)
redis.register_function('seed002_token_bucket', seed002_token_bucket)
