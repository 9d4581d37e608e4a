// fp_chain.rs: main -> fp_a -> fp_b -> fp_c (burns CPU) for argv[1] seconds, built
// -C force-frame-pointers=yes -C panic=abort with .eh_frame removed (test_stack_truth.py).
use std::hint::black_box;
use std::time::Instant;

#[inline(never)]
#[no_mangle]
pub extern "C" fn fp_c(n: u64) {
    let mut s = 0u64;
    for i in 0..n {
        s = black_box(s.wrapping_add(i.wrapping_mul(i)));
    }
    black_box(s);
}

#[inline(never)]
#[no_mangle]
pub extern "C" fn fp_b(n: u64) {
    fp_c(n);
    black_box(());
}

#[inline(never)]
#[no_mangle]
pub extern "C" fn fp_a(n: u64) {
    fp_b(n);
    black_box(());
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5.0);
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < secs {
        fp_a(2_000_000);
    }
}
