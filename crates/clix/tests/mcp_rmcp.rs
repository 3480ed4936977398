//! `clix mcp` as a child process, driven by rmcp's own client: both
//! lifecycles over stdio, cancellation, progress, stdout hygiene, a clean
//! exit on stdin EOF, and the load test (8 clients x 1,000 calls over HTTP).
//!
//! The stdio round-trip benchmark is `#[ignore]`d; run it with
//! `cargo test --release -p clix --test mcp_rmcp -- --ignored --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};

mod common;

use common::Env;
use common::mcp_http::{AUTHORIZATION, HttpServer, TOKEN};

/// `clix mcp` over an [`Env`]: how the tests start it and connect to it.
trait McpEnv {
    fn command(&self, extra: &[&str]) -> tokio::process::Command;
    fn std_command(&self, extra: &[&str]) -> Command;
    async fn connect<H: ClientHandler>(
        &self,
        handler: H,
        lifecycle: ClientLifecycleMode,
    ) -> RunningService<RoleClient, H>;
    async fn connect_with<H: ClientHandler>(
        &self,
        extra: &[&str],
        handler: H,
        lifecycle: ClientLifecycleMode,
    ) -> RunningService<RoleClient, H>;
}

impl McpEnv for Env {
    fn command(&self, extra: &[&str]) -> tokio::process::Command {
        self.std_command(extra).into()
    }

    fn std_command(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_clix"));
        cmd.arg("mcp")
            .arg("--workspace")
            .arg(self.ws.path())
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CLIX_HOME", self.home.path());
        cmd
    }

    async fn connect<H: ClientHandler>(
        &self,
        handler: H,
        lifecycle: ClientLifecycleMode,
    ) -> RunningService<RoleClient, H> {
        self.connect_with(&[], handler, lifecycle).await
    }

    /// `clix mcp` with `extra` flags.
    async fn connect_with<H: ClientHandler>(
        &self,
        extra: &[&str],
        handler: H,
        lifecycle: ClientLifecycleMode,
    ) -> RunningService<RoleClient, H> {
        let (transport, _stderr) =
            TokioChildProcess::builder(self.command(extra)).stderr(Stdio::null()).spawn().expect("clix mcp starts");
        handler.serve_with_lifecycle(transport, lifecycle).await.expect("handshake")
    }
}

fn args(value: Value) -> rmcp::model::JsonObject {
    value.as_object().unwrap().clone()
}

fn call(command: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("run").with_arguments(args(json!({ "command": command })))
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().expect("text first").text.clone()
}

/// The text without its `[exit:N | …]` footer.
fn body(result: &CallToolResult) -> String {
    let t = text(result);
    t.rsplit_once("[exit:").map(|(b, _)| b.trim_end().to_owned()).unwrap_or(t)
}

fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

async fn exercise(client: &RunningService<RoleClient, impl ClientHandler>) {
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "run");
    let props = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(props.keys().collect::<Vec<_>>(), ["command", "stdin", "timeout_ms"]);
    let annotations = tool.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(false));
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.open_world_hint, Some(false));
    assert!(tool.output_schema.is_some());

    let r = client.call_tool(call("echo hi")).await.unwrap();
    assert!(text(&r).starts_with("hi\n[exit:0 | "), "{}", text(&r));
    assert_eq!(r.is_error, Some(false));
    let s = r.structured_content.clone().unwrap();
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["stdout_bytes"], 3);
    // The text already shows the streams: structuredContent does not repeat them.
    assert!(s.get("stdout").is_none() && s.get("stderr").is_none(), "{s}");
    let schema = tool.output_schema.as_ref().unwrap();
    for field in ["exit_code", "duration_ms", "truncated", "spill_path", "stdout_bytes", "stderr_bytes"] {
        assert!(schema["properties"][field]["description"].is_string(), "{field} is documented: {schema:?}");
    }

    let r = client.call_tool(call("printf 'b\\na\\n' | sort | tr a-z A-Z")).await.unwrap();
    assert_eq!(body(&r), "A\nB");

    let r = client.call_tool(call("cat nope.txt")).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("[stderr]"), "{}", text(&r));

    client.call_tool(call("mkdir -p d && cd d && V=7")).await.unwrap();
    let r = client.call_tool(call("pwd; echo $V")).await.unwrap();
    let out = body(&r);
    assert!(out.ends_with("/d\n7"), "{out}");

    let stdin =
        CallToolRequestParams::new("run").with_arguments(args(json!({"command": "tr a-z A-Z", "stdin": "shout"})));
    assert_eq!(body(&client.call_tool(stdin).await.unwrap()), "SHOUT");
}

