//! A real MCP server (tests/fixtures/server.py, the official Python SDK's
//! MCPServer) as a command: over stdio in real bubblewrap, and over
//! streamable HTTP on a loopback port.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use clix_mcp_client::{CallResult, McpSettings, Prepared, ServerEntry, Servers};
use clix_sandbox::{Sandbox, SandboxSettings};

/// clix's home for the whole test binary: a temp dir, never the person's.
fn clix_home() {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: set once, before any sandbox of this binary reads it.
        unsafe { std::env::set_var("CLIX_HOME", dir.path()) };
        dir
    });
}

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    servers: Servers,
}

fn fixture(entries: Vec<ServerEntry>) -> Fixture {
    clix_home();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let sandbox = Arc::new(Sandbox::new(SandboxSettings::default(), &ws, None, None, "mcp-test".into()));
    let settings = McpSettings { server: entries };
    let servers = Servers::new(&settings, sandbox, &ws).with_start_timeout(Duration::from_secs(60));
    Fixture { _dir: dir, ws, servers }
}

/// The fixture over stdio, `marker` on its command line so a test can find its process.
fn stdio_entry(name: &str, marker: &str) -> ServerEntry {
    ServerEntry::stdio(name, "python3", &[&clix_testkit::mcp_server_script(), "stdio", marker])
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

async fn run(f: &Fixture, server: &str, line: &str) -> CallResult {
    f.servers.run(server, &words(line)).await
}

fn out(r: &CallResult) -> String {
    String::from_utf8_lossy(&r.stdout).into_owned()
}

fn err(r: &CallResult) -> String {
    String::from_utf8_lossy(&r.stderr).into_owned()
}

/// Every kind of result, the help levels and the checks of the flags,
/// against the real server in the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_in_the_sandbox_is_a_command() {
    if !clix_testkit::mcp_ready("a_stdio_server_in_the_sandbox_is_a_command") {
        return;
    }
    // SAFETY: this test alone reads these variables.
    unsafe {
        std::env::set_var("CLIX_TEST_MCP_GREETING", "hello");
        std::env::set_var("CLIX_TEST_MCP_NOT_PASSED", "hidden");
    }
    let marker = format!("results-{}", std::process::id());
    let mut entry = stdio_entry("fx", &marker);
    entry.env = vec!["CLIX_TEST_MCP_GREETING".into()];
    let f = fixture(vec![entry]);

    // Level 1: the tools, one line each.
    for line in ["", "--help", "help"] {
        let r = run(&f, "fx", line).await;
        assert_eq!(r.exit_code, 0, "{}", err(&r));
        let text = out(&r);
        for tool in ["list_records", "fail", "refuse", "image", "paint", "nested", "crash", "where"] {
            assert!(text.lines().any(|l| l.trim_start().starts_with(tool)), "{tool} in {text}");
        }
        assert!(text.contains("Lists records as structured content."), "{text}");
    }
    // Level 2: a tool's parameters.
    let r = run(&f, "fx", "paint --help").await;
    let help = out(&r);
    assert_eq!(r.exit_code, 0);
    let usage =
        "usage: fx paint --color <red|green|blue> --tags <string>... [--loud] [--ratio <number>] [--times <integer>]";
    assert!(help.contains(usage), "{help}");
    assert!(help.contains("--color <red|green|blue>  one of red, green, blue, required"), "{help}");
    assert!(help.contains("--times <integer>         integer, default 1"), "{help}");
    assert!(help.contains("--loud                    boolean flag, default false"), "{help}");

    // Structured content: JSON on stdout, all 200 records.
    let r = run(&f, "fx", "list_records").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), 200);
    assert_eq!(records[199]["name"], "record-199");
    let r = run(&f, "fx", "list_records --count 3").await;
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(json["records"].as_array().unwrap().len(), 3);

    // Text, with an enum, a repeated flag, numbers and a boolean.
    let r = run(&f, "fx", "paint --color green --tags a --tags b --times 3 --ratio 0.25 --loud").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    // MCPServer sends a `str` result both as text and as {"result": …}: the structured one is printed.
    let shown = out(&r);
    assert!(shown.contains("GREEN x3 ratio=0.25 tags=a,b"), "{shown}");
    // --json for a nested object, flags on top.
    let r = f
        .servers
        .run("fx", &words_with_json("nested --label L --json", r#"{"options": {"k": 1}, "label": "x"}"#))
        .await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    assert!(out(&r).contains("L: [('k', 1)]"), "{}", out(&r));

    // isError: exit 1, its text on stderr.
    let r = run(&f, "fx", "fail --message boom").await;
    assert_eq!(r.exit_code, 1);
    assert!(r.stdout.is_empty());
    assert!(err(&r).contains("failed on purpose: boom"), "{}", err(&r));

    // A protocol error: exit 1 with the server's message; the server stays.
    let before = clix_testkit::pids_with_cmdline(&marker);
    assert!(!before.is_empty(), "its process runs");
    let r = run(&f, "fx", "refuse").await;
    assert_eq!(r.exit_code, 1);
    assert!(
        err(&r).contains("fx refuse: the MCP server refused the call: refused on purpose (code -32602)"),
        "{}",
        err(&r)
    );
    assert_eq!(clix_testkit::pids_with_cmdline(&marker), before, "the same server process");

    // An image, decoded, apart from the text.
    let r = run(&f, "fx", "image").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.images[0].mime, "image/png");
    assert!(r.images[0].data.starts_with(b"\x89PNG\r\n\x1a\n"));

    // Usage errors, exit 2, before anything is sent.
    let usage = [
        ("paint --color purple --tags a", "--color: `purple` is not one of: red, green, blue"),
        ("paint --tags a", "missing required --color"),
        ("paint --color red --tags a --times 1.5", "--times: expected an integer, got `1.5`"),
        ("paint --color red --tags a --colr red", "unknown parameter --colr (did you mean --color?)"),
        ("paitn", "no tool `paitn`; did you mean `fx paint`?"),
        // A flag where the tool belongs, or a name far from any: the list.
        ("--region EU", "a tool's name comes first, then its flags. fx: an MCP server's tools"),
        ("totally_unknown", "no tool `totally_unknown`; fx: an MCP server's tools"),
    ];
    for (line, want) in usage {
        let r = run(&f, "fx", line).await;
        assert_eq!(r.exit_code, 2, "{line}: {}", err(&r));
        assert!(err(&r).contains(want), "{line}: {}", err(&r));
        if !want.contains("did you mean") && want.contains("no tool") || line.starts_with('-') {
            assert!(err(&r).contains("  paint ") && err(&r).contains("  list_records "), "{line}: {}", err(&r));
        }
    }
    let r = run(&f, "fx", "paint --tags a").await;
    assert!(err(&r).contains("usage: fx paint --color"), "{}", err(&r));

    // The workspace is its folder; of clix's variables, only those its `env` names pass.
    let r = run(&f, "fx", "where").await;
    let shown = out(&r);
    assert!(shown.contains(&f.ws.display().to_string()), "{shown}");
    assert!(shown.contains("CLIX_TEST_MCP_GREETING=hello CLIX_TEST_MCP_NOT_PASSED=-"), "{shown}");
}

