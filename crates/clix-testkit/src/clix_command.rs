//! Starting the `clix` binary as the tests and the benchmark do: in a
//! workspace, with a home of its own and nothing else of this process's
//! environment.

use std::path::Path;
use std::process::{Command, Stdio};

/// `clix args…` (the binary at `clix`) in `ws`, with only `PATH` and
/// `CLIX_HOME` set and stdin closed.
pub fn clix_command(clix: &Path, home: &Path, ws: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(clix);
    cmd.args(args)
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLIX_HOME", home)
        .stdin(Stdio::null());
    cmd
}