#[tokio::test]
async fn rmcp_client_legacy_initialize() {
    let env = Env::new();
    let client = env.connect((), ClientLifecycleMode::Initialize).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("clix"));
    assert_eq!(info.server_info.as_ref().map(|i| i.version.as_str()), Some(env!("CARGO_PKG_VERSION")));
    assert!(info.protocol_version < ProtocolVersion::V_2026_07_28);
    exercise(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcp_client_server_discover() {
    let env = Env::new();
    let client = env.connect((), discover()).await;
    assert_eq!(client.peer_info().unwrap().protocol_version, ProtocolVersion::V_2026_07_28);
    exercise(&client).await;
    client.cancel().await.unwrap();
}

/// Progress notifications a client received.
#[derive(Clone, Default)]
struct Progress(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for Progress {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn cancel_stops_the_line_and_progress_is_reported() {
    let env = Env::new();
    let progress = Progress::default();
    let client = env.connect(progress.clone(), ClientLifecycleMode::Initialize).await;

    // A long line reports progress about every second (rmcp's client sends a progressToken).
    let r = client.call_tool(call("sleep 2.2; echo done")).await.unwrap();
    assert_eq!(body(&r), "done");
    let seen = progress.0.lock().unwrap().clone();
    assert!(!seen.is_empty(), "no progress notifications");
    assert!(seen.windows(2).all(|w| w[0].progress <= w[1].progress), "progress only grows: {seen:?}");

    // notifications/cancelled stops `sleep 30` at once; the next call runs right after.
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call("sleep 30")));
    let handle = client.send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    // Cancel once the line runs: its first progress notification (a token
    // the first call's did not have) says so.
    let reported = || {
        let all = progress.0.lock().unwrap();
        all.iter().any(|p| seen.iter().all(|s| s.progress_token != p.progress_token))
    };
    let waiting = Instant::now();
    while !reported() {
        assert!(waiting.elapsed() < Duration::from_secs(60), "`sleep 30` never reported progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    let r = client.call_tool(call("echo next")).await.unwrap();
    assert_eq!(body(&r), "next");
    // An ignored cancel would hold `echo next` behind `sleep 30` for most
    // of its 30 s; a generous bound well under that.
    assert!(started.elapsed() < Duration::from_secs(15), "cancel took {:?}", started.elapsed());
    client.cancel().await.unwrap();
}

#[test]
fn stdout_carries_only_mcp_and_stdin_eof_ends_the_server() {
    let env = Env::new();
    let mut child =
        env.std_command(&[]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"command": "echo to-stdout; echo to-stderr >&2; python3 -c 'print(1)' || true"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        replies.push(serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}")));
    }
    // Answers to concurrent requests may come in any order.
    replies.sort_by_key(|r| r["id"].as_u64());
    drop(stdin); // EOF
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the server did not exit on stdin EOF");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing after the replies");

    assert_eq!(replies[0]["result"]["serverInfo"]["name"], "clix");
    let result = &replies[1]["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("to-stdout\n"), "{text}");
    assert!(text.contains("[stderr] to-stderr"), "{text}");
    assert_eq!(replies[2]["error"]["code"], -32602, "unknown tool is invalid params: {}", replies[2]);
}

#[tokio::test]
async fn hub_tools_over_mcp_follow_the_domain() {
    let env = Env::new();
    let hub = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hub");
    let flags = ["--hub", hub.to_str().unwrap(), "--domain", "support"];
    let client = env.connect_with(&flags, (), ClientLifecycleMode::Initialize).await;
    let tools = client.list_all_tools().await.unwrap();
    let description = tools[0].description.as_deref().unwrap_or("");
    assert!(description.contains("ticket-info") && !description.contains("csv-query"), "{description}");
    let r = client.call_tool(call("ticket-info OPS-101 --field owner | jq -r .owner")).await.unwrap();
    assert_eq!(body(&r), "ana");
    let r = client.call_tool(call("csv-query x.csv")).await.unwrap();
    assert!(text(&r).contains("[exit:127 | "), "outside the domain: {}", text(&r));
    client.cancel().await.unwrap();
}

#[test]
fn bad_flags_fail_before_serving() {
    let env = Env::new();
    let o = env.std_command(&["--hub", "/no/such/hub"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "a missing hub folder is a hub problem, not a failed start");

    // A token on argv is in /proc/PID/cmdline for every local user.
    let o = env.std_command(&["--http", "127.0.0.1:0", "--token", "s3cret"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("--token is refused") && stderr.contains("CLIX_MCP_TOKEN"), "{stderr}");
    assert!(stderr.contains("--token-file"), "{stderr}");

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clix"));
    let o = cmd
        .args(["mcp", "--workspace", "/"])
        .env_clear()
        .env("CLIX_HOME", env.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "a refused workspace stops the server");
    assert!(o.stdout.is_empty());
}

#[test]
fn stdio_exits_cleanly_when_the_client_leaves_at_once() {
    // CLIX_MCP_TOKEN in the environment is for --http; it must not break stdio.
    let env = Env::new();
    let o = env.std_command(&[]).env("CLIX_MCP_TOKEN", "t").stdin(Stdio::null()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// `clix mcp --http 127.0.0.1:0 extra…` on `env`.
fn http_server(env: &Env, extra: &[&str]) -> HttpServer {
    HttpServer::start(&mut env.std_command(&[&["--http", "127.0.0.1:0"], extra].concat()))
}

/// The server's resident memory, in KiB.
fn rss_kib(server: &HttpServer) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

async fn http_client(url: &str) -> RunningService<RoleClient, ()> {
    // The workspace builds reqwest with rustls but no default crypto provider
    // (clix-agent brings its own); plain http still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(TOKEN);
    ().serve(StreamableHttpClientTransport::from_config(config)).await.expect("http handshake")
}

#[tokio::test]
async fn http_sessions_are_separate_and_expire_when_idle() {
    let env = Env::new();
    // Long enough that `a` stays alive while `b` connects and calls on a
    // busy machine; the wait below is three times as long.
    let server = http_server(&env, &["--idle-timeout", "5"]);
    let a = http_client(&server.url).await;
    let b = http_client(&server.url).await;
    a.call_tool(call("mkdir -p only-a && cd only-a && X=a")).await.unwrap();
    let rb = b.call_tool(call("pwd; echo \"[$X]\"")).await.unwrap();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    assert_eq!(body(&rb), format!("{}\n[]", ws.display()));
    let ra = a.call_tool(call("pwd; echo \"[$X]\"")).await.unwrap();
    assert_eq!(body(&ra), format!("{}/only-a\n[a]", ws.display()));

    // Idle past --idle-timeout: the session and its shell are gone. A fixed
    // wait: any probe of `a` would itself be activity that keeps it alive.
    tokio::time::sleep(Duration::from_secs(15)).await;
    match a.call_tool(call("pwd")).await {
        Err(_) => {}
        Ok(r) => assert!(!body(&r).ends_with("/only-a"), "an expired session kept its shell: {}", text(&r)),
    }
}

/// Issue 28, finding 5: sessions were unlimited, and each idle one kept
/// its shell and in-memory files for the idle time; enough of them took
/// the server down for everyone. Past `--max-sessions` a new one gets 503
/// and the open ones go on.
#[tokio::test]
async fn sessions_past_the_cap_are_refused_and_the_open_ones_go_on() {
    let env = Env::new();
    let server = http_server(&env, &["--max-sessions", "2"]);
    // What they may hold in all is said at start.
    assert!(
        server.said.contains("at most 2 sessions, each keeping up to 100000000 bytes of in-memory files until idle"),
        "{}",
        server.said
    );
    let a = http_client(&server.url).await;
    let b = http_client(&server.url).await;
    let (code, refusal) = server.initialize(&[AUTHORIZATION]);
    assert_eq!(code, 503, "{refusal}");
    assert!(refusal.contains("--max-sessions 2") && refusal.contains("holds 2 sessions"), "{refusal}");
    for client in [&a, &b] {
        let r = client.call_tool(call("echo still-here")).await.unwrap();
        assert_eq!(body(&r), "still-here");
    }
    // A session that ends makes room for a new one.
    a.cancel().await.unwrap();
    let c = http_client(&server.url).await;
    assert_eq!(body(&c.call_tool(call("echo room")).await.unwrap()), "room");
    b.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Reliability R5: 8 concurrent clients x 1,000 calls against one HTTP
/// server, zero errors, and the server's memory flat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_8_clients_x_1000_calls() {
    const CLIENTS: usize = 8;
    // CLIX_TEST_MCP_LOAD_CALLS=5000 makes it a longer soak (e.g. to watch RSS).
    let calls: usize = std::env::var("CLIX_TEST_MCP_LOAD_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let env = Env::new();
    let server = http_server(&env, &[]);
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let client = http_client(&server.url).await;
        // Warm-up: the session's engine exists before the first reading.
        client.call_tool(call(&format!("mkdir -p c{i} && cd c{i}"))).await.unwrap();
        clients.push(client);
    }
    let before = rss_kib(&server);
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            tokio::spawn(async move {
                let mut errors = 0;
                let mut times = Vec::with_capacity(calls);
                for n in 0..calls {
                    let line = match n % 4 {
                        0 => format!("echo {i}-{n}"),
                        1 => format!("echo {i}-{n} | tr 0-9 a-j | wc -c"),
                        2 => format!("V{n}={n}; echo $V{n}"),
                        _ => "pwd".to_owned(),
                    };
                    let t = Instant::now();
                    match client.call_tool(call(&line)).await {
                        Ok(r) if r.is_error == Some(false) => {
                            if n % 4 == 3 && !body(&r).ends_with(&format!("/c{i}")) {
                                errors += 1;
                            }
                        }
                        _ => errors += 1,
                    }
                    times.push(t.elapsed());
                }
                client.cancel().await.unwrap();
                (errors, times)
            })
        })
        .collect();
    let mut errors = 0;
    let mut times = Vec::new();
    for task in tasks {
        let (e, t) = task.await.unwrap();
        errors += e;
        times.extend(t);
    }
    let wall = started.elapsed();
    let after = rss_kib(&server);
    times.sort();
    println!(
        "load: {CLIENTS} clients x {calls} calls in {:.2}s ({:.0} calls/s), errors {errors}, \
         p50 {:?}, p99 {:?}, server RSS before {} KiB, after {} KiB",
        wall.as_secs_f64(),
        (CLIENTS * calls) as f64 / wall.as_secs_f64(),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        before,
        after,
    );
    assert_eq!(errors, 0);
    assert!(after < before + 64 * 1024, "server RSS grew from {before} KiB to {after} KiB");
}

/// p50 / p99 of `run echo hi` over stdio, from rmcp's client.
#[tokio::test]
#[ignore = "benchmark: cargo test --release -p clix --test mcp_rmcp -- --ignored --nocapture"]
async fn bench_stdio_round_trip() {
    let env = Env::new();
    for (name, lifecycle) in [("initialize", ClientLifecycleMode::Initialize), ("discover", discover())] {
        let client = env.connect((), lifecycle).await;
        for _ in 0..200 {
            client.call_tool(call("echo hi")).await.unwrap();
        }
        let mut times = Vec::with_capacity(5000);
        for _ in 0..5000 {
            let t = Instant::now();
            let r = client.call_tool(call("echo hi")).await.unwrap();
            times.push(t.elapsed());
            assert_eq!(r.is_error, Some(false));
        }
        times.sort();
        println!(
            "stdio {name}: run echo hi x{}: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
            times.len(),
            percentile(&times, 0.5),
            percentile(&times, 0.9),
            percentile(&times, 0.99),
            times[times.len() - 1]
        );
        client.cancel().await.unwrap();
    }
}
