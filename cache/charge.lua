-- Charge one answer to a privacy ledger (service/privacy/budget.py), atomically.
-- KEYS[1]: the ledger, a hash: "spent" (micro-epsilon charged in its period) and, per answer
--          charged, "a:<answer>" -> the micro-epsilon charged for it so far.
-- ARGV: answer, amount (micro-epsilon the answer costs), limit (micro-epsilon), ttl (seconds),
--       mode ("charge" | "peek"), most (answers remembered at most: past it, a new answer is
--       charged but not remembered, so asking it again charges it again: the caller decides how
--       many answers there are, not how much memory they take).
-- An answer already charged costs only what it costs beyond what was charged for it (usually
-- nothing: asking again shows the same noise). A charge that would pass the limit is refused and
-- changes nothing. Returns {allowed (1|0), spent after, charged now}.
-- Run again (a replay after a lost answer), it finds its own charge and charges nothing more.
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
if ARGV[5] == 'peek' then
  return {1, spent, 0}
end
local field = 'a:' .. ARGV[1]
local already = tonumber(redis.call('HGET', KEYS[1], field) or '0')
local amount = tonumber(ARGV[2])
local delta = amount - already
if delta <= 0 then
  return {1, spent, 0}
end
if spent + delta > tonumber(ARGV[3]) then
  return {0, spent, delta}
end
if already > 0 or redis.call('HLEN', KEYS[1]) <= tonumber(ARGV[6]) then  -- HLEN counts "spent"
  redis.call('HSET', KEYS[1], field, amount)
end
spent = redis.call('HINCRBY', KEYS[1], 'spent', delta)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {1, spent, delta}
