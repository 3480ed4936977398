//! Skips that cannot hide: each one prints `SKIPPED: <test>: <why>` to
//! stderr and, when `CLIX_SKIP_LOG` names a file, appends the same line to
//! it, so `.ci/run` can list every skip after the tests (cargo hides a
//! passing test's stderr).

use std::io::Write;

/// Something `.ci/run` installs is missing (a program, a Python package,
/// the model). Outside CI the test is skipped visibly; under CI (`CI` set)
/// a missing install is a broken set-up, so this panics instead.
pub fn skip_missing(test: &str, why: &str) {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{test}: {why}; under CI this must not be skipped: .ci/run installs it");
    }
    record(test, why);
}

/// The host cannot provide what the test needs (a writable cgroup, root to
/// switch users). Installing nothing fixes that, so CI skips it too, but
/// the skip is listed.
pub fn skip_host_limit(test: &str, why: &str) {
    record(test, why);
}

fn record(test: &str, why: &str) {
    let line = format!("SKIPPED: {test}: {why}");
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("CLIX_SKIP_LOG").filter(|p| !p.is_empty()) {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(e) = appended {
            eprintln!("cannot append to CLIX_SKIP_LOG {}: {e}", std::path::Path::new(&path).display());
        }
    }
}
