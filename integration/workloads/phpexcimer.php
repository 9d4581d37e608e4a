<?php
// integration/test_php.py's ground truth: the chains of phpchain.php, mixed, sampled at once by
// php-excimer (Debian php-excimer: a CPU-time timer in the process, stacks read at the VM's
// next interrupt check) and by the agent.
//   php phpexcimer.php SECONDS OUT.json MODE...
// Prints {"pid": PID}, waits for a line on stdin (the test's gate), runs SECONDS of CPU time of
// rounds of the modes under ExcimerProfiler (1 ms of CPU time), then writes to OUT.json
// {"cpu": seconds, "samples": [[function, ...] root first, ...]}: each of excimer's samples as
// "Class::function", "function", "{closure}" or "{main}".
require __DIR__ . "/phpchain.php";

$seconds = (float)$argv[1];
echo json_encode(["pid" => getmypid()]), "\n";
fgets(STDIN);
$prof = new ExcimerProfiler();
$prof->setEventType(EXCIMER_CPU);
$prof->setPeriod(0.001);
$prof->setMaxDepth(64);
$prof->start();
$t0 = cpu_seconds();
while (cpu_seconds() - $t0 < $seconds) {
    foreach (array_slice($argv, 3) as $mode) {
        phpchain_round($mode);
    }
}
$cpu = cpu_seconds() - $t0;
$prof->stop();
$samples = [];
foreach ($prof->getLog() as $entry) {
    $chain = [];
    foreach ($entry->getTrace() as $f) {
        if (isset($f["function"])) {
            $name = isset($f["class"]) ? $f["class"] . "::" . $f["function"] : $f["function"];
        } else {
            $name = "{main}";
        }
        $chain[] = $name;
    }
    for ($i = 0; $i < $entry->getEventCount(); $i++) {
        $samples[] = array_reverse($chain);
    }
}
file_put_contents($argv[2], json_encode(["cpu" => $cpu, "samples" => $samples]));
