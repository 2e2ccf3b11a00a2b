-- fixed_window: state struct '<dd' (window, count); params limit, window_s. The TTL (>= W) is
-- set by the window's first write: it outlasts the window, after which the state is as fresh.
local w, t = window_us, now_us
local window = math.floor(t / w)
local count = 0
local same_window = false
local stored = redis.call('GET', KEYS[1])
if stored then
  local stored_window, stored_count = struct.unpack('<dd', stored)
  if stored_window == window then
    count, same_window = stored_count, true
  end
end
local reset = ((window + 1) * w - t) / 1000000
local c = take(limit - count)
if count + c <= limit then
  count = count + c
  save(KEYS[1], struct.pack('<dd', window, count), same_window)
  return struct.pack(REPLY, 1, limit - count, 0, reset, 0, c)
end
local retry = INF
if c <= limit then
  retry = reset
end
return struct.pack(REPLY, 0, limit - count, retry, reset, 0, cost)
