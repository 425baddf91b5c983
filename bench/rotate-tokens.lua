-- wrk script: request N carries line N of a token file ("TOKEN" or "TOKEN ETAG")
-- as Authorization: Bearer (and If-None-Match), plus the headers given by -H.
-- Arguments: FILE START. Requests are built once in init, so each costs a table
-- lookup. The last line printed says where the next leg starts, so a pool of
-- new tokens is not replayed early, and counts the errors by wrk's kinds
-- (status: answers of 400 and more). Run with one thread (-t1): one cursor.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  requests = {}
  for line in io.lines(args[1]) do
    local token, etag = line:match("^(%S+) ?(%S*)$")
    if token then
      local headers = {}
      for name, value in pairs(wrk.headers) do headers[name] = value end
      headers["Authorization"] = "Bearer " .. token
      if etag ~= "" then headers["If-None-Match"] = etag end
      table.insert(requests, wrk.format("GET", wrk.path, headers))
    end
  end
  cursor = tonumber(args[2]) or 0
end

function request()
  local next = requests[cursor % #requests + 1]
  cursor = cursor + 1
  return next
end

function done(summary, latency)
  local errors = summary.errors
  io.write(string.format(
    'bench-result {"requests":%d,"durationUs":%d,"p50Us":%.0f,"p99Us":%.0f,' ..
    '"socketErrors":%d,"statusErrors":%d,"next":%d,' ..
    '"errorsByKind":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    errors.connect + errors.read + errors.write + errors.timeout, errors.status,
    threads[1]:get("cursor"),
    errors.connect, errors.read, errors.write, errors.timeout, errors.status))
end
