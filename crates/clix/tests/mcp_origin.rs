//! `clix mcp --http` checks a browser's `Origin` before anything else (the
//! MCP spec's guard against DNS rebinding): loopback origins and requests
//! without one pass, others get 403 unless `--allow-origin` lists them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::process::{Command, Stdio};

use common::mcp_http::{AUTHORIZATION, HttpServer};

/// `clix mcp --http 127.0.0.1:0 extra…` on a fresh home and workspace.
struct Server {
    http: HttpServer,
    _home: tempfile::TempDir,
    _ws: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut cmd = common::clix(home.path(), ws.path(), &["mcp", "--http", "127.0.0.1:0"]);
        cmd.args(extra).env("CLIX_SANDBOX_MODE", "off");
        Server { http: HttpServer::start(&mut cmd), _home: home, _ws: ws }
    }

    /// An `initialize` with the token and `origin` (if any): the status
    /// code and, for an error, the body.
    fn initialize(&self, origin: Option<&str>) -> (u16, String) {
        let mut headers = vec![AUTHORIZATION];
        headers.extend(origin.map(|o| ("Origin", o)));
        self.http.initialize(&headers)
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
    let server = Server::start(&[]);
    // Without the token: a browser from elsewhere learns only that its origin is refused.
    assert_eq!(server.http.initialize(&[("Origin", "http://evil.example")]).0, 403);
    assert_eq!(server.http.initialize(&[("Origin", "http://localhost:1234")]).0, 401);
    let (code, head, _) = server.http.exchange(&[("Connection", "keep-alive")]);
    assert_eq!(code, 401, "loopback is not a credential");
    // The refused request's body is never read, so the server drops the
    // connection after answering: it says so, or a client reusing it for
    // its next request sees it close without an answer.
    assert!(head.contains("connection: close"), "{head}");
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
