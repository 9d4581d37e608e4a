<?php
// PHP call chains of known shape for integration/test_php.py: one child process per mode, each
// burning CPU in its own chain's leaf loop (the lines marked "leaf: MODE").
//   php phpchain.php SECONDS MODE...   (CLI)
// The parent forks the children (they exist before the agent samples), prints one JSON line
// {"children": {MODE: PID}}, waits for a line on stdin (the test's gate), lets the children
// run SECONDS of CPU time each (each then kills itself: no teardown), then prints
// {"cpu": {MODE: seconds}} and exits.
// Under php-fpm, phpchain_request() serves one request of one mode (integration/phpfpm.php).

class Shape
{
    private $side;

    public function __construct($side)
    {
        $this->side = $side;
    }

    public function area($n)
    {
        $s = 0;
        for ($i = 0; $i < $n; $i++) { // leaf: methods
            $s += ($i * $this->side) % 7; // leaf: methods
        }
        return $s;
    }
}

function spin($n)
{
    $s = 0;
    for ($i = 0; $i < $n; $i++) { // leaf: recursion
        $s += ($i * 3) % 7; // leaf: recursion
    }
    return $s;
}

function recurse($depth, $n)
{
    if ($depth == 0) {
        return spin($n);
    }
    return recurse($depth - 1, $n) + 1;
}

function thrower($n)
{
    $s = 0;
    for ($i = 0; $i < $n; $i++) { // leaf: exception
        $s += ($i * 5) % 7; // leaf: exception
    }
    throw new RuntimeException("done " . $s);
}

function catcher($n)
{
    try {
        thrower($n);
    } catch (RuntimeException $e) {
        return strlen($e->getMessage());
    }
    return 0;
}

function run_methods($n)
{
    $shape = new Shape(3);
    return $shape->area($n);
}

function run_recursion($n)
{
    return recurse(5, $n);
}

function run_closure($n)
{
    $f = function ($k) {
        $s = 0;
        for ($i = 0; $i < $k; $i++) { // leaf: closure
            $s += ($i * 11) % 7; // leaf: closure
        }
        return $s;
    };
    return $f($n);
}

function run_callback($n)
{
    return array_sum(array_map(function ($k) {
        $s = 0;
        for ($i = 0; $i < $k; $i++) { // leaf: callback
            $s += ($i * 13) % 7; // leaf: callback
        }
        return $s;
    }, [$n, $n]));
}

function run_exception($n)
{
    return catcher($n);
}

function phpchain_round($mode)
{
    $n = 200000;
    switch ($mode) {
        case "methods":
            return run_methods($n);
        case "recursion":
            return run_recursion($n);
        case "closure":
            return run_closure($n);
        case "callback":
            return run_callback($n / 2);
        case "exception":
            return run_exception($n);
    }
    return 0;
}

function cpu_seconds()
{
    $u = getrusage();
    return $u["ru_utime.tv_sec"] + $u["ru_utime.tv_usec"] / 1e6 +
        $u["ru_stime.tv_sec"] + $u["ru_stime.tv_usec"] / 1e6;
}

function phpchain_request($mode, $seconds)
{
    $t0 = cpu_seconds();
    while (cpu_seconds() - $t0 < $seconds) {
        phpchain_round($mode);
    }
}

if (PHP_SAPI !== "cli" || !isset($argv) || realpath($argv[0]) !== __FILE__) {
    return;
}

$seconds = (float)$argv[1];
$modes = array_slice($argv, 2);
$children = [];
$pipes = [];
foreach ($modes as $mode) {
    $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid == 0) {
        fclose($pair[0]);
        fgets($pair[1]); // "go"
        $t0 = cpu_seconds();
        while (cpu_seconds() - $t0 < $seconds) {
            phpchain_round($mode);
        }
        fwrite($pair[1], json_encode(cpu_seconds() - $t0) . "\n");
        // Gone at once: the engine's own teardown (request and module shutdown, no PHP frame)
        // is no part of the chains, and a slow machine (an emulated guest) spends a tenth of
        // the child's samples there.
        posix_kill(getmypid(), SIGKILL);
        exit(0);
    }
    fclose($pair[1]);
    $children[$mode] = $pid;
    $pipes[$mode] = $pair[0];
}
echo json_encode(["children" => $children]), "\n";
fgets(STDIN);
foreach ($pipes as $p) {
    fwrite($p, "go\n");
}
$cpu = [];
foreach ($pipes as $mode => $p) {
    $cpu[$mode] = json_decode(fgets($p));
}
foreach ($children as $pid) {
    pcntl_waitpid($pid, $status);
}
echo json_encode(["cpu" => $cpu]), "\n";
