-- Posts products to args[1], each with a fresh, valid EAN-13 barcode: 21, then ten digits of a
-- sequence number no other request of the run uses, then the GS1 check digit. Thread i numbers from
-- args[2] + i * args[3]; the bench gives every run its own range.
local report = require("report")

local threads = 0
function setup(thread)
  thread:set("thread_index", threads)
  threads = threads + 1
end

local head, sequence, last
function init(args)
  local span = tonumber(args[3])
  sequence = tonumber(args[2]) + thread_index * span
  last = sequence + span - 1
  -- The request line and headers are fixed: only the body and its length change per request.
  local lines = { "POST " .. args[1] .. " HTTP/1.1" }
  local host = false
  for name, value in pairs(wrk.headers) do
    if name:lower() == "host" then host = true end
    if name:lower() ~= "content-length" then lines[#lines + 1] = name .. ": " .. value end
  end
  if not host then lines[#lines + 1] = "Host: " .. wrk.host end
  head = table.concat(lines, "\r\n") .. "\r\nContent-Length: "
end

local function check_digit(digits)
  local sum = 0
  for i = 1, 12 do
    local weight = (i % 2 == 1) and 1 or 3
    sum = sum + (digits:byte(i) - 48) * weight
  end
  return (10 - sum % 10) % 10
end

function request()
  if sequence > last then error("create.lua: this run's barcode range is used up") end
  local digits = string.format("21%010d", sequence)
  local body = string.format('{"name":"Bench product %d","barcode":"%s%d","price":"%d.%02d"}',
    sequence, digits, check_digit(digits), sequence % 1000, sequence % 100)
  sequence = sequence + 1
  return head .. #body .. "\r\n\r\n" .. body
end

done = report.done
