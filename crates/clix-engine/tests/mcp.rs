//! MCP servers through the engine: the real fixture server (the Python
//! SDK's MCPServer, clix-mcp-client's tests/fixtures/server.py) over stdio
//! in real bubblewrap, as a command in pipes, under the policy gate, audited,
//! rate-limited and serialized, scoped by domain, searched (`mcp search`,
//! its tool lists kept between sessions), and gone with the engine.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::Arc;
use std::time::{Duration, Instant};

use clix_engine::{Engine, EngineConfig, OsTier, PolicyConfig, SandboxSettings};
use clix_hub::{Governance, McpCallRecord};
use clix_mcp_client::{McpConfig, McpSettings, ServerEntry};
use clix_policy::{Origin, RuleFile, Scope};

mod support;
use support::{Dirs, run};

/// The fixture over stdio, `marker` on its command line so a test can find its process.
fn server(name: &str, marker: &str) -> ServerEntry {
    let mut entry = ServerEntry::stdio(name, "python3", &[&clix_testkit::mcp_server_script(), "stdio", marker]);
    entry.description = format!("{name}: records, paints and images");
    entry
}

/// An engine's MCP part over [`Dirs`]: its audit lines and the engine.
trait McpDirs {
    fn calls(&self) -> Vec<McpCallRecord>;
    fn mcp_config(&self, servers: Vec<ServerEntry>, domains: &[&str], policy: Option<PolicyConfig>) -> EngineConfig;
    async fn engine(&self, servers: Vec<ServerEntry>) -> Engine;
}

impl McpDirs for Dirs {
    fn calls(&self) -> Vec<McpCallRecord> {
        self.audit_log().read::<McpCallRecord>().unwrap().into_iter().map(|e| e.record).collect()
    }

    fn mcp_config(&self, servers: Vec<ServerEntry>, domains: &[&str], policy: Option<PolicyConfig>) -> EngineConfig {
        let os = self.os_tier(SandboxSettings::default(), "mcp-test");
        EngineConfig {
            os: Some(OsTier { clix_config_dir: Some(self.state.path().to_path_buf()), ..os }),
            capabilities: vec![Arc::new(McpConfig {
                settings: McpSettings { server: servers },
                domains: domains.iter().map(|d| d.to_string()).collect(),
                vars: Arc::new(|_| None),
                audit_log: Some(self.audit_log()),
                session_id: "mcp-test".into(),
                governance: Governance::new(self.state.path().to_path_buf(), None),
                tool_cache: Some(self.state.path().join("mcp-tools")),
            })],
            policy,
            ..self.config()
        }
    }

