//! `clix mcp` against the official Python SDK client (`pip install mcp`,
//! 2.x): tests/mcp/suite.py over stdio and streamable HTTP, in the legacy
//! `initialize` mode and in `auto` (server/discover first).
//!
//! Skipped with a message when `python3 -c 'import mcp'` fails, except under
//! CI (`CI` set), where `.ci/run` installs it and a skip would hide a broken
//! install step.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;
use std::process::Command;

fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/suite.py")
}

fn python_sdk_present() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp, mcp.client.streamable_http; from mcp import Client, StdioServerParameters"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "the Python MCP SDK is missing under CI: .ci/run should have run `pip install mcp`"
        );
        eprintln!("SKIPPED: the Python MCP SDK is not installed (`pip install mcp`); `python3 -c 'import mcp'` failed");
    }
    ok
}

fn run_suite(transport: &str, mode: &str) {
    if !python_sdk_present() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(suite())
        .args(["--clix", env!("CARGO_BIN_EXE_clix"), "--transport", transport, "--mode", mode])
        // The suite makes its own CLIX_HOME; this one only keeps Python's
        // and clix's own files away from the real home.
        .env("CLIX_HOME", home.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "suite {transport}/{mode} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(", 0 failed"), "{stdout}");
}

#[test]
fn python_sdk_over_stdio_legacy() {
    run_suite("stdio", "legacy");
}

#[test]
fn python_sdk_over_stdio_auto() {
    run_suite("stdio", "auto");
}

#[test]
fn python_sdk_over_http_legacy() {
    run_suite("http", "legacy");
}

#[test]
fn python_sdk_over_http_auto() {
    run_suite("http", "auto");
}
