-- concurrency (acquire): state "in_flight"; params max_in_flight, hold_s. No TTL (ttl_ms 0):
-- an in-flight count must not expire while its requests run; release.lua gives slots back.
local max_in_flight, hold = tonumber(ARGV[5]), tonumber(ARGV[6])
local in_flight = tonumber(redis.call('GET', KEYS[1]) or '0')
local c = take(max_in_flight - in_flight)
if in_flight + c <= max_in_flight then
  in_flight = in_flight + c
  save(KEYS[1], fmt(in_flight))
  return reply(true, max_in_flight - in_flight, 0, hold, 0, c)
end
local retry = INF
if c <= max_in_flight then
  retry = hold
end
return reply(false, max_in_flight - in_flight, retry, hold)
