//! The MCP fixture server that the tests of clix-mcp-client, the engine,
//! the binary and the eval drive: `crates/clix-mcp-client/tests/fixtures/server.py`,
//! written on the official Python SDK, run in bubblewrap.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixtures folder (`server.py` and the configuration files imported
/// by the tests).
pub fn mcp_fixtures() -> PathBuf {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clix-mcp-client/tests/fixtures");
    folder.canonicalize().unwrap_or(folder)
}

/// The fixture server's script, as a command line argument.
pub fn mcp_server_script() -> String {
    mcp_fixtures().join("server.py").display().to_string()
}

/// Whether bubblewrap starts and Python's `mcp` 2.x imports; a visible
/// skip (a failure under CI) when not.
pub fn mcp_ready(test: &str) -> bool {
    let bwrap = Command::new("bwrap").args(["--ro-bind", "/", "/", "true"]).status().is_ok_and(|s| s.success());
    if !bwrap {
        crate::skip_missing(test, "bubblewrap cannot start here (apt-get install bubblewrap)");
        return false;
    }
    let mcp = Command::new("python3").args(["-c", "import mcp.server.mcpserver"]).output();
    if !mcp.is_ok_and(|o| o.status.success()) {
        crate::skip_missing(test, "python3 with the `mcp` package (2.x) is not installed");
        return false;
    }
    true
}
