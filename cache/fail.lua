-- Count one failed authentication from a client address in a moving window.
-- KEYS[1] auth-failure window (sorted set)   ARGV[1] limit   ARGV[2] window (us)   ARGV[3] member
-- Returns {blocked (1|0), micros until the address is unblocked (or the oldest failure leaves)}
--
-- An address with `limit` failures in the window is blocked until fewer remain. Attempts while
-- blocked are refused without being counted, exactly like admit.lua refuses a valid key from a
-- blocked address: both answers are the same, so a blocked address cannot tell its valid keys
-- from wrong ones, and the block ends when the failures that caused it have aged out.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
local most = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= most then
  local freeing = redis.call('ZRANGE', KEYS[1], count - most, count - most, 'WITHSCORES')
  return {1, tonumber(freeing[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
