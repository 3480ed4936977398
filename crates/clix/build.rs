//! Link flags of the `clix` binary alone.
//!
//! Its relative relocations (some 106,000 pointers into its own data, for
//! a position-independent executable) are packed as RELR: the loader reads a
//! few kilobytes instead of 2.5 MB of RELA entries on every start, and the
//! binary keeps ASLR (a non-PIE link would drop them, and ASLR with them).
//! glibc 2.36 and later apply them; the linker (lld, or GNU ld 2.38 and
//! later) writes them.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
