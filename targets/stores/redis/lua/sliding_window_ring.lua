-- sliding_window_ring: state "total id1 cost1 id2 cost2 ..." (live sub-windows, oldest
-- first); params limit, window_s, buckets
local limit, w, n = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local width = w / n
local sub = math.floor(now / width)
local ids, costs, total = {}, {}, 0.0
local pruned = false
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = fields(stored)
  total = s[1]
  local oldest_alive = sub - n + 1
  for i = 2, #s, 2 do
    if s[i] < oldest_alive and #ids == 0 then
      total = total - s[i + 1] -- same subtractions, same order, as the pure transition
      pruned = true
    else
      ids[#ids + 1], costs[#costs + 1] = s[i], s[i + 1]
    end
  end
  if pruned and #ids == 0 then
    total = 0.0
  end
end

local function encode()
  local parts = {fmt(total)}
  for i = 1, #ids do
    parts[#parts + 1] = fmt(ids[i]) .. ' ' .. fmt(costs[i])
  end
  return table.concat(parts, ' ')
end

local c = take(limit - total)
if total + c <= limit then
  if #ids > 0 and ids[#ids] == sub then
    costs[#costs] = costs[#costs] + c
  else
    ids[#ids + 1], costs[#costs + 1] = sub, c
  end
  total = total + c
  save(KEYS[1], encode())
  return reply(true, limit - total, 0, (ids[#ids] + n) * width - now, 0, c)
end
if pruned then
  save(KEYS[1], encode())
end
local retry = INF
if c <= limit then
  local must_expire = total + c - limit
  local freed = 0.0
  for i = 1, #ids do
    freed = freed + costs[i]
    if freed >= must_expire then
      retry = (ids[i] + n) * width - now
      break
    end
  end
end
local reset = 0.0
if #ids > 0 then
  reset = (ids[#ids] + n) * width - now
end
return reply(false, math.max(0.0, limit - total), retry, reset)
