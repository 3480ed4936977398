//! The clix process holds no secret in its environment: a running `clix`
//! started with keys in its environment shows none of them in
//! `/proc/<pid>/environ` (what a hostile workspace could make it read), and
//! still uses them: `clix ask` sends the key, `clix mcp --http` takes its
//! token from CLIX_MCP_TOKEN.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::mcp_http::HttpServer;
use common::text;
use serde_json::json;
use support::openai_text;

const OPENAI_CANARY: &str = "canary-openai-5b1e9d";
const TOKEN_CANARY: &str = "canary-token-77c2a0";
const MCP_CANARY: &str = "canary-mcp-0d4f13";

/// `/proc/<pid>/environ` of a running child, as text.
fn environ(child: &Child) -> String {
    let bytes = std::fs::read(format!("/proc/{}/environ", child.id())).expect("the child's environ is readable");
    String::from_utf8_lossy(&bytes).replace('\0', "\n")
}

/// The environment holds the plain variables and none of the canaries.
fn assert_no_canary(environ: &str) {
    // The control: this is the child's environment, read after its start.
    assert!(environ.contains("CLIX_TEST_PLAIN=visible"), "not the child's environment: {environ:?}");
    for canary in [OPENAI_CANARY, TOKEN_CANARY, MCP_CANARY, "canary-"] {
        assert!(!environ.contains(canary), "{canary} is in /proc/<pid>/environ: {environ:?}");
    }
}

fn with_canaries(cmd: &mut Command) -> &mut Command {
    cmd.env("OPENAI_API_KEY", OPENAI_CANARY)
        .env("MY_TOKEN", TOKEN_CANARY)
        .env("CLIX_TEST_PLAIN", "visible")
        .env("CLIX_SANDBOX_MODE", "off")
}

#[test]
fn a_serving_mcp_process_has_no_key_in_its_environ() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut cmd = common::clix(home.path(), ws.path(), &["mcp"]);
    let mut child = with_canaries(&mut cmd)
        .env("CLIX_MCP_TOKEN", MCP_CANARY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Past its start: it answers `initialize` and runs a line.
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"command": "echo served"}}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut replies = String::new();
    for _ in 0..2 {
        reader.read_line(&mut replies).unwrap();
    }
    assert!(replies.contains("served"), "{replies}");

    assert_no_canary(&environ(&child));

    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn the_http_server_takes_its_token_from_the_environment_and_keeps_none() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The canary lets a client in only if the server found CLIX_MCP_TOKEN
    // after taking it out of the environment (else it makes a token).
    let mut cmd = common::clix(home.path(), ws.path(), &["mcp", "--http", "0.0.0.0:0"]);
    let server = HttpServer::start(with_canaries(&mut cmd).env("CLIX_MCP_TOKEN", MCP_CANARY));

    assert_no_canary(&environ(&server.child));
    assert_eq!(server.initialize(&[]).0, 401, "no token, no entry");
    assert_eq!(server.initialize(&[("Authorization", "Bearer wrong")]).0, 401);
    let (code, body) = server.initialize(&[("Authorization", &format!("Bearer {MCP_CANARY}"))]);
    assert_eq!(code, 200, "{body}");
}

#[tokio::test]
async fn ask_sends_the_key_it_took_out_of_its_environment() {
    // The model answers only once the test has read the environment of a
    // clix that has already sent its key: clix is still running then,
    // however slow the machine (a fixed delay could run out first).
    let looked = Arc::new(AtomicBool::new(false));
    let answer = {
        let looked = Arc::clone(&looked);
        support::when(move || looked.load(Ordering::SeqCst), openai_text("done", 1, 1))
    };
    let server = support::start(vec![answer]).await;
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut cmd = common::clix(home.path(), ws.path(), &["ask", "say done"]);
    with_canaries(&mut cmd)
        .env("CLIX_MEMORY_SUMMARIES", "false")
        .env("AGENT_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MODEL", "scripted")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();

    let started = Instant::now();
    while server.requests().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "clix never called the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = environ(&child);
    looked.store(true, Ordering::SeqCst);
    assert_no_canary(&seen);

    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "done\n");
    let requests = server.requests();
    let auth = requests[0].headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone());
    assert_eq!(auth, Some(format!("Bearer {OPENAI_CANARY}")));
    let shown = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(!shown.contains("canary-"), "a key is never printed: {shown}");
}

