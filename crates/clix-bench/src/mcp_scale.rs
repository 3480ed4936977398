//! MCP replicas behind nginx (issue 32): throughput and per-call latency of
//! `clix mcp --http` served five ways, side by side in one run, by the same
//! client:
//!
//! - one replica direct on the embedded SQLite store (the default);
//! - one replica direct on PostgreSQL (`r1`);
//! - the same replica through nginx (what nginx alone costs);
//! - two replicas (`--route r1`, `--route r2`) on one PostgreSQL store
//!   behind nginx, with docs/scale-out.md's configuration;
//! - the same with `keepalive` in nginx's upstreams (without it nginx opens
//!   a new connection to the replica for every request).
//!
//! N concurrent sessions (8 and 32 by default) each make M `run` calls of
//! one line: a cheap one (`echo hi | wc -c`) or one that reads the memory
//! store (`memory search deploy`, over memories seeded the same way in both
//! stores). Rounds take turns over the setups, so drift in the machine's
//! speed hits all alike; every answer is checked.
//!
//! The client is plain JSON-RPC over reqwest (the `Mcp-Session-Id` header,
//! a single-threaded runtime), identical for every setup. Like the official
//! Python and Rust SDK clients it opens a new connection for each request
//! (the Python SDK made 34 for 30 calls, rmcp's load test about 7,500 for 8,000); `--keep-alive` reuses them
//! instead, which today meets a 40 ms stall on every call: the replica
//! writes the SSE priming event and the answer separately without
//! TCP_NODELAY, and the client delays its ACK (Nagle's algorithm).
//!
//! `clix-bench mcp-scale [M] [--clix PATH] [--sessions 8,32] [--rounds R] [--keep-alive]`
//!
//! Every process started here ends with the run: the replicas get SIGKILL
//! when this process dies (`PR_SET_PDEATHSIG`), and nginx and PostgreSQL
//! are clix-testkit's, whose watchdogs stop them and remove their folders.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use clix_testkit::{Nginx, Postgres, clix_command, nginx, postgres};
use serde_json::{Value, json};

use crate::{fmt, stats};

/// The bearer token of every replica.
const TOKEN: &str = "bench-token-5d2e";
/// Memories seeded into each store; every third mentions a deploy.
const SEEDED: usize = 150;
/// The two workloads: the line, and what its output must hold.
const WORKLOADS: [(&str, &str); 2] = [("echo hi | wc -c", "3"), ("memory search deploy", "deploy")];

/// What `clix-bench mcp-scale` was asked for.
struct Options {
    calls: usize,
    clix: PathBuf,
    sessions: Vec<usize>,
    rounds: usize,
    keep_alive: bool,
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let mut o = Options { calls: 100, clix: PathBuf::new(), sessions: vec![8, 32], rounds: 3, keep_alive: false };
        let mut clix = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().cloned().unwrap_or_else(|| panic!("{arg} needs a value"));
            match arg.as_str() {
                "--clix" => clix = Some(PathBuf::from(value())),
                "--keep-alive" => o.keep_alive = true,
                "--rounds" => o.rounds = value().parse().expect("--rounds R"),
                "--sessions" => {
                    o.sessions = value().split(',').map(|n| n.trim().parse().expect("--sessions 8,32")).collect();
                }
                number => o.calls = number.parse().unwrap_or_else(|_| panic!("not an option nor a count: {number}")),
            }
        }
        assert!(o.calls > 0 && o.rounds > 0 && o.sessions.iter().all(|&n| n > 0), "counts must be at least 1");
        o.clix = clix.unwrap_or_else(crate::clix_binary);
        o
    }
}