fn words_with_json(line: &str, json: &str) -> Vec<String> {
    let mut w = words(line);
    w.push(json.into());
    w
}

/// A call the engine governs: prepared with its server, tool and arguments, then made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_call_names_its_server_tool_and_arguments() {
    if !clix_testkit::mcp_ready("a_prepared_call_names_its_server_tool_and_arguments") {
        return;
    }
    let f = fixture(vec![stdio_entry("fx", "prepared")]);
    let Prepared::Call(call) = f.servers.prepare("fx", &words("paint --color red --tags x --times 2")).await else {
        panic!("a call");
    };
    assert_eq!((call.server.as_str(), call.tool.as_str()), ("fx", "paint"));
    let args: serde_json::Value = serde_json::from_str(&call.arguments_json()).unwrap();
    assert_eq!(args, serde_json::json!({"color": "red", "tags": ["x"], "times": 2}));
    let r = f.servers.call(&call).await;
    assert!(out(&r).contains("red x2"), "{}", out(&r));
    let Prepared::Done(help) = f.servers.prepare("fx", &words("paint -h")).await else { panic!("help") };
    assert!(out(&help).starts_with("fx paint: Paints with a color"), "{}", out(&help));
}

/// A server that ends mid-call: a clear error with its stderr, and the
/// next call starts it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_reported_and_the_next_call_restarts_it() {
    if !clix_testkit::mcp_ready("a_crash_mid_call_is_reported_and_the_next_call_restarts_it") {
        return;
    }
    let f = fixture(vec![stdio_entry("fx", "crash")]);
    let r = run(&f, "fx", "crash").await;
    assert_eq!(r.exit_code, 1);
    let e = err(&r);
    assert!(e.contains("fx crash: the MCP server failed during the call"), "{e}");
    assert!(e.contains("fixture: crashing on purpose"), "its stderr: {e}");
    assert!(e.contains("The next call starts it again"), "{e}");
    let r = run(&f, "fx", "list_records --count 1").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    assert!(out(&r).contains("record-0"));
}

