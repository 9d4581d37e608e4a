//! ddctxserver: the span-link tests' stand-in service (integration/workloads/spanserver.c) with
//! its spans published by Datadog's `libdd-otel-thread-ctx` (an OTEP 4947 writer from
//! crates.io) instead of spanprof's writer library. Worker threads serve "requests" back to
//! back, each in a span with fresh random ids, burning CPU in the endpoint's own function;
//! between requests they burn CPU outside any span. Even threads attach a fresh record per
//! request and detach it after (the crate's "swapping" use); odd threads keep one record and
//! update it in place, to the span's ids and back to zero ids between requests (its "in-place
//! update" use). Every span is logged when it ends:
//!
//!   span <tid> <trace_id hex> <span_id hex> <endpoint> <start_ns> <end_ns>
//!
//! (CLOCK_REALTIME ns) on stdout. Usage: ddctxserver SECONDS THREADS: prints "ready PID", then
//! waits for a line on stdin before the first request.
use std::fs::File;
use std::hint::black_box;
use std::io::{BufRead, Read, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use libdd_otel_thread_ctx::linux::OwnedThreadContext;

static LOG: Mutex<()> = Mutex::new(());

fn thread_cpu() -> Duration {
    let mut ts = std::mem::MaybeUninit::<[i64; 2]>::uninit();
    // clock_gettime(CLOCK_THREAD_CPUTIME_ID = 3): the only libc call, declared here.
    extern "C" {
        fn clock_gettime(clk: i32, ts: *mut [i64; 2]) -> i32;
    }
    let t = unsafe {
        assert_eq!(clock_gettime(3, ts.as_mut_ptr()), 0);
        ts.assume_init()
    };
    Duration::new(t[0] as u64, t[1] as u32)
}

fn gettid() -> i64 {
    extern "C" {
        fn syscall(n: i64, ...) -> i64;
    }
    unsafe { syscall(186) } // SYS_gettid on x86-64
}

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// Burns `ms` of this thread's CPU time.
#[inline(never)]
fn burn(ms: u64) {
    let end = thread_cpu() + Duration::from_millis(ms);
    let mut x: u64 = 1;
    while thread_cpu() < end {
        for _ in 0..2000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        }
    }
    black_box(x);
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn endpoint_checkout() {
    burn(40);
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn endpoint_search() {
    burn(25);
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn endpoint_login() {
    burn(15);
}

/// Work outside any span: its samples must carry no link.
#[no_mangle]
#[inline(never)]
pub extern "C" fn between_requests() {
    burn(10);
}

const ENDPOINTS: [(&str, extern "C" fn()); 3] = [
    ("checkout", endpoint_checkout),
    ("search", endpoint_search),
    ("login", endpoint_login),
];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn worker(seconds: f64, seq0: usize, in_place: bool) {
    let stop = Instant::now() + Duration::from_secs_f64(seconds);
    let tid = gettid();
    let mut urandom = File::open("/dev/urandom").expect("/dev/urandom");
    let mut seq = seq0;
    while Instant::now() < stop {
        let mut trace = [0u8; 16];
        let mut span = [0u8; 8];
        urandom.read_exact(&mut trace).unwrap();
        urandom.read_exact(&mut span).unwrap();
        trace[0] |= 1; // never all zero
        span[0] |= 1;
        let (name, endpoint) = ENDPOINTS[seq % 3];
        let user = format!("user-{}", seq % 7);
        seq += 1;
        let attrs: [(u8, &str); 2] = [(1, name), (2, &user)];
        let t0 = now_ns();
        if in_place {
            OwnedThreadContext::update(trace, span, 1, span, &attrs);
        } else {
            let _ = OwnedThreadContext::new(trace, span, 1, span, &attrs).attach();
        }
        endpoint();
        if in_place {
            // Zero ids: "no active trace" (the crate's ID representation).
            OwnedThreadContext::update([0; 16], [0; 8], 0, [0; 8], &[]);
        } else {
            drop(OwnedThreadContext::detach());
        }
        let t1 = now_ns();
        {
            let _g = LOG.lock().unwrap();
            let mut out = std::io::stdout().lock();
            writeln!(out, "span {tid} {} {} {name} {t0} {t1}", hex(&trace), hex(&span)).unwrap();
            out.flush().unwrap();
        }
        between_requests();
    }
    drop(OwnedThreadContext::detach());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: ddctxserver SECONDS THREADS");
        std::process::exit(2);
    }
    let seconds: f64 = args[1].parse().expect("SECONDS");
    let threads: usize = args[2].parse().expect("THREADS");
    println!("ready {}", std::process::id());
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let handles: Vec<_> = (0..threads)
        .map(|i| std::thread::spawn(move || worker(seconds, i * 5, i % 2 == 1)))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
