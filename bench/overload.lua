-- wrk script of the overload scenario (overload-load.ts). Argument: PREFIX. Thread N walks its
-- own token file, PREFIX-N.txt, lines "TOKEN SUB": two threads walking one list in the same
-- order would make a share of the requests cache hits. It counts the answers by status and
-- times each 200 from its request, found again by the first "sub" of its body (each sub of a
-- file is distinct, each file is longer than a thread has requests in flight): wrk's own
-- latency mixes the 200s with the 503s that are answered at once. With
-- OVERLOAD_HONOUR_RETRY_AFTER=1 a connection waits the Retry-After of a 503 before its next
-- request, as the client module does. The last line printed holds the figures as JSON.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } overload_timespec;
int clock_gettime(int clock, overload_timespec *time);
]]
local CLOCK_MONOTONIC = 1
local clock = ffi.new("overload_timespec")

local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end

local honour_retry_after = os.getenv("OVERLOAD_HONOUR_RETRY_AFTER") == "1"
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_number", #threads)
end

function init(args)
  requests, subs = {}, {}
  for line in io.lines(args[1] .. "-" .. thread_number .. ".txt") do
    local token, sub = line:match("^(%S+) (%S+)$")
    if token then
      local headers = {}
      for name, value in pairs(wrk.headers) do headers[name] = value end
      headers["Authorization"] = "Bearer " .. token
      table.insert(requests, wrk.format("GET", wrk.path, headers))
      table.insert(subs, sub)
    end
  end
  cursor = 0
  -- sub -> when its request was made; whole ms -> 200s that took that long; whole seconds into
  -- the load -> 200s answered in that second.
  sent_at, served_ms, served_in_second = {}, {}, {}
  started_at = now_ms()
  -- Keyed by text: a table keyed by small numbers would be copied out as an array.
  statuses = {}
  -- The waits asked for, first in first out: each answer is followed by one delay() call of its
  -- thread (which connection makes it is not known here, so the waits may change hands).
  waits, first_wait, last_wait = {}, 1, 0
end

function request()
  local index = cursor % #requests + 1
  cursor = cursor + 1
  sent_at[subs[index]] = now_ms()
  return requests[index]
end

-- Only with the option: once delay() exists, wrk puts every request behind a timer.
if honour_retry_after then
  function delay()
    if first_wait > last_wait then return 0 end
    local wait = waits[first_wait]
    waits[first_wait] = nil
    first_wait = first_wait + 1
    return wait
  end
end

function response(status, headers, body)
  local key = "" .. status
  statuses[key] = (statuses[key] or 0) + 1
  if honour_retry_after then
    last_wait = last_wait + 1
    waits[last_wait] = 1000 * (tonumber(headers["retry-after"] or headers["Retry-After"]) or 0)
  end
  if status ~= 200 then return end
  local second = "" .. math.floor((now_ms() - started_at) / 1000)
  served_in_second[second] = (served_in_second[second] or 0) + 1
  local sub = body:match('"sub":"([^"]*)"')
  local at = sub and sent_at[sub]
  if at then
    local bucket = "" .. math.floor(now_ms() - at)
    served_ms[bucket] = (served_ms[bucket] or 0) + 1
    sent_at[sub] = nil
  end
end

-- The least whole ms that `share` of the counted answers took at most; -1 when none.
local function percentile(counts, total, share)
  local buckets = {}
  for ms in pairs(counts) do table.insert(buckets, tonumber(ms)) end
  table.sort(buckets)
  local rank, seen = math.max(1, math.ceil(share * total)), 0
  for _, ms in ipairs(buckets) do
    seen = seen + counts["" .. ms]
    if seen >= rank then return ms end
  end
  return -1
end

function done(summary, latency)
  local counts, timed, by_status, by_second = {}, 0, {}, {}
  for _, thread in ipairs(threads) do
    for second, count in pairs(thread:get("served_in_second")) do
      by_second[second] = (by_second[second] or 0) + count
    end
    for ms, count in pairs(thread:get("served_ms")) do
      counts[ms] = (counts[ms] or 0) + count
      timed = timed + count
    end
    for status, count in pairs(thread:get("statuses")) do
      by_status[status] = (by_status[status] or 0) + count
    end
  end
  local parts, seconds = {}, {}
  for status, count in pairs(by_status) do
    table.insert(parts, string.format('"%s":%d', status, count))
  end
  for second, count in pairs(by_second) do
    table.insert(seconds, string.format('"%s":%d', second, count))
  end
  local errors = summary.errors
  io.write(string.format(
    'overload-result {"requests":%d,"durationUs":%d,"statuses":{%s},"servedInSecond":{%s},' ..
    '"served":{"timed":%d,"p50Ms":%d,"p99Ms":%d,"maxMs":%d},' ..
    '"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
    '"errorsByKind":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}}\n',
    summary.requests, summary.duration, table.concat(parts, ","), table.concat(seconds, ","),
    timed, percentile(counts, timed, 0.5), percentile(counts, timed, 0.99),
    percentile(counts, timed, 1), latency:percentile(50), latency:percentile(99), latency.max,
    errors.connect, errors.read, errors.write, errors.timeout, errors.status))
end