    async fn engine(&self, servers: Vec<ServerEntry>) -> Engine {
        Engine::new(self.mcp_config(servers, &[], None)).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_is_a_command_with_help_levels_in_pipes_and_audited() {
    if !clix_testkit::mcp_ready("a_server_is_a_command_with_help_levels_in_pipes_and_audited") {
        return;
    }
    let f = Dirs::new();
    let mut engine = f.engine(vec![server("fx", "engine-pipes")]).await;

    // The run tool names the server and its description; its tools are
    // not known before it first runs (no kept list), so none is named.
    let description = clix_engine::tool_description(engine.catalog());
    assert!(description.contains("MCP servers (each a command"), "{description}");
    assert!(description.contains("  fx  fx: records, paints and images"), "{description}");
    assert!(!description.contains("list_records"), "{description}");

    // Level 1: the tools, one line each, from `fx` and `fx --help` alike.
    for line in ["fx", "fx --help"] {
        let (out, err, code) = run(&mut engine, line).await;
        assert_eq!(code, 0, "{line}: {err}");
        assert!(out.contains("  list_records  Lists records as structured content."), "{line}: {out}");
        assert!(out.contains("  paint ") && out.contains("`fx TOOL --help`"), "{line}: {out}");
    }
    // Level 2: a tool's flags. `help fx` says how to reach both.
    let (out, _, code) = run(&mut engine, "fx paint --help").await;
    assert_eq!(code, 0);
    assert!(out.contains("usage: fx paint --color <red|green|blue> --tags <string>..."), "{out}");
    // A tool with structured output says the result's shape.
    let (out, _, code) = run(&mut engine, "fx list_records --help").await;
    assert_eq!(code, 0);
    assert!(out.contains("output (JSON): {records:[{id,name,status}]}\n"), "{out}");
    let (out, _, code) = run(&mut engine, "help fx").await;
    assert_eq!(code, 0);
    assert!(out.starts_with("fx - fx: records, paints and images") && out.contains("fx <tool> --help"), "{out}");

    // Structured content is JSON for jq; the whole line composes.
    let line = "fx list_records --count 200 | jq -r '.records[] | select(.status == \"open\") | .name' | wc -l";
    let (out, err, code) = run(&mut engine, line).await;
    assert_eq!((out.trim(), code), ("67", 0), "{err}");
    let (out, _, code) =
        run(&mut engine, "fx paint --color green --tags a --tags b --times 3 | jq -r .result | tr a-z A-Z").await;
    assert_eq!((out.as_str(), code), ("GREEN X3 RATIO=0.5 TAGS=A,B\n", 0));

    // A tool's error: exit 1, its text on stderr, and `||` sees it.
    let (out, err, code) = run(&mut engine, "fx fail --message boom").await;
    assert_eq!((out.as_str(), code), ("", 1));
    assert!(err.contains("failed on purpose: boom"), "{err}");
    let (out, _, code) = run(&mut engine, "fx fail --message again || echo handled").await;
    assert_eq!((out.as_str(), code), ("handled\n", 0));
    // A usage error is the crate's exit 2 with the allowed values, and no call.
    let (_, err, code) = run(&mut engine, "fx paint --color purple --tags a").await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("red, green, blue"), "{err}");

    // An image is attached for the model, as `see` attaches one.
    let shown = engine.run("fx image", None).await;
    assert_eq!(shown.exit_code, 0, "{}", shown.text);
    assert_eq!(shown.images.len(), 1, "{}", shown.text);
    assert_eq!((shown.images[0].mime.as_str(), shown.images[0].width, shown.images[0].height), ("image/png", 1, 1));
    assert!(shown.text.contains("[fx image 1: PNG 1x1, attached for viewing]"), "{}", shown.text);

    // One audit line per call made (help and usage errors are not calls).
    let calls = f.calls();
    let made: Vec<(&str, &str, i32)> =
        calls.iter().map(|c| (c.server.as_str(), c.tool.as_str(), c.exit_code)).collect();
    assert_eq!(
        made,
        [("fx", "list_records", 0), ("fx", "paint", 0), ("fx", "fail", 1), ("fx", "fail", 1), ("fx", "image", 0)]
    );
    assert_eq!(calls[0].arguments, serde_json::json!({"count": 200}).as_object().unwrap().clone());
    assert!(calls[2].stderr_bytes > 0 && calls[0].stdout_bytes > 0, "{calls:?}");
    assert_eq!(calls[4].images, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_naming_server_and_tool_refuses_the_call_and_its_server_never_starts() {
    if !clix_testkit::mcp_ready("a_rule_naming_server_and_tool_refuses_the_call_and_its_server_never_starts") {
        return;
    }
    let f = Dirs::new();
    let rule = RuleFile {
        origin: Origin { file: "me/policy.toml".into(), scope: Scope::User },
        text:
            "[[rule]]\nid = \"no-fx-fail\"\nmatch = [\"fx\", \"fail\"]\ndecision = \"deny\"\nwhy = \"not this tool\"\n\
               examples = [\"fx fail --message x\"]\ncounterexamples = [\"fx list_records\"]\n"
                .into(),
    };
    let policy = PolicyConfig { user_files: vec![rule], ..PolicyConfig::default() };
    let marker = format!("engine-policy-{}", std::process::id());
    let mut engine = Engine::new(f.mcp_config(vec![server("fx", &marker)], &[], Some(policy))).await.unwrap();
    let (_, err, code) = run(&mut engine, "fx fail --message x; echo after").await;
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("`fx fail --message x` denied: not this tool") && err.contains("rule `no-fx-fail`"), "{err}");
    assert!(clix_testkit::pids_with_cmdline(&marker).is_empty(), "the refused call started no server");
    assert!(f.calls().is_empty(), "a refused call is no MCP call");
    // The server's other tools are untouched by the rule.
    let (out, err, code) = run(&mut engine, "fx list_records --count 2 | jq '.records | length'").await;
    assert_eq!((out.as_str(), code), ("2\n", 0), "{err}");
    assert_eq!(f.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taken_names_stay_their_commands_domains_scope_servers_and_none_outlives_the_engine() {
    if !clix_testkit::mcp_ready("taken_names_stay_their_commands_domains_scope_servers_and_none_outlives_the_engine") {
        return;
    }
    let f = Dirs::new();
    std::fs::write(f.ws.path().join("notes.txt"), "mine\n").unwrap();
    let marker = format!("engine-life-{}", std::process::id());
    let mut ops = server("opsfx", &marker);
    ops.domain = Some("ops".into());
    let mut dev = server("devfx", "engine-dev");
    dev.domain = Some("dev".into());
    let mut off = server("offfx", "engine-off");
    off.enabled = false;
    let mut servers: Vec<ServerEntry> = [("cat", "engine-cat"), ("grep", "engine-grep")]
        .into_iter()
        .map(|(name, marker)| ServerEntry { domain: Some("ops".into()), ..server(name, marker) })
        .collect();
    servers.extend([ops, dev, off]);
    let mut engine = Engine::new(f.mcp_config(servers, &["ops"], None)).await.unwrap();

    // `cat` (ours) and `grep` (the shell's) keep their meaning; the clash is reported.
    let clashes: Vec<&str> =
        engine.notices().iter().filter(|n| n.starts_with("MCP server ")).map(String::as_str).collect();
    assert_eq!(
        clashes,
        [
            "MCP server cat is not a command: its name is taken by the command `cat`, which keeps it; rename the server",
            "MCP server grep is not a command: its name is taken by the command `grep`, which keeps it; rename the \
             server",
        ]
    );
    let (out, _, code) = run(&mut engine, "cat notes.txt | grep mine").await;
    assert_eq!((out.as_str(), code), ("mine\n", 0));
    // Only the session's domain, only enabled servers.
    let listed: Vec<&str> = engine.catalog().tools.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(listed, ["opsfx"]);
    for absent in ["devfx", "offfx"] {
        let (_, _, code) = run(&mut engine, absent).await;
        assert_eq!(code, 127, "{absent} is no command");
    }

    let (out, err, code) = run(&mut engine, "opsfx where | jq -r .result").await;
    assert_eq!(code, 0, "{err}");
    let ws = f.ws.path().canonicalize().unwrap();
    assert!(out.starts_with(&format!("{} ", ws.display())), "the server runs in the workspace: {out}");
    assert!(!clix_testkit::pids_with_cmdline(&marker).is_empty(), "the server lives for the session");
    drop(engine);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !clix_testkit::pids_with_cmdline(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the server outlived its engine");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A call past the line's time limit ends the line with 124 and an audit
/// line saying so; the server stays, and answers the next call at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_line_s_time_ends_it_and_the_server_answers_the_next() {
    if !clix_testkit::mcp_ready("a_call_past_the_line_s_time_ends_it_and_the_server_answers_the_next") {
        return;
    }
    let f = Dirs::new();
    let mut config = f.mcp_config(vec![server("fx", "engine-slow")], &[], None);
    config.limits.timeout_secs = 3;
    let mut engine = Engine::new(config).await.unwrap();
    let (out, err, code) = run(&mut engine, "fx slow --seconds 0 | jq -r .result").await;
    assert_eq!((out.as_str(), code), ("slept 0.0\n", 0), "{err}");
    let started = Instant::now();
    let (_, err, code) = run(&mut engine, "fx slow --seconds 60").await;
    assert_eq!(code, 124, "{err}");
    // The sleep is 60 s: half of that tells the limit from the sleep even on a busy machine.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let started = Instant::now();
    let (out, err, code) = run(&mut engine, "fx list_records --count 1 | jq '.records | length'").await;
    assert_eq!((out.as_str(), code), ("1\n", 0), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the server did not wait out the sleep: {:?}",
        started.elapsed()
    );
    let calls = f.calls();
    let slow: Vec<(i32, Option<&str>)> =
        calls.iter().filter(|c| c.tool == "slow").map(|c| (c.exit_code, c.error_code.as_deref())).collect();
    assert_eq!(slow.len(), 2, "{calls:?}");
    assert_eq!(slow[0], (0, None));
    assert!(matches!(slow[1], (124, Some("TIMEOUT")) | (-1, Some("CANCELLED"))), "{slow:?}");
}

/// `rate_limit` counts each tool's calls apart (key `SERVER TOOL`), a tool's
/// own limit wins over its server's, and a refused call exits 75 as a
/// rate-limited hub tool does, audited with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_refuse_calls_past_them_with_the_hub_s_exit() {
    if !clix_testkit::mcp_ready("rate_limits_refuse_calls_past_them_with_the_hub_s_exit") {
        return;
    }
    let f = Dirs::new();
    let mut fx = server("fx", "engine-rate");
    fx.rate_limit = Some(2);
    fx.tools.insert("where".into(), clix_mcp_client::ToolLimits { rate_limit: Some(10), serialize: None });
    let mut engine = f.engine(vec![fx]).await;
    let mut codes = Vec::new();
    for _ in 0..4 {
        let (out, err, code) = run(&mut engine, "fx list_records --count 1").await;
        codes.push(code);
        if code == 0 {
            assert!(out.contains("record-0") && err.is_empty(), "{out} {err}");
        } else {
            assert!(
                err.starts_with("[error] fx list_records: RATE_LIMITED: more than 2 calls in the last minute"),
                "{err}"
            );
            assert!(err.contains("\nhint: retry in "), "{err}");
        }
    }
    assert_eq!(codes, [0, 0, 75, 75]);
    let calls = f.calls();
    let made: Vec<(i32, Option<&str>)> = calls.iter().map(|c| (c.exit_code, c.error_code.as_deref())).collect();
    assert_eq!(made, [(0, None), (0, None), (75, Some("RATE_LIMITED")), (75, Some("RATE_LIMITED"))]);
    // Another tool has its own count, and its own limit.
    for _ in 0..3 {
        let (_, err, code) = run(&mut engine, "fx where").await;
        assert_eq!(code, 0, "{err}");
    }
    // The counts are the user's, not the engine's: a new session is still refused.
    drop(engine);
    let mut engine = f
        .engine(vec![{
            let mut fx = server("fx", "engine-rate");
            fx.rate_limit = Some(2);
            fx
        }])
        .await;
    let (_, err, code) = run(&mut engine, "fx list_records --count 1").await;
    assert_eq!(code, 75, "{err}");
}

/// Two sessions (each with its own server process) call a tool that logs
/// its start and end and waits for the other to start. Serialized, the
/// second call waits for the first; otherwise they overlap.
async fn overlapping_calls(serialize: bool, partner_secs: u32) -> bool {
    let f = Dirs::new();
    let entry = ServerEntry { serialize, ..server("fx", &format!("engine-span-{serialize}")) };
    let mut a = f.engine(vec![entry.clone()]).await;
    let mut b = f.engine(vec![entry]).await;
    let line = format!("fx span --log spans --partner_seconds {partner_secs}");
    let ((_, err_a, code_a), (_, err_b, code_b)) = tokio::join!(run(&mut a, &line), run(&mut b, &line));
    assert_eq!((code_a, code_b), (0, 0), "{err_a} {err_b}");
    let events = std::fs::read_to_string(f.ws.path().join("spans")).unwrap();
    let events: Vec<&str> = events.lines().collect();
    assert_eq!(events.len(), 4, "{events:?}");
    events != ["start", "end", "start", "end"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialize_runs_one_call_of_a_tool_at_a_time_across_sessions() {
    if !clix_testkit::mcp_ready("serialize_runs_one_call_of_a_tool_at_a_time_across_sessions") {
        return;
    }
    // Serialized, the first call waits 2 s for a partner that cannot come.
    assert!(!overlapping_calls(true, 2).await, "serialize: the second call waits for the first");
    // Not serialized, each waits for the other (a safety net of 20 s).
    assert!(overlapping_calls(false, 20).await, "without serialize the calls overlap");
}

/// `mcp search` ranks the servers' tools by a word of their descriptions,
/// names a server that cannot start, and in a later session reads the kept
/// tool list instead of starting the server again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_search_ranks_tools_keeps_their_lists_and_names_servers_that_fail() {
    if !clix_testkit::mcp_ready("mcp_search_ranks_tools_keeps_their_lists_and_names_servers_that_fail") {
        return;
    }
    let f = Dirs::new();
    let marker = format!("engine-search-{}", std::process::id());
    let broken = ServerEntry::stdio("broken", "python3", &[&clix_testkit::mcp_server_script(), "fail"]);
    let servers = vec![server("fx", &marker), broken];
    let mut engine = f.engine(servers.clone()).await;
    let description = clix_engine::tool_description(engine.catalog());
    assert!(description.contains("mcp search QUERY"), "the model is told of it: {description}");

    let (out, err, code) = run(&mut engine, "mcp search structured records").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().next(), Some("fx list_records — Lists records as structured content."), "{out}");
    assert!(err.contains("mcp search: broken could not start") && err.contains("did not start"), "{err}");
    let (out, _, code) =
        run(&mut engine, "mcp search tagged color --json | jq -r '.found[0].tool, .not_started[0].server'").await;
    assert_eq!((out.as_str(), code), ("paint\nbroken\n", 0));
    let (out, _, _) = run(&mut engine, "mcp search zebra").await;
    assert!(out.starts_with("(no tool matches"), "{out}");
    drop(engine);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !clix_testkit::pids_with_cmdline(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the server outlived its engine");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A new session searches the kept list: fx is not started for it.
    let mut engine = f.engine(servers).await;
    // And the run tool lists fx's tools from that list (10 known: at most
    // 15 are listed), each under its server; broken has none known.
    let description = clix_engine::tool_description(engine.catalog());
    assert!(
        description.contains("\n    fx paint ") && description.contains("Paints with a color, tagged."),
        "{description}"
    );
    let listed = description.lines().filter(|l| l.starts_with("    ") && !l.starts_with("     ")).count();
    assert_eq!(listed, 10, "{description}");
    // Each as it is called, with its result's shape, so the first line
    // the model writes can call it and filter the result.
    assert!(
        description
            .contains("\n    fx list_records [--count <integer>] → {records:[{id,name,status}]}\n      Lists records"),
        "{description}"
    );
    let (out, err, code) = run(&mut engine, "mcp search tagged color").await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().next(), Some("fx paint — Paints with a color, tagged."), "{out}");
    // A known tool called through `mcp` is told its server's name.
    let (_, wrong, code) = run(&mut engine, "mcp list_records --count 3").await;
    assert_eq!(code, 2, "{wrong}");
    assert!(wrong.contains("`list_records` is a tool of the MCP server fx: run it as `fx list_records …`"), "{wrong}");
    let (_, prefixed, code) = run(&mut engine, "mcp fx list_records --count 3").await;
    assert_eq!(code, 2, "{prefixed}");
    assert!(
        prefixed.contains("fx is a command of its own: run `fx list_records --count 3` without `mcp`"),
        "{prefixed}"
    );
    let (_, unknown, code) = run(&mut engine, "mcp nosuchtool").await;
    assert_eq!(code, 2);
    assert!(unknown.contains("usage: mcp search"), "{unknown}");
    assert!(clix_testkit::pids_with_cmdline(&marker).is_empty(), "fx was started for a search its kept list answers");
    assert!(err.contains("broken could not start"), "a server without a kept list is tried again: {err}");
    // Started anyway (a call), it lists its tools and its kept list is written again.
    let (_, err, code) = run(&mut engine, "fx where").await;
    assert_eq!(code, 0, "{err}");
    assert!(!clix_testkit::pids_with_cmdline(&marker).is_empty());

    // Every server failing to start is a failure of the search.
    let mut engine =
        f.engine(vec![ServerEntry::stdio("broken", "python3", &[&clix_testkit::mcp_server_script(), "fail"])]).await;
    let (_, err, code) = run(&mut engine, "mcp search records").await;
    assert_eq!(code, 1, "{err}");
}
