-- Count one failed authentication from a client address in a moving window.
-- KEYS[1] auth-failure window (sorted set)   ARGV[1] limit   ARGV[2] window (us)   ARGV[3] member
-- Returns {blocked (1|0), micros until the oldest failure leaves the window}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
local count = redis.call('ZCARD', KEYS[1])
local most = tonumber(ARGV[1])
local blocked = 0
local index = 0
if count > most then
  blocked = 1
  index = count - most  -- unblocked once fewer than `most` failures remain in the window
end
local freeing = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
return {blocked, tonumber(freeing[2]) + window - now}
