-- Shared head of every decision script (Redis has no include). scripts.py puts one line before
-- it, e.g. for the fixed window:
--   local now, cost, want, limit, window_s = struct.unpack('<ddddd', ARGV[1])
-- ARGV[1] packs now (NaN = server TIME), cost, want (a lease's largest grant; = cost otherwise),
-- the numeric params, named after the params' dataclass fields, and the µs constants Python
-- derived from them (window_us, interval_us...: algorithms.base), as little-endian doubles:
-- exact both ways, one unpack, no %.17g formatting or parsing on either side. ARGV[2] is ttl_ms
-- as a decimal string ('0' = no expiry); text params (leaky_bucket's mode) follow from ARGV[3].
-- Anything handed to redis.call is a string: a Lua number would be formatted with %.14g (lossy,
-- and slow) on every call.
-- now_us: time in whole microseconds, the unit of every time-based algorithm (the pure
-- transitions' floor(now * 1e6 + 0.5); Redis TIME answers in µs, exact in a double to 2^53 µs)
local now_us
if now ~= now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now_us = math.floor(now * 1000000 + 0.5)
end
local ttl_ms = ARGV[2]
local INF = math.huge

-- the reply: struct.pack(REPLY, allowed (1/0), remaining, retry, reset, delay, granted), one
-- bulk string (a format rather than a helper: one closure less to build on every call)
local REPLY = '<Bddddd'

-- write a state and its TTL in one command (never SET then EXPIRE); keep_ttl: a windowed state
-- rewritten within the window whose first write set the TTL (that TTL already outlasts the
-- state's use, and KEEPTTL spares SET's PX work, a good part of a whole script's cost)
local function save(key, value, keep_ttl)
  if ttl_ms == '0' then
    redis.call('SET', key, value)
  elseif keep_ttl then
    redis.call('SET', key, value, 'KEEPTTL')
  else
    redis.call('SET', key, value, 'PX', ttl_ms)
  end
end

-- the cost to try: a lease takes the largest whole amount <= want that fits in room,
-- never less than the request's own cost
local function take(room)
  if want <= cost then
    return cost
  end
  local g = math.floor(room)
  if g > want then
    g = want
  end
  if g > cost then
    return g
  end
  return cost
end
