-- fixed_window: state "window count"; params limit, window_s
local limit, w = tonumber(ARGV[5]), tonumber(ARGV[6])
local window = math.floor(now / w)
local count = 0
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = fields(stored)
  if s[1] == window then
    count = s[2]
  end
end
local reset = (window + 1) * w - now
local c = take(limit - count)
if count + c <= limit then
  count = count + c
  save(KEYS[1], fmt(window) .. ' ' .. fmt(count))
  return reply(true, limit - count, 0, reset, 0, c)
end
local retry = INF
if c <= limit then
  retry = reset
end
return reply(false, limit - count, retry, reset)