pub(crate) fn mcp_scale(args: &[String]) {
    let options = Options::parse(args);
    if nginx::binary().is_none() || postgres::pgserver_dir().is_none() {
        let missing = if nginx::binary().is_none() { nginx::MISSING } else { postgres::MISSING };
        println!("\nmcp-scale skipped: {missing}");
        return;
    }
    let pg = Postgres::start();
    let url = pg.database();
    let ws = tempfile::tempdir().expect("workspace");
    let admin = tempfile::tempdir().expect("home");
    let out = clix_command(&options.clix, admin.path(), ws.path(), &["storage", "migrate"])
        .env("CLIX_STORAGE_URL", &url)
        .output()
        .expect("clix storage migrate runs");
    assert!(out.status.success(), "clix storage migrate: {}", String::from_utf8_lossy(&out.stderr));

    let sqlite = Replica::start(&options.clix, ws.path(), None, None);
    let r1 = Replica::start(&options.clix, ws.path(), Some(&url), Some("r1"));
    let r2 = Replica::start(&options.clix, ws.path(), Some(&url), Some("r2"));
    let one = start_nginx(&[&r1.addr], None);
    let two = start_nginx(&[&r1.addr, &r2.addr], None);
    let two_keepalive = start_nginx(&[&r1.addr, &r2.addr], Some(64));
    let setups = [
        ("1 replica direct, SQLite", sqlite.url()),
        ("1 replica direct, PostgreSQL", r1.url()),
        ("1 replica via nginx", one.url("/mcp")),
        ("2 replicas via nginx", two.url("/mcp")),
        ("2 replicas via nginx, upstream keepalive", two_keepalive.url("/mcp")),
    ];

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // The workspace builds reqwest with rustls but no default crypto
    // provider; plain http still needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut http = reqwest::Client::builder().timeout(Duration::from_secs(120));
    if !options.keep_alive {
        // No idle connection is kept: each request opens its own.
        http = http.pool_max_idle_per_host(0);
    }
    let http = http.build().expect("an HTTP client");
    // Both stores get the same memories (r1 and r2 share theirs).
    for store in [sqlite.url(), r1.url()] {
        runtime.block_on(seed(&http, &store));
    }

    println!(
        "\nMCP `run` throughput, {} calls per session, {} rounds taking turns over the setups, {}; {}",
        options.calls,
        options.rounds,
        if options.keep_alive { "connections kept alive" } else { "a new connection per request" },
        crate::machine_load()
    );
    let mut results: BTreeMap<(usize, usize, usize), Measured> = BTreeMap::new();
    for _ in 0..options.rounds {
        for (w, (line, expect)) in WORKLOADS.iter().enumerate() {
            for (s, &sessions) in options.sessions.iter().enumerate() {
                for (k, (_, url)) in setups.iter().enumerate() {
                    let phase = runtime.block_on(phase(&http, url, sessions, options.calls, line, expect));
                    results.entry((w, s, k)).or_default().add(phase);
                }
            }
        }
    }

    println!("\n| line | sessions | setup | calls/s (rounds' range) | p50 | p95 | sessions r1 / r2 |");
    println!("|---|---|---|---|---|---|---|");
    for ((w, s, k), m) in &results {
        let all = stats(m.latencies.clone());
        let (r1s, r2s) = m.routes;
        let routes = if r1s + r2s > 0 { format!("{r1s} / {r2s}") } else { "-".into() };
        println!(
            "| `{}` | {} | {} | {:.0} ({:.0}–{:.0}) | {} | {} | {routes} |",
            WORKLOADS[*w].0,
            options.sessions[*s],
            setups[*k].0,
            m.calls as f64 / m.wall.as_secs_f64(),
            m.min_rate,
            m.max_rate,
            fmt(all.p50),
            fmt(all.p95),
        );
    }
    println!("\nat the end: {}", crate::machine_load());
}

/// One setup's figures for one line and session count, summed over rounds.
#[derive(Default)]
struct Measured {
    calls: usize,
    wall: Duration,
    latencies: Vec<Duration>,
    min_rate: f64,
    max_rate: f64,
    /// Sessions opened on r1 and on r2 (by their ids' suffix).
    routes: (usize, usize),
}

impl Measured {
    fn add(&mut self, phase: Phase) {
        let rate = phase.latencies.len() as f64 / phase.wall.as_secs_f64();
        if self.calls == 0 {
            (self.min_rate, self.max_rate) = (rate, rate);
        }
        self.min_rate = self.min_rate.min(rate);
        self.max_rate = self.max_rate.max(rate);
        self.calls += phase.latencies.len();
        self.wall += phase.wall;
        self.latencies.extend(phase.latencies);
        self.routes.0 += phase.routes.0;
        self.routes.1 += phase.routes.1;
    }
}

/// One timed run: N sessions making M calls each at once.
struct Phase {
    wall: Duration,
    latencies: Vec<Duration>,
    routes: (usize, usize),
}

/// Opens `sessions` sessions on `url` (each makes one call, untimed, so its
/// engine exists), then times them making `calls` calls of `line` each at
/// once, and closes them.
async fn phase(http: &reqwest::Client, url: &str, sessions: usize, calls: usize, line: &str, expect: &str) -> Phase {
    let mut opened = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let mut session = McpSession::open(http, url).await;
        session.run_checked(line, expect).await;
        opened.push(session);
    }
    let routes = (
        opened.iter().filter(|s| s.id.ends_with(".r1")).count(),
        opened.iter().filter(|s| s.id.ends_with(".r2")).count(),
    );
    let started = Instant::now();
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut session| {
            let (line, expect) = (line.to_string(), expect.to_string());
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    let t = Instant::now();
                    session.run_checked(&line, &expect).await;
                    times.push(t.elapsed());
                }
                (session, times)
            })
        })
        .collect();
    let mut finished = Vec::with_capacity(sessions);
    for task in tasks {
        finished.push(task.await.expect("a session's calls"));
    }
    let wall = started.elapsed();
    let mut latencies = Vec::with_capacity(sessions * calls);
    for (session, times) in finished {
        latencies.extend(times);
        session.close().await;
    }
    Phase { wall, latencies, routes }
}

