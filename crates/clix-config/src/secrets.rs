//! The process's secrets: taken out of its environment at start, kept here.
//!
//! A hostile workspace may get clix to read a file it names (a symlinked
//! manifest, say), and `/proc/self/environ` is a file. So the binary's
//! `main`, before any thread exists, moves every secret-named variable into
//! this store with [`take_from_environment`], which also erases it from the
//! environment, the kernel's copy included. Code that wants such a value
//! asks [`var`] (or [`get`]) instead of `std::env::var`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

pub use clix_common::Secret;

/// Filled once, by [`take_from_environment`]; empty in a process that never
/// called it (tests, other binaries), where [`var`] is plain `std::env::var`.
static STORE: OnceLock<BTreeMap<String, Secret>> = OnceLock::new();

/// The secret taken from the environment variable `name` at start.
pub fn get(name: &str) -> Option<&'static Secret> {
    STORE.get()?.get(name)
}

/// The names of the variables taken into the store, sorted (`clix config
/// show` lists the ones it reads; their values stay here).
pub fn names() -> impl Iterator<Item = &'static str> {
    STORE.get().into_iter().flat_map(|s| s.keys()).map(String::as_str)
}

/// The value of the environment variable `name` as the process started
/// with it: from the store for a secret, else from the environment (absent
/// when unset or not UTF-8, like `std::env::var(name).ok()`).
pub fn var(name: &str) -> Option<String> {
    match get(name) {
        Some(secret) => Some(secret.expose().to_owned()),
        None => std::env::var(name).ok(),
    }
}

/// Values shorter than this are not scrubbed: they would match ordinary text.
const SCRUB_MIN_LEN: usize = 8;

/// `text` with every value of the store (of 8 bytes or more) replaced by
/// `***`: for a message that may quote what a server was sent (a provider
/// that echoes a rejected key) before it reaches a log line or a terminal.
pub fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    let values = STORE.get().into_iter().flat_map(|s| s.values()).map(Secret::expose);
    scrub_values(text, values)
}

fn scrub_values<'a, 't>(text: &'t str, values: impl Iterator<Item = &'a str>) -> std::borrow::Cow<'t, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    for value in values.filter(|v| v.len() >= SCRUB_MIN_LEN) {
        if out.contains(value) {
            out = std::borrow::Cow::Owned(out.replace(value, "***"));
        }
    }
    out
}

/// Moves every variable whose name `is_secret` accepts into the store, and
/// erases it from the process: its value bytes in the original environment
/// block are zeroed, then the variable is unset. Returns how many were taken.
/// A second call takes nothing and returns 0.
///
/// Why overwrite in place rather than re-exec with a clean environment:
/// `/proc/<pid>/environ` shows the block the kernel wrote on the stack at
/// exec, and `remove_var` only edits libc's `environ` array of pointers into
/// it, so without the overwrite every value stays readable there. A re-exec
/// would also clear that block, but it needs a way to hand the secrets to
/// the new image (a pipe or memfd), changes nothing a caller sees except
/// cost, and doubles the start; zeroing the bytes is a few lines and
/// immediate. The entries of `environ` still point into that block when
/// `main` starts (nothing has called `setenv`/`putenv` yet), so the bytes
/// zeroed are the very bytes the kernel shows.
///
/// # Safety
///
/// No other thread may exist: this reads and writes the environment
/// (`libc::environ`, `std::env::remove_var`) without any lock that code in
/// another thread would take. Call it first thing in `main`.
pub unsafe fn take_from_environment(is_secret: impl Fn(&str) -> bool) -> usize {
    if STORE.get().is_some() {
        return 0;
    }
    // (name, value, where the value's bytes are, how many)
    let mut found: Vec<(Vec<u8>, Vec<u8>, *mut u8, usize)> = Vec::new();
    // SAFETY: single thread (the caller's contract); `environ` is either null
    // or a null-terminated array of pointers to NUL-terminated `NAME=value`
    // strings, which nothing changes while we walk it.
    unsafe {
        let mut entry = libc::environ;
        while !entry.is_null() && !(*entry).is_null() {
            let ptr = *entry as *mut u8;
            let bytes = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                let name = &bytes[..eq];
                if !name.is_empty() && is_secret(&String::from_utf8_lossy(name)) {
                    let value = &bytes[eq + 1..];
                    found.push((name.to_vec(), value.to_vec(), ptr.add(eq + 1), value.len()));
                }
            }
            entry = entry.add(1);
        }
    }
    let mut store = BTreeMap::new();
    for (name, value, at, len) in found {
        // A name can appear twice; getenv (and so std::env::var) sees the first.
        if let (Ok(name), Ok(value)) = (String::from_utf8(name.clone()), String::from_utf8(value)) {
            store.entry(name).or_insert(Secret::new(value));
        }
        // SAFETY: `at..at + len` is the value inside an environment string
        // (the stack block from exec, writable), found just above; no other
        // thread reads it.
        unsafe { std::ptr::write_bytes(at, 0, len) };
        // SAFETY: single thread (the caller's contract). The name is
        // non-empty and holds no `=` or NUL (it ends at the first `=` of a C string).
        unsafe { std::env::remove_var(OsStr::from_bytes(&name)) };
    }
    let taken = store.len();
    let _ = STORE.set(store);
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_every_long_enough_value() {
        let values = ["sk-canary-123", "short"];
        let text = "Incorrect API key provided: sk-canary-123 (again: sk-canary-123); short stays";
        assert_eq!(scrub_values(text, values.into_iter()), "Incorrect API key provided: *** (again: ***); short stays");
        assert!(matches!(scrub_values("nothing here", values.into_iter()), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn without_a_store_var_is_the_environment() {
        // The test harness never calls take_from_environment (it has threads).
        assert!(get("PATH").is_none());
        assert_eq!(var("PATH"), std::env::var("PATH").ok());
        assert_eq!(var("CLIX_NO_SUCH_VARIABLE_9f2c"), None);
    }
}
