# Ruby call chains of known shape for integration/test_ruby.py: one child process per mode, each
# burning CPU in its own chain's leaf loop (the lines marked "leaf: MODE").
#   ruby rubychain.rb SECONDS MODE...
# The parent forks the children (they exist before the agent samples), prints one JSON line
# {"children": {MODE: PID}}, waits for a line on stdin (the test's gate), lets the children run
# SECONDS of CPU time each, then prints {"cpu": {MODE: seconds}} and exits.
require "json"

class Shape
  def initialize(side)
    @side = side
  end

  def area(n)
    s = 0
    i = 0
    while i < n # leaf: methods leaf: thread
      s += (i * @side) % 7 # leaf: methods leaf: thread
      i += 1 # leaf: methods leaf: thread
    end
    s
  end
end

def spin(n)
  s = 0
  i = 0
  while i < n # leaf: recursion
    s += (i * 3) % 7 # leaf: recursion
    i += 1 # leaf: recursion
  end
  s
end

def recurse(depth, n)
  return spin(n) if depth == 0
  recurse(depth - 1, n) + 1
end

def thrower(n)
  s = 0
  i = 0
  while i < n # leaf: exception
    s += (i * 5) % 7 # leaf: exception
    i += 1 # leaf: exception
  end
  raise ArgumentError, "done #{s}"
end

def catcher(n)
  thrower(n)
rescue ArgumentError => e
  e.message.size
end

def with_block(n)
  yield n
end

def run_methods(n)
  Shape.new(3).area(n)
end

def run_recursion(n)
  recurse(5, n)
end

def run_block(n)
  with_block(n) do |k|
    s = 0
    i = 0
    while i < k # leaf: block
      s += (i * 11) % 7 # leaf: block
      i += 1 # leaf: block
    end
    s
  end
end

# A C function (Array#map) between two levels of Ruby: its block runs in a vm_exec of its own.
def run_callback(n)
  [n, n].map do |k|
    s = 0
    i = 0
    while i < k # leaf: callback
      s += (i * 13) % 7 # leaf: callback
      i += 1 # leaf: callback
    end
    s
  end.sum
end

def run_exception(n)
  catcher(n)
end

# The mixed mode (integration/test_ruby.py's rbspy agreement): three chains in turn.
MIXED = %w[recursion block callback].freeze
$round = 0

def chain_round(mode)
  n = 200_000
  if mode == "mixed"
    $round += 1
    mode = MIXED[$round % MIXED.size]
  end
  case mode
  when "methods", "thread" then run_methods(n)
  when "recursion" then run_recursion(n)
  when "block" then run_block(n)
  when "callback" then run_callback(n / 2)
  when "exception" then run_exception(n)
  end
end

def cpu_seconds
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def child_loop(mode, seconds)
  t0 = cpu_seconds
  chain_round(mode) while cpu_seconds - t0 < seconds
end

# The thread mode: the chain runs in a thread of its own, the main thread waits in join.
def start_thread(mode, seconds)
  Thread.new { child_loop(mode, seconds) }.join
end

seconds = Float(ARGV[0])
modes = ARGV[1..]
children = {}
pipes = {}
i = 0
while i < modes.size
  mode = modes[i]
  r, w = IO.pipe
  r2, w2 = IO.pipe
  pid = fork
  if pid.nil?
    w.close
    r2.close
    r.gets # "go"
    t0 = cpu_seconds
    if mode == "thread"
      start_thread(mode, seconds)
    else
      child_loop(mode, seconds)
    end
    w2.puts JSON.generate(cpu_seconds - t0)
    w2.flush
    exit!(0)
  end
  r.close
  w2.close
  children[mode] = pid
  pipes[mode] = [w, r2]
  i += 1
end
puts JSON.generate({ "children" => children })
$stdout.flush
$stdin.gets
pipes.each_value { |w, _| w.puts "go"; w.flush }
cpu = {}
pipes.each { |mode, (_, r2)| cpu[mode] = JSON.parse(r2.gets) }
children.each_value { |pid| Process.waitpid(pid) }
puts JSON.generate({ "cpu" => cpu })
$stdout.flush