#[test]
fn a_secret_clix_variable_still_sets_its_setting() {
    // CLIX_AGENT_API_KEY leaves the environment at start; the CLIX_* layer
    // of the config reads it from the store.
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = common::clix(home.path(), ws.path(), &["config", "show", "--json"])
        .env("CLIX_AGENT_API_KEY", OPENAI_CANARY)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows["agent.api_key"], json!({"value": "***", "source": "env CLIX_AGENT_API_KEY"}));
}

/// Security round 4, finding 6, and issue 53: the same secret-shaped
/// values, typed by the model into every audited path (a hub tool's
/// parameter, an MCP server tool's arguments, a sandboxed program's
/// arguments: an `Authorization:` header, a URL's password; a clip line)
/// and a line, read from a workspace file, and repeated in its answer and
/// the run's summary, reach no file clix writes: not the audit log, the
/// trajectory, nor memory.
#[tokio::test]
async fn secret_shaped_values_reach_no_audit_record_trajectory_or_memory() {
    use support::{openai_calls, run_call, start_with_summarizer};
    const GHP: &str = "ghp_0123456789abcdefghijklmn";
    const SK: &str = "sk-proj-abcdefghijklmnop1234";
    const AKIA: &str = "AKIAABCDEFGHIJKLMNOP";
    const BEARER: &str = "opaque-cred-7f3a";
    const PASSWORD: &str = "hunter2pw";
    if !clix_testkit::mcp_ready("secret_shaped_values_reach_no_audit_record_trajectory_or_memory") {
        return;
    }
    let calls = [
        format!("echoer --query {GHP} --tags {SK}"),
        format!("sandbox run echo 'Authorization: Bearer {BEARER}' https://u:{PASSWORD}@x.test/r {AKIA}"),
        format!("fx paint --color red --tags {GHP} --tags {SK}"),
        format!("clip scratch 'echo {AKIA} https://u:{PASSWORD}@x.test/r'"),
        "cat creds.txt".to_string(),
    ];
    let script = calls
        .iter()
        .map(|c| openai_calls(&[("run", &run_call(c))], 1, 1))
        .chain([openai_text(&format!("The key is {AKIA} and the token {GHP}."), 1, 1)])
        .collect();
    let server = start_with_summarizer(script, &format!("Found {SK} and {GHP} in creds.txt.")).await;
    let (home, ws, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ws.path().join("creds.txt"), format!("aws={AKIA}\n")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[[mcp.server]]\nname = \"fx\"\ndescription = \"the fixture\"\ncommand = \"python3\"\nargs = [\"{}\", \"stdio\"]\n\n\
             [[clip]]\nname = \"scratch\"\ndescription = \"a second tree\"\nkind = \"local\"\npath = \"{}\"\n",
            clix_testkit::mcp_server_script(),
            tree.path().display()
        ),
    )
    .unwrap();
    let hub = ws.path().join(".clix/hub");
    std::fs::create_dir_all(&hub).unwrap();
    std::fs::write(
        hub.join("echoer.json"),
        r#"{"name": "echoer", "version": "1", "description": "Echo.", "command": "./echo.sh",
            "parameters": [{"name": "query", "type": "string"}, {"name": "tags", "type": "string"}]}"#,
    )
    .unwrap();
    let script_path = hub.join("echo.sh");
    std::fs::write(&script_path, "#!/bin/sh\necho \"$@\"\n").unwrap();
    std::fs::set_permissions(&script_path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = common::clix(home.path(), ws.path(), &["ask", "look for keys"]);
    cmd.env("CLIX_MEMORY_SUMMARIES", "true")
        .env("AGENT_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MODEL", "scripted");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // The model saw what it read: the values are the workspace's, not hidden from the work.
    let asked = server.requests();
    assert!(asked.iter().any(|r| r.body.to_string().contains(AKIA)), "the tool result reached the model");

    let mut files = Vec::new();
    let mut dirs = vec![home.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    let audit = std::fs::read_to_string(home.path().join("state/audit.jsonl")).unwrap();
    for kind in ["hub", "os", "mcp", "clip"] {
        assert!(audit.contains(&format!("\"kind\":\"{kind}\"")), "no {kind} line: every path was audited: {audit}");
    }
    assert!(files.iter().any(|f| f.to_string_lossy().contains("runs")), "a trajectory was written: {files:?}");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let content = String::from_utf8_lossy(&bytes);
        for secret in [GHP, SK, AKIA, BEARER, PASSWORD] {
            assert!(!content.contains(secret), "{secret} is in {}", file.display());
        }
    }
}
