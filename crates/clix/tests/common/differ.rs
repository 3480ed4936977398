//! One line through `clix run --raw` and through GNU `bash -c`, each in its
//! own copy of a workspace, for the differential suites (`differential.rs`
//! at small sizes, `scale.rs` at real ones): stdout bytes and exit codes are
//! what they compare; stderr wording legitimately differs.

use std::path::Path;
use std::process::{Command, Stdio};

/// What a line printed on stdout (the workspace's path written `$WS`) and
/// its exit code.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) stdout: String,
    pub(crate) code: Option<i32>,
    /// Not compared; shown when a line differs, and read by the limit tests.
    pub(crate) stderr: String,
}

fn outcome(out: std::process::Output, ws: &Path) -> Outcome {
    let ws = ws.to_str().unwrap();
    Outcome {
        stdout: String::from_utf8_lossy(&out.stdout).replace(ws, "$WS"),
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).replace(ws, "$WS"),
    }
}

/// `line` through `clix run --raw` in `ws`, with `env` added.
pub(crate) fn run_clix(line: &str, ws: &Path, home: &Path, env: &[(&str, &str)]) -> Outcome {
    let out = Command::new(env!("CARGO_BIN_EXE_clix"))
        .args(["run", "--raw", "--workspace"])
        .arg(ws)
        .arg(line)
        .env("CLIX_HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("spawn clix");
    outcome(out, ws)
}

/// `line` through GNU bash in `ws`, in the C locale.
pub(crate) fn run_bash(line: &str, ws: &Path) -> Outcome {
    let out = Command::new("bash")
        .args(["-c", line])
        .current_dir(ws)
        .env("LC_ALL", "C")
        .env_remove("PWD")
        .env_remove("BASH_ENV")
        .stdin(Stdio::null())
        .output()
        .expect("spawn bash");
    outcome(out, ws)
}