/// Stores [`SEEDED`] memories through one session on `url`.
async fn seed(http: &reqwest::Client, url: &str) {
    let mut session = McpSession::open(http, url).await;
    for i in 0..SEEDED {
        let text = if i % 3 == 0 {
            format!("deploy {i}: the release goes out from the staging host after the smoke tests")
        } else {
            format!("note {i}: the build cache lives on the second disk and is cleaned weekly")
        };
        session.run_checked(&format!("memory store '{text}'"), "stored #").await;
    }
    session.close().await;
}

/// One MCP session over streamable HTTP, as bare JSON-RPC posts.
struct McpSession {
    http: reqwest::Client,
    url: String,
    id: String,
    next: u64,
}

impl McpSession {
    /// `initialize`, then `notifications/initialized`.
    async fn open(http: &reqwest::Client, url: &str) -> McpSession {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "clix-bench", "version": "0"}}});
        let response = post(http, url, None, &init).await;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("initialize at {url}: no session id ({})", response.status()))
            .to_string();
        let answer = reply(response, 0).await;
        assert!(answer.get("result").is_some(), "initialize at {url}: {answer}");
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post(http, url, Some(&id), &done).await;
        assert_eq!(response.status(), 202, "notifications/initialized at {url}");
        McpSession { http: http.clone(), url: url.to_string(), id, next: 1 }
    }

    /// One `run` call; panics unless it exited 0 with `expect` in its output.
    async fn run_checked(&mut self, line: &str, expect: &str) {
        let id = self.next;
        self.next += 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run", "arguments": {"command": line}}});
        let answer = reply(post(&self.http, &self.url, Some(&self.id), &call).await, id).await;
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            result["isError"] == false && result["structuredContent"]["exit_code"] == 0 && text.contains(expect),
            "`{line}` in session {}: {answer}",
            self.id
        );
    }

    /// Ends the session (DELETE), so the replica drops its engine.
    async fn close(self) {
        let response = self
            .http
            .delete(&self.url)
            .bearer_auth(TOKEN)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .expect("DELETE reaches the server");
        assert!(response.status().is_success(), "closing {}: {}", self.id, response.status());
    }
}

async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-06-18");
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("POST {url}: {e}"));
    assert!(response.status().is_success(), "POST {url}: {}", response.status());
    response
}

/// The JSON-RPC answer with `id`, from a JSON body or an event stream
/// (which ends once the answer is sent).
async fn reply(response: reqwest::Response, id: u64) -> Value {
    let body = response.text().await.expect("the answer's body");
    let answer = |text: &str| serde_json::from_str::<Value>(text).ok().filter(|v| v["id"] == id);
    if let Some(v) = answer(body.trim()) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|data| answer(data.trim()))
        .unwrap_or_else(|| panic!("no answer to request {id} in: {body}"))
}

/// A `clix mcp --http` process, killed when dropped.
struct Replica {
    child: Child,
    addr: String,
    /// Its CLIX_HOME, removed after it ends.
    _home: tempfile::TempDir,
}

impl Replica {
    /// `clix mcp --http 127.0.0.1:0` on `ws`, on the store at `storage` (the
    /// embedded one without), with `--route NAME`; returns once it serves.
    fn start(clix: &Path, ws: &Path, storage: Option<&str>, route: Option<&str>) -> Replica {
        let home = tempfile::tempdir().expect("home");
        let mut args = vec!["mcp", "--http", "127.0.0.1:0", "--max-sessions", "256"];
        if let Some(route) = route {
            args.extend(["--route", route]);
        }
        let mut cmd = clix_command(clix, home.path(), ws, &args);
        cmd.env("CLIX_MCP_TOKEN", TOKEN);
        if let Some(url) = storage {
            cmd.env("CLIX_STORAGE_URL", url);
        }
        // Passed on, so a change to how the replicas' sockets behave can be
        // tried without a rebuild (a shim that sets TCP_NODELAY, say).
        if let Some(preload) = std::env::var_os("LD_PRELOAD") {
            cmd.env("LD_PRELOAD", preload);
        }
        // SAFETY: prctl is async-signal-safe and only touches the child: it
        // dies with this process, however that ends.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("clix mcp starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("its stderr"));
        let mut first = String::new();
        stderr.read_line(&mut first).expect("clix mcp says where it serves");
        let Some(url) = first.trim().strip_prefix("clix mcp: serving ") else {
            let _ = child.kill();
            panic!("clix mcp did not serve: {first}");
        };
        let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        // The rest of what it says is drained, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Replica { child, addr, _home: home }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The replicas behind a new nginx, as docs/scale-out.md configures it.
fn start_nginx(replicas: &[&str], keepalive: Option<u32>) -> Nginx {
    let port = clix_testkit::free_port();
    Nginx::start(port, &clix_testkit::nginx::replicas_config(port, replicas, keepalive))
}
