<?php
// One request of integration/test_php.py's php-fpm pool: ?mode=MODE&seconds=S runs the mode's
// chain of phpchain.php for S seconds of the worker's CPU time, then answers
// {"pid": worker PID, "mode": MODE, "cpu": seconds}.
require __DIR__ . "/phpchain.php";

$mode = $_GET["mode"] ?? "methods";
$seconds = (float)($_GET["seconds"] ?? 0.5);
$t0 = cpu_seconds();
phpchain_request($mode, $seconds);
header("Content-Type: application/json");
echo json_encode(["pid" => getmypid(), "mode" => $mode, "cpu" => cpu_seconds() - $t0]), "\n";
