// The OTEP 4947 variable must be in the executable's dynamic symbol table for an out-of-process
// reader to find it (docs/span-links-sdk.md, Rust).
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=otel_thread_ctx_v1");
}