/// Security round 4: a reply over 16 MiB was dropped by rmcp, and the call
/// waited out the line's time limit. It fails at once, saying why, and the
/// next call starts the server again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_past_the_message_limit_fails_at_once() {
    if !clix_testkit::mcp_ready("a_reply_past_the_message_limit_fails_at_once") {
        return;
    }
    let f = fixture(vec![stdio_entry("fx", "list_records")]);
    // About 30 MB of records, twice over (structured and as text).
    let call = run(&f, "fx", "list_records --count 400000");
    let r = tokio::time::timeout(Duration::from_secs(120), call).await.expect("the call ends without a time limit");
    assert_eq!(r.exit_code, 1, "{}", out(&r));
    let e = err(&r);
    assert!(e.contains("fx list_records: the MCP server failed during the call: its reply passed 16 MiB"), "{e}");
    let r = run(&f, "fx", "list_records --count 1").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
}

/// A server that cannot start: what failed, its stderr, what to check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_gets_a_navigating_error() {
    if !clix_testkit::mcp_ready("a_server_that_fails_to_start_gets_a_navigating_error") {
        return;
    }
    let mut broken = ServerEntry::stdio("broken", "python3", &[&clix_testkit::mcp_server_script(), "fail"]);
    broken.env = vec!["CLIX_TEST_MCP_UNSET_VARIABLE".into()];
    let f = fixture(vec![broken, ServerEntry::stdio("nothing", "no-such-program-here", &[])]);
    let r = run(&f, "broken", "list_records").await;
    assert_eq!(r.exit_code, 1);
    let e = err(&r);
    assert!(e.starts_with("broken: the MCP server did not start:"), "{e}");
    assert!(e.contains("it exited with 4"), "{e}");
    assert!(e.contains("fixture: cannot start: the database is unreachable"), "the stderr tail: {e}");
    assert!(e.contains("network off"), "{e}");
    assert!(e.contains("not set in clix's environment: CLIX_TEST_MCP_UNSET_VARIABLE"), "{e}");
    assert!(e.contains("check:"), "{e}");
    let r = run(&f, "nothing", "").await;
    assert_eq!(r.exit_code, 1);
    assert!(err(&r).starts_with("nothing: the MCP server did not start:"), "{}", err(&r));
}

