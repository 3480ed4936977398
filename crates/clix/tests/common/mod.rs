//! What the binary's integration tests share: the real `clix`, started with
//! a cleared environment, its own `CLIX_HOME` and a workspace as cwd.
#![allow(dead_code)]

pub(crate) mod mcp_http;

use std::path::Path;
use std::process::{Command, Stdio};

/// `clix args…` in `ws`, with only PATH and `CLIX_HOME` set and stdin closed.
pub(crate) fn clix(home: &Path, ws: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clix"));
    cmd.args(args)
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLIX_HOME", home)
        .stdin(Stdio::null());
    cmd
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
