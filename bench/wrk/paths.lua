-- Asks for the request targets listed one per line in the file args[1], picked at random; each
-- thread draws from its own sequence seeded by args[2], so every target gets the same requests.
local report = require("report")

local threads = 0
function setup(thread)
  thread:set("thread_index", threads)
  threads = threads + 1
end

local requests = {}
local count = 0
function init(args)
  for path in io.lines(args[1]) do
    count = count + 1
    requests[count] = wrk.format(nil, path)
  end
  math.randomseed(tonumber(args[2]) + thread_index)
end

function request()
  return requests[math.random(count)]
end

done = report.done
