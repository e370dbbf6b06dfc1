-- Count one failed authentication from a client address in a moving window.
-- KEYS[1] auth-failure window (sorted set)   ARGV[1] limit   ARGV[2] window (us)   ARGV[3] member
-- Returns {blocked (1|0), micros until the address is unblocked (or the oldest failure leaves)}
--
-- An address with `limit` failures in the window is blocked until fewer remain: its wrong keys
-- get 429 instead of 401. Attempts while blocked are refused without being counted, so the block
-- ends when the failures that caused it have aged out. A valid key from the same address is
-- served as usual (admit.lua does not look at the block): many clients share one address behind
-- a NAT, a corporate proxy, the dashboard or the MCP server, and one of them sending wrong keys
-- must not lock the others out. Keys are 238-bit random strings, so answering valid keys does
-- not make guessing one feasible; the block only slows the attempts and their database lookups.
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
