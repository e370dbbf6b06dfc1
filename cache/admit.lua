-- One round trip per request: the moving-window rate limit of a subscription, the block of a
-- client address after repeated authentication failures, and the cached response body.
--
-- KEYS[1] rate window (sorted set of request ids scored by server time in microseconds)
-- KEYS[2] auth-failure window of the client address (sorted set), or "" to skip
-- KEYS[3] cached response body, or "" to skip
-- ARGV[1] limit (requests per window)   ARGV[2] window in microseconds
-- ARGV[3] request id (unique member)    ARGV[4] auth-failure limit
-- ARGV[5] "replay" when sent again after a lost answer: a request already counted is accepted
--
-- Returns {allowed (1|0), remaining, micros until the oldest counted request leaves the window,
--          blocked_by ("" | "rate" | "auth"), body or false, milliseconds the body has left}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])

if KEYS[2] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local failures = redis.call('ZCARD', KEYS[2])
  local most = tonumber(ARGV[4])
  if failures >= most then
    -- unblocked once failures < most: when the (failures - most)-th oldest leaves the window
    local freeing = redis.call('ZRANGE', KEYS[2], failures - most, failures - most, 'WITHSCORES')
    return {0, 0, tonumber(freeing[2]) + window - now, 'auth', false, 0}
  end
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if ARGV[5] == 'replay' and redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  count = count - 1  -- counted by the first send: as if it were being counted now
elseif count >= limit then
  -- accepted again once count < limit: when the (count - limit)-th oldest leaves the window
  local freeing = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
  return {0, 0, tonumber(freeing[2]) + window - now, 'rate', false, 0}
else
  redis.call('ZADD', KEYS[1], now, ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local body = false
local ttl = 0
if KEYS[3] ~= '' then
  body = redis.call('GET', KEYS[3])
  if body then
    ttl = redis.call('PTTL', KEYS[3])
  end
end
return {1, limit - count - 1, tonumber(oldest[2]) + window - now, '', body, ttl}
