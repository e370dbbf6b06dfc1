-- One round trip per request: the moving-window rate limit of a subscription, the block of a
-- client address after repeated authentication failures, and the cached response body.
--
-- KEYS[1] rate window (sorted set of request ids scored by server time in microseconds)
-- KEYS[2] auth-failure window of the client address (sorted set), or "" to skip
-- KEYS[3] cached response body, or "" to skip
-- ARGV[1] limit (requests per window)   ARGV[2] window in microseconds
-- ARGV[3] request id (unique member)    ARGV[4] auth-failure limit
-- ARGV[5] absent: count the request if it is accepted;
--         "replay": sent again after a lost answer (a request already counted is accepted);
--         "peek": count nothing, only report (for a request refused before the limit, e.g. 403)
--
-- Returns {allowed (1|0), remaining, micros until the oldest counted request leaves the window,
--          blocked_by ("" | "rate" | "auth"), body or false, milliseconds the body has left,
--          micros until a request would be accepted}
-- A blocked address gets the answer fail.lua gives a wrong key (no remaining, the block's end).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local mode = ARGV[5]

-- Micros until a window holding `count` entries has fewer than `most`: until its
-- (count - most)-th oldest entry leaves it.
local function freeing(key, count, most)
  local entry = redis.call('ZRANGE', key, count - most, count - most, 'WITHSCORES')
  return tonumber(entry[2]) + window - now
end

if KEYS[2] ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local failures = redis.call('ZCARD', KEYS[2])
  local most = tonumber(ARGV[4])
  if failures >= most then
    -- The answer fail.lua gives a wrong key from this address, and nothing about the
    -- subscription: a blocked address must not learn which of its keys are valid.
    local blocked_for = freeing(KEYS[2], failures, most)
    return {0, 0, blocked_for, 'auth', false, 0, blocked_for}
  end
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])

if mode == 'peek' then
  -- Nothing is counted: the subscription's window as it stands.
  local retry = 0
  local reason = ''
  if count >= limit then
    retry = freeing(KEYS[1], count, limit)
    reason = 'rate'
  end
  local reset = 0
  if count > 0 then reset = freeing(KEYS[1], count, count) end  -- the oldest entry's exit
  local allowed = 0
  if reason == '' then allowed = 1 end
  return {allowed, math.max(0, limit - count), reset, reason, false, 0, retry}
end

if mode == 'replay' and redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  count = count - 1  -- counted by the first send: as if it were being counted now
elseif count >= limit then
  local retry = freeing(KEYS[1], count, limit)
  return {0, 0, retry, 'rate', false, 0, retry}
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
local reset = tonumber(oldest[2]) + window - now
return {1, limit - count - 1, reset, '', body, ttl, reset}
