//! `clix mcp --http` checks a browser's `Origin` before anything else (the
//! MCP spec's guard against DNS rebinding): loopback origins and requests
//! without one pass, others get 403 unless `--allow-origin` lists them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `clix mcp --http 127.0.0.1:0 extra…` on a fresh home and workspace; killed on drop.
struct Server {
    child: Child,
    addr: String,
    _home: tempfile::TempDir,
    _ws: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut child = Command::new(env!("CARGO_BIN_EXE_clix"))
            .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
            .arg(ws.path())
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CLIX_HOME", home.path())
            .env("CLIX_SANDBOX_MODE", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("clix mcp: serving http://").unwrap_or_else(|| panic!("{line:?}"));
        let addr = url.strip_suffix("/mcp").unwrap().to_owned();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server { child, addr, _home: home, _ws: ws }
    }

    /// POSTs an `initialize` with `origin` (if any); the status code and,
    /// for an error, the body.
    fn initialize(&self, origin: Option<&str>) -> (u16, String) {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"origin-test","version":"0"}}}"#;
        let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\n{origin}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let code: u16 = status.split_whitespace().nth(1).unwrap_or_else(|| panic!("{status:?}")).parse().unwrap();
        if code == 200 {
            // An event stream: the status is all we need.
            return (code, String::new());
        }
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        let body = rest.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (code, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_foreign_origin_is_refused_loopback_and_none_pass() {
    let server = Server::start(&[]);
    let (code, body) = server.initialize(Some("http://evil.example"));
    assert_eq!(code, 403, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    assert_eq!(error["jsonrpc"], "2.0");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("--allow-origin http://evil.example"), "{message}");

    assert_eq!(server.initialize(Some("http://localhost:1234")).0, 200);
    assert_eq!(server.initialize(Some("http://127.0.0.1:9")).0, 200);
    assert_eq!(server.initialize(Some("http://[::1]:3000")).0, 200);
    assert_eq!(server.initialize(None).0, 200, "clients that are not browsers send no Origin");
}

#[test]
fn allow_origin_lets_a_listed_site_in() {
    let server =
        Server::start(&["--allow-origin", "https://app.example.com", "--allow-origin", "http://10.1.2.3:8080"]);
    assert_eq!(server.initialize(Some("https://app.example.com")).0, 200);
    assert_eq!(server.initialize(Some("http://10.1.2.3:8080")).0, 200);
    assert_eq!(server.initialize(Some("http://localhost:1234")).0, 200);
    assert_eq!(server.initialize(Some("http://evil.example")).0, 403);
    assert_eq!(server.initialize(Some("https://app.example.com:8443")).0, 403, "another port is another origin");
}

#[test]
fn the_origin_is_checked_before_the_token() {
    let server = Server::start(&["--token", "s3cret"]);
    // Without the token: a browser from elsewhere learns only that its origin is refused.
    assert_eq!(server.initialize(Some("http://evil.example")).0, 403);
    assert_eq!(server.initialize(Some("http://localhost:1234")).0, 401);
}

#[test]
fn a_bad_allow_origin_stops_the_server_before_it_listens() {
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_clix"))
        .args(["mcp", "--http", "127.0.0.1:0", "--allow-origin", "app.example.com/x", "--workspace"])
        .arg(home.path())
        .env_clear()
        .env("CLIX_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("--allow-origin \"app.example.com/x\" is not an origin"), "{stderr}");
}