/// Nothing of a stdio server outlives the handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_process_is_left_after_the_handle_drops() {
    if !clix_testkit::mcp_ready("no_server_process_is_left_after_the_handle_drops") {
        return;
    }
    let marker = format!("gone-after-drop-{}", std::process::id());
    let f = fixture(vec![stdio_entry("fx", &marker)]);
    assert_eq!(run(&f, "fx", "list_records --count 1").await.exit_code, 0);
    assert!(!clix_testkit::pids_with_cmdline(&marker).is_empty(), "the server runs while the handle lives");
    drop(f);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !clix_testkit::pids_with_cmdline(&marker).is_empty() {
        assert!(Instant::now() < deadline, "still running: {:?}", clix_testkit::pids_with_cmdline(&marker));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A child that a failed assertion does not leave running.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same server over streamable HTTP on a loopback port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_the_same_command() {
    if !clix_testkit::mcp_ready("an_http_server_is_the_same_command") {
        return;
    }
    let port = clix_testkit::free_port();
    let mut child = Killed(
        std::process::Command::new("python3")
            .args([&clix_testkit::mcp_server_script(), "http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut entry = ServerEntry::http("web", &format!("http://127.0.0.1:{port}/mcp"));
    entry.headers.insert("X-Clix-Test".into(), "${CLIX_TEST_MCP_HEADER}".into());
    let f = fixture(vec![entry]);
    // A header's variable that is not set: the error names it.
    let r = run(&f, "web", "").await;
    assert_eq!(r.exit_code, 1);
    assert!(err(&r).contains("needs ${CLIX_TEST_MCP_HEADER}, which is not set"), "{}", err(&r));
    // SAFETY: this test alone reads the variable.
    unsafe { std::env::set_var("CLIX_TEST_MCP_HEADER", "from-the-environment") };
    let r = run(&f, "web", "list_records --count 5").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(json["records"].as_array().unwrap().len(), 5);
    let r = run(&f, "web", "fail --message over-http").await;
    assert_eq!((r.exit_code, err(&r).contains("failed on purpose: over-http")), (1, true), "{}", err(&r));
    let r = run(&f, "web", "image").await;
    assert_eq!(r.images.len(), 1);
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // The server is gone: the call says where it failed.
    let r = run(&f, "web", "list_records --count 1").await;
    assert_eq!(r.exit_code, 1);
    assert!(err(&r).contains("web list_records: the MCP server failed during the call"), "{}", err(&r));
}

/// An imported Claude Desktop entry runs as it is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_entry_runs() {
    if !clix_testkit::mcp_ready("an_imported_entry_runs") {
        return;
    }
    let file =
        include_str!("fixtures/claude_desktop_config.json").replace("FIXTURE", &clix_testkit::mcp_server_script());
    let imported = clix_mcp_client::import(&file, &[]).unwrap();
    let fx = imported.servers.into_iter().find(|s| s.name == "fx").unwrap();
    let f = fixture(vec![fx]);
    let r = run(&f, "fx", "list_records --count 2").await;
    assert_eq!(r.exit_code, 0, "{}", err(&r));
    assert!(out(&r).contains("record-1"), "{}", out(&r));
}

/// Not a test of its own: the "clix" the test below kills (ignored in a
/// normal run, started with `--ignored --exact child_holding_a_server`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a child process of no_server_process_is_left_after_clix_is_killed"]
async fn child_holding_a_server() {
    let marker =
        std::env::var("CLIX_TEST_MCP_CHILD_MARKER").expect("started by a test, with CLIX_TEST_MCP_CHILD_MARKER set");
    let f = fixture(vec![stdio_entry("fx", &marker)]);
    assert_eq!(run(&f, "fx", "list_records --count 1").await.exit_code, 0);
    println!("server started");
    tokio::time::sleep(Duration::from_secs(600)).await;
}

/// A killed clix takes its servers with it (bwrap's `--die-with-parent`).
#[test]
fn no_server_process_is_left_after_clix_is_killed() {
    if !clix_testkit::mcp_ready("no_server_process_is_left_after_clix_is_killed") {
        return;
    }
    use std::io::{BufRead, BufReader};
    let marker = format!("gone-after-kill-{}", std::process::id());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_holding_a_server", "--nocapture", "--test-threads=1"])
        .env("CLIX_TEST_MCP_CHILD_MARKER", &marker)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = lines.map_while(Result::ok).any(|l| l.contains("server started"));
    assert!(started, "the child started its server");
    assert!(!clix_testkit::pids_with_cmdline(&marker).is_empty(), "the server runs while its clix lives");
    child.kill().unwrap(); // SIGKILL: nothing of clix's own runs after it
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !clix_testkit::pids_with_cmdline(&marker).is_empty() {
        assert!(Instant::now() < deadline, "still running: {:?}", clix_testkit::pids_with_cmdline(&marker));
        std::thread::sleep(Duration::from_millis(50));
    }
}
