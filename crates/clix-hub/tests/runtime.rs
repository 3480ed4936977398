//! Hub calls for real: tools are small scripts run in real bubblewrap
//! (Debian package `bubblewrap`, installed by .ci/run), with a real SQLite
//! state file and a real audit log.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clix_common::Secret;
use clix_hub::{CallResult, EnvLookup, HubConfig, HubRuntime, HubSource, LoadOptions};
use clix_sandbox::{AuditLog, Sandbox, SandboxSettings};
use clix_workspace::Workspace;
use serde_json::{Map, Value, json};

struct Fixture {
    _dirs: Vec<tempfile::TempDir>,
    ws: PathBuf,
    hub: PathBuf,
    state: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let path = |i: usize| std::fs::canonicalize(dirs[i].path()).unwrap();
        Fixture { ws: path(0), hub: path(1), state: path(2), _dirs: dirs }
    }

    /// A tool folder: `manifest.json` (the defaults below patched by
    /// `patch`) next to an executable bash script `run`.
    fn tool(&self, name: &str, patch: Value, script: &str) -> PathBuf {
        self.tool_in(&self.hub, name, patch, script)
    }

    /// The same in another hub folder (the workspace's `.clix/hub`).
    fn tool_in(&self, hub: &Path, name: &str, patch: Value, script: &str) -> PathBuf {
        support::write_tool(hub, name, patch, script)
    }

    fn config(&self, ttl: Duration, domains: &[&str]) -> HubConfig {
        let env: EnvLookup = Arc::new(|name| (name == "HUB_TEST_TOKEN").then(|| Secret::new("tok-123")));
        HubConfig {
            sources: vec![HubSource::explicit(&self.hub)],
            load: LoadOptions::default(),
            domains: domains.iter().map(|d| d.to_string()).collect(),
            state_dir: self.state.clone(),
            self_test_ttl: ttl,
            env,
            audit_log: Some(AuditLog::new(self.audit_path())),
            shared: None,
            session: "test-session".into(),
        }
    }

    fn audit_path(&self) -> PathBuf {
        self.state.join("audit.jsonl")
    }

    async fn load(&self) -> HubRuntime {
        self.load_with(self.config(Duration::from_secs(600), &[])).await
    }

    async fn load_with(&self, config: HubConfig) -> HubRuntime {
        let audit = Some(AuditLog::new(self.audit_path()));
        let sandbox = Sandbox::new(SandboxSettings::default(), &self.ws, None, audit, "test-session".into());
        let workspace = Workspace::open(&self.ws).unwrap();
        HubRuntime::load(config, Some(Arc::new(sandbox)), Some(&workspace)).await
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// A call with a generous limit (a safety net for a busy machine: a call
/// ends when its program does); a tool's own `timeout_ms` is shorter.
async fn call(hub: &HubRuntime, ws: &Path, tool: &str, a: Value) -> CallResult {
    hub.call(tool, &args(a), None, ws, Duration::from_secs(60)).await
}

fn stdout_json(r: &CallResult) -> Value {
    serde_json::from_slice(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

/// Prints its arguments as a JSON array (python3 quotes them exactly).
const ECHO_ARGV: &str = r#"exec python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@""#;

#[tokio::test]
async fn arguments_reach_the_tool_as_argv_in_declared_order() {
    let f = Fixture::new();
    let params = json!([
        {"name": "query", "type": "string", "required": true},
        {"name": "limit", "type": "integer", "default": 50},
        {"name": "verbose", "type": "boolean"},
        {"name": "quiet", "type": "boolean"},
        {"name": "tag", "type": "array"},
        {"name": "files", "type": "array", "positional": true}
    ]);
    f.tool("echo-argv", json!({"parameters": params}), ECHO_ARGV);
    let hub = f.load().await;
    let hostile = "; rm -rf / $(touch pwned) `id`\nnext";
    let r = call(
        &hub,
        &f.ws,
        "echo-argv",
        json!({"files": ["a.log", "b.log"], "tag": ["x", "y"], "verbose": true, "quiet": false, "query": hostile}),
    )
    .await;
    assert_eq!(r.exit_code, 0, "{r:?}");
    assert_eq!(
        stdout_json(&r),
        json!(["--query", hostile, "--limit", "50", "--verbose", "--tag", "x", "--tag", "y", "a.log", "b.log"])
    );
    assert!(!f.ws.join("pwned").exists(), "no shell ever ran the value");
    // Missing, extra and wrongly typed parameters never reach the tool.
    for (bad, want) in [
        (json!({}), "missing required --query"),
        (json!({"query": "q", "color": "red"}), "unknown parameter --color"),
        (json!({"query": "q", "limit": "many"}), "--limit"),
        (json!({"query": "q", "files": "one.log"}), "--files"),
    ] {
        let r = call(&hub, &f.ws, "echo-argv", bad).await;
        assert_eq!(r.exit_code, 2, "{r:?}");
        assert!(r.stderr.starts_with("[error] echo-argv: ") && r.stderr.contains(want), "{}", r.stderr);
        assert!(r.stderr.contains("usage: echo-argv --query <string>"), "usage follows: {}", r.stderr);
    }
}

/// Parameters that do not fit the manifest are a usage error, as a bad
/// command line is everywhere in clix: the usage code, `PARAMETER` in the
/// audit log, the usage shown, and the tool never started. `--help` is not
/// a call.
#[tokio::test]
async fn every_parameter_error_exits_with_the_usage_code_and_never_starts_the_tool() {
    let f = Fixture::new();
    let params = json!([
        {"name": "query", "type": "string", "required": true},
        {"name": "limit", "type": "integer"},
        {"name": "file", "type": "string", "positional": true}
    ]);
    f.tool("strict", json!({"parameters": params}), "touch ran; echo '{}'");
    let hub = f.load().await;
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let limit = Duration::from_secs(60);
    let ran = f.ws.join("ran");
    // The marker works: a call that fits starts the tool.
    let ok = hub.call_words("strict", &words(&["--query", "q", "f.txt"]), None, &f.ws, limit).await;
    assert_eq!(ok.exit_code, 0, "{ok:?}");
    std::fs::remove_file(&ran).expect("the tool ran once");

    let mut refused = Vec::new();
    for (line, want) in [
        (&["--limit", "5"][..], "missing required --query"),
        (&["--query"], "--query needs a value"),
        (&["--query", "a", "--json", "[1]"], "--json takes a JSON object"),
        (&["--query", "a", "--limit", "many"], "--limit: expected an integer"),
        (&["--query", "a", "one", "two"], "unexpected argument `two`"),
        (&["--querry", "a"], "did you mean --query?"),
    ] {
        refused.push((line.join(" "), want, hub.call_words("strict", &words(line), None, &f.ws, limit).await));
    }
    for (args, want) in [(json!({}), "missing required --query"), (json!({"query": 5}), "--query: expected a string")] {
        refused.push((args.to_string(), want, call(&hub, &f.ws, "strict", args).await));
    }
    for (given, want, r) in &refused {
        assert_eq!(
            (r.exit_code, r.error_code.as_deref()),
            (clix_common::exit::USAGE, Some("PARAMETER")),
            "{given}: {r:?}"
        );
        assert!(r.stderr.starts_with("[error] strict: ") && r.stderr.contains(want), "{given}: {}", r.stderr);
        assert!(r.stderr.contains("usage: strict --query <string>"), "{given}: {}", r.stderr);
    }
    assert!(!ran.exists(), "a refused call started the tool");

    let help = hub.call_words("strict", &words(&["--help"]), None, &f.ws, limit).await;
    assert_eq!(help.exit_code, 0, "{help:?}");
    assert!(String::from_utf8_lossy(&help.stdout).contains("usage: strict --query <string>"), "{help:?}");
    assert!(!ran.exists(), "--help started the tool");

    let log = std::fs::read_to_string(f.audit_path()).unwrap();
    let hub_lines: Vec<Value> =
        log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["kind"] == "hub").collect();
    let codes: Vec<(i64, &str)> =
        hub_lines.iter().map(|l| (l["exit_code"].as_i64().unwrap(), l["error_code"].as_str().unwrap_or(""))).collect();
    let usage = i64::from(clix_common::exit::USAGE);
    let mut want = vec![(0, "")];
    want.extend(std::iter::repeat_n((usage, "PARAMETER"), refused.len()));
    assert_eq!(codes, want, "one line per call, none for --help");
}

#[tokio::test]
async fn results_are_read_by_the_contract() {
    let f = Fixture::new();
    let schema = json!({"type": "array", "items": {"type": "object", "required": ["id"]}});
    f.tool("good", json!({"output": {"format": "json", "schema": schema}}), r#"echo progress >&2; echo '[{"id": 1}]'"#);
    f.tool("not-json", json!({}), "echo 'Found 3 results'");
    f.tool("breaks-schema", json!({"output": {"format": "json", "schema": schema}}), r#"echo '[{"name": 1}]'"#);
    f.tool(
        "structured",
        json!({}),
        r#"echo 'scanning…' >&2
echo '{"error_code": "RANGE_TOO_LARGE", "message": "the range spans 900 days", "hint": "use --since within 30 days"}' >&2
exit 1"#,
    );
    f.tool("denied", json!({}), r#"echo '{"error_code": "FORBIDDEN", "message": "no access"}' >&2; exit 3"#);
    f.tool("crashes", json!({}), "echo 'Traceback: boom' >&2; exit 9");
    f.tool("slow", json!({"timeout_ms": 300}), "sleep 120");
    // "数据库连接超时，请稍后重试" in GBK, as an older Chinese CLI prints it.
    let gbk =
        r"\xca\xfd\xbe\xdd\xbf\xe2\xc1\xac\xbd\xd3\xb3\xac\xca\xb1\xa3\xac\xc7\xeb\xc9\xd4\xba\xf3\xd6\xd8\xca\xd4";
    f.tool("gbk", json!({}), &format!(r#"printf '{{"msg": "{gbk}"}}\n'"#));
    let hub = f.load().await;
    let ws = &f.ws;

    let r = call(&hub, ws, "good", json!({})).await;
    assert_eq!((r.exit_code, r.stdout.as_slice(), r.stderr.as_str()), (0, &b"[{\"id\": 1}]\n"[..], "progress\n"));

    let r = call(&hub, ws, "not-json", json!({})).await;
    assert_eq!(r.exit_code, 70);
    assert!(
        r.stderr.contains("[error] not-json: stdout is not JSON") && r.stderr.contains("starts with `Found 3 results"),
        "{}",
        r.stderr
    );

    let r = call(&hub, ws, "breaks-schema", json!({})).await;
    assert_eq!(r.exit_code, 70);
    assert!(r.stderr.contains("breaks-schema: output breaks its schema") && r.stderr.contains("at /0"), "{}", r.stderr);

    let r = call(&hub, ws, "structured", json!({})).await;
    assert_eq!(r.exit_code, 1);
    assert_eq!(
        r.stderr,
        "scanning…\n[error] structured: RANGE_TOO_LARGE: the range spans 900 days\nhint: use --since within 30 days\n"
    );
    let r = call(&hub, ws, "denied", json!({})).await;
    assert_eq!((r.exit_code, r.stderr.as_str()), (3, "[error] denied: FORBIDDEN: no access\n"));
    let r = call(&hub, ws, "crashes", json!({})).await;
    assert_eq!(r.exit_code, 9);
    assert!(
        r.stderr.contains("Traceback: boom") && r.stderr.contains("[error] crashes: exit 9 (system error)"),
        "{}",
        r.stderr
    );

    let started = Instant::now();
    let r = call(&hub, ws, "slow", json!({})).await;
    assert_eq!(r.exit_code, 124, "{r:?}");
    assert!(r.stderr.contains("[error] slow: TIMEOUT: no result within 300 ms"), "{}", r.stderr);
    // Cut at its 300 ms, not at the call's 60 s nor the sleep's 120 s: a
    // generous bound, far below either.
    assert!(started.elapsed() < Duration::from_secs(30));

    let r = call(&hub, ws, "gbk", json!({})).await;
    assert_eq!(
        (r.exit_code, String::from_utf8_lossy(&r.stdout).as_ref()),
        (0, "{\"msg\": \"数据库连接超时，请稍后重试\"}\n")
    );
    assert!(r.stderr.contains("converted from GBK"), "{}", r.stderr);
}

#[tokio::test]
async fn self_tests_hide_tools_that_are_not_ready_and_are_cached() {
    let f = Fixture::new();
    let count = f.ws.join("self-tests-run");
    let counting = format!("[ \"$1\" = --self-test ] && echo run >> {} ; echo '{{}}'", count.display());
    f.tool("healthy", json!({"self_test": ["--self-test"]}), &counting);
    f.tool(
        "broken",
        json!({"self_test": ["--self-test"]}),
        r#"echo '{"error_code": "NO_DB", "message": "database unreachable"}' >&2; exit 1"#,
    );
    let hub = f.load().await;
    let ready: Vec<&str> = hub.ready().map(|t| t.manifest.name.as_str()).collect();
    assert_eq!(ready, ["healthy"]);
    let broken = hub.entry("broken").unwrap();
    let reason = broken.readiness.reason.as_deref().unwrap();
    assert!(reason.contains("`broken --self-test` failed: broken: NO_DB: database unreachable"), "{reason}");
    let r = call(&hub, &f.ws, "broken", json!({})).await;
    assert_eq!(r.exit_code, 127, "a tool that is not ready cannot be called");

    let runs = || std::fs::read_to_string(&count).unwrap_or_default().lines().count();
    assert_eq!(runs(), 1);
    f.load().await;
    assert_eq!(runs(), 1, "the cached result is used while manifest and program are unchanged");
    // Editing the manifest changes its modification time: the self-test runs again.
    std::thread::sleep(Duration::from_millis(20));
    let manifest = f.hub.join("healthy/manifest.json");
    std::fs::write(&manifest, std::fs::read_to_string(&manifest).unwrap()).unwrap();
    f.load().await;
    assert_eq!(runs(), 2);
    f.load_with(f.config(Duration::ZERO, &[])).await;
    assert_eq!(runs(), 3, "an expired result is not used");
}

/// A workspace's program replaced by another of the same size, mode and
/// modification time (`cp -p`, then `mv` over it) is tested again: its
/// change time (ctime, which no user can set) is part of the cache key.
#[tokio::test]
async fn a_workspace_program_replaced_with_the_same_mtime_and_size_is_tested_again() {
    let f = Fixture::new();
    let ws_hub = f.ws.join(".clix/hub");
    let dir = f.tool_in(&ws_hub, "swapped", json!({"self_test": ["--self-test"]}), "echo '{}'; exit 0");
    let mut config = f.config(Duration::from_secs(600), &[]);
    config.sources = vec![HubSource::workspace(&ws_hub)];
    let hub = f.load_with(config.clone()).await;
    assert!(hub.entry("swapped").unwrap().readiness.ready, "{:?}", hub.entry("swapped"));

    let program = dir.join("run");
    let before = std::fs::metadata(&program).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let swapped = dir.join("run.new");
    std::fs::write(&swapped, "#!/bin/bash\necho '{}'; exit 1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&swapped, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::File::options().write(true).open(&swapped).unwrap().set_modified(before.modified().unwrap()).unwrap();
    std::fs::rename(&swapped, &program).unwrap();
    let after = std::fs::metadata(&program).unwrap();
    assert_eq!((after.len(), after.modified().unwrap()), (before.len(), before.modified().unwrap()));

    let hub = f.load_with(config).await;
    let entry = hub.entry("swapped").unwrap();
    assert!(!entry.readiness.ready, "the cached result of the old program was used: {entry:?}");
    let reason = entry.readiness.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("`swapped --self-test` failed"), "{reason}");
}

#[tokio::test]
async fn version_drift_is_a_warning_not_a_failure() {
    let f = Fixture::new();
    f.tool("drifted", json!({"version": "1.2.0", "version_args": ["--version"]}), "echo 'drifted 1.3.0'");
    f.tool("same", json!({"version": "2.0.0", "version_args": ["--version"]}), "echo 'same v2.0.0'");
    let hub = f.load().await;
    let drifted = hub.entry("drifted").unwrap();
    assert!(drifted.readiness.ready);
    let drift = drifted.readiness.drift.as_deref().unwrap();
    assert!(drift.contains("manifest says version 1.2.0, but `drifted --version` prints `drifted 1.3.0`"), "{drift}");
    assert_eq!(hub.entry("same").unwrap().readiness.drift, None);
}

/// Two calls at once of a tool that logs when it starts and ends. Each call
/// waits for the other to have started before it ends (up to `partner_secs`):
/// calls that may overlap are seen to, however slow the machine. Serialized,
/// the first waits in vain and ends; the second finds both starts at once.
async fn overlapping_calls(serialize: bool, partner_secs: u32) -> bool {
    let f = Fixture::new();
    let log = f.ws.join("spans");
    let script = format!(
        "echo \"start $(date +%s%N)\" >> {0}; i=0; \
         while [ \"$(grep -c start {0})\" -lt 2 ] && [ $i -lt {1} ]; do sleep 0.05; i=$((i+1)); done; \
         echo \"end $(date +%s%N)\" >> {0}; echo '{{}}'",
        log.display(),
        partner_secs * 20
    );
    f.tool("single", json!({"serialize": serialize}), &script);
    let hub = f.load().await;
    let (a, b) = tokio::join!(call(&hub, &f.ws, "single", json!({})), call(&hub, &f.ws, "single", json!({})));
    assert_eq!((a.exit_code, b.exit_code), (0, 0), "{a:?} {b:?}");
    let events: Vec<String> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    events != ["start", "end", "start", "end"]
}

#[tokio::test]
async fn serialized_tools_run_one_call_at_a_time() {
    // Serialized, the first call waits 2 s for a partner that cannot come.
    assert!(!overlapping_calls(true, 2).await, "serialize: the second call waits for the first");
    // Not serialized, each waits for the other (a safety net of 20 s, under
    // the tool's default 30 s limit).
    assert!(overlapping_calls(false, 20).await, "without serialize the calls overlap");
}

#[tokio::test]
async fn rate_limits_refuse_with_when_to_retry() {
    let f = Fixture::new();
    f.tool("limited", json!({"rate_limit": 2}), "echo '{}'");
    let hub = f.load().await;
    for _ in 0..2 {
        assert_eq!(call(&hub, &f.ws, "limited", json!({})).await.exit_code, 0);
    }
    let r = call(&hub, &f.ws, "limited", json!({})).await;
    assert_eq!(r.exit_code, 75);
    assert!(
        r.stderr.starts_with("[error] limited: RATE_LIMITED: more than 2 calls in the last minute"),
        "{}",
        r.stderr
    );
    let secs: u64 = r.stderr.split("hint: retry in ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..=60).contains(&secs), "{secs}");
    // The count lives in the state file: another session of the user is limited too.
    let other = f.load().await;
    assert_eq!(call(&other, &f.ws, "limited", json!({})).await.exit_code, 75);
}

#[tokio::test]
async fn calls_are_audited_and_stats_are_read_back() {
    let f = Fixture::new();
    let params = json!([{"name": "api-token", "type": "string"}, {"name": "fail", "type": "boolean"}]);
    let script = r#"if [ "$3" = --fail ] || [ "$1" = --fail ]; then echo '{"error_code": "E_BUSINESS", "message": "no"}' >&2; exit 1; fi
echo "{\"token\": \"$TOKEN\"}""#;
    f.tool("audited", json!({"parameters": params, "env": {"TOKEN": "${HUB_TEST_TOKEN}"}}), script);
    let hub = f.load().await;
    let ok = call(&hub, &f.ws, "audited", json!({"api-token": "hunter2"})).await;
    assert_eq!(stdout_json(&ok), json!({"token": "tok-123"}), "the manifest's env passes");
    call(&hub, &f.ws, "audited", json!({"api-token": "hunter2"})).await;
    assert_eq!(call(&hub, &f.ws, "audited", json!({"fail": true})).await.exit_code, 1);
    // Refused calls are calls too.
    assert_eq!(call(&hub, &f.ws, "audited", json!({"colour": "red"})).await.exit_code, 2);
    let words = ["--nope".to_string()];
    assert_eq!(hub.call_words("audited", &words, None, &f.ws, Duration::from_secs(5)).await.exit_code, 2);

    let log = std::fs::read_to_string(f.audit_path()).unwrap();
    let hub_lines: Vec<Value> =
        log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["kind"] == "hub").collect();
    assert_eq!(hub_lines.len(), 5);
    let os_lines = log.lines().filter(|l| l.contains("\"kind\":\"os\"")).count();
    assert_eq!(os_lines, 0, "a hub call is logged once, by the hub, with its parameters redacted");
    assert_eq!((hub_lines[3]["error_code"].as_str(), hub_lines[4]["exit_code"].as_i64()), (Some("PARAMETER"), Some(2)));
    assert_eq!(hub_lines[0]["tool"], "audited");
    assert_eq!(hub_lines[0]["params"], json!({"api-token": "***"}));
    assert_eq!(hub_lines[0]["session"], "test-session");
    assert!(hub_lines[0]["stdout_bytes"].as_u64().unwrap() > 10);
    assert_eq!(hub_lines[2]["error_code"], "E_BUSINESS");
    assert!(!log.contains("hunter2") && !log.contains("tok-123"), "no secret in the audit log");

    let stats = hub.stats(Some("audited")).unwrap();
    assert_eq!(stats.len(), 1);
    let s = &stats[0];
    assert_eq!((s.calls, s.ok), (5, 2));
    assert!((s.success_rate - 2.0 / 5.0).abs() < 1e-9);
    assert_eq!(s.errors.get("E_BUSINESS"), Some(&1));
    assert_eq!(s.errors.get("PARAMETER"), Some(&2));
    assert!(s.p50_ms <= s.p95_ms);
    assert_eq!(hub.most_used(1)[0].manifest.name, "audited");
}

#[tokio::test]
async fn domains_scope_the_session() {
    let f = Fixture::new();
    f.tool("ops-tool", json!({"domain": "ops"}), "echo '{}'");
    f.tool("data-tool", json!({"domain": "data"}), "echo '{}'");
    f.tool("no-domain", json!({}), "echo '{}'");
    let names = |hub: &HubRuntime| hub.entries().iter().map(|e| e.tool.manifest.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&f.load().await), ["data-tool", "no-domain", "ops-tool"]);
    let ops = f.load_with(f.config(Duration::from_secs(600), &["ops"])).await;
    assert_eq!(names(&ops), ["ops-tool"]);
    assert_eq!(call(&ops, &f.ws, "data-tool", json!({})).await.exit_code, 127, "outside the domain it does not exist");
}

#[tokio::test]
async fn search_ranks_the_right_tool_first_among_thirty() {
    let f = Fixture::new();
    let tools = [
        ("log-search", "Search application log files for a keyword within a time range"),
        ("csv-query", "Filter and sort rows of a CSV or JSON table"),
        ("ticket-info", "Look up a support ticket by id"),
        ("deploy-status", "Show the deployment status of a service"),
        ("dns-lookup", "Resolve a host name to addresses"),
        ("invoice-pdf", "Render an invoice as a PDF document"),
        ("user-audit", "List permission changes of a user account"),
        ("cert-expiry", "Days until a TLS certificate expires"),
        ("queue-depth", "Messages waiting in a message queue"),
        ("git-blame-stats", "Who changed which lines of a repository file"),
        ("disk-usage", "Space used by each folder of a volume"),
        ("pg-slow-queries", "The slowest PostgreSQL statements of the last hour"),
        ("k8s-pods", "Pods of a Kubernetes namespace and their restarts"),
        ("feature-flags", "Read or list feature flag values per environment"),
        ("currency-rate", "Exchange rate between two currencies on a date"),
        ("oncall-now", "Who is on call for a team right now"),
        ("backup-verify", "Check that last night's backup can be restored"),
        ("translate-text", "Translate a short text into another language"),
        ("image-thumbnail", "Make a small preview image of a picture"),
        ("sales-report", "Revenue per region and month"),
        ("crash-symbolize", "Turn a native crash address list into function names"),
        ("api-latency", "p50 and p99 latency of an HTTP endpoint"),
        ("license-scan", "Licenses of a project's dependencies"),
        ("secret-scan", "Find committed passwords and keys in a repository"),
        ("calendar-free", "Free meeting slots of several people"),
        ("weather-now", "Current weather for a city"),
        ("sms-send", "Send a text message to a phone number"),
        ("geo-ip", "Country and city of an IP address"),
        ("docs-search", "Search the internal documentation wiki"),
        ("metrics-query", "Run a PromQL query against the metrics store"),
    ];
    for (name, description) in tools {
        let params = json!([{"name": "target", "type": "string", "description": "what the tool works on"}]);
        f.tool(name, json!({"description": description, "parameters": params}), "echo '{}'");
    }
    let hub = f.load().await;
    assert_eq!(hub.ready().count(), 30);
    for (query, want) in [
        ("find errors in the logs since yesterday", "log-search"),
        ("when does the TLS certificate expire", "cert-expiry"),
        ("sort a csv table", "csv-query"),
        ("support ticket OPS-12", "ticket-info"),
        ("is the service deployed", "deploy-status"),
        ("which database statements are slow", "pg-slow-queries"),
        ("restarts of kubernetes pods", "k8s-pods"),
    ] {
        let found = hub.search(query, 5).unwrap();
        assert_eq!(found.first().map(|f| f.name.as_str()), Some(want), "{query}: {found:?}");
        assert!(found.windows(2).all(|w| w[0].score >= w[1].score), "ranked: {found:?}");
    }
    assert!(hub.search("zebra quantum", 5).unwrap().is_empty());
}

#[tokio::test]
async fn a_workspace_manifest_gets_no_secrets_and_no_network() {
    let f = Fixture::new();
    let ws_hub = f.ws.join(".clix/hub");
    for hub in [&f.hub, &ws_hub] {
        f.tool_in(hub, "asks-secret", json!({"env": {"T": "${HUB_TEST_TOKEN}"}}), "echo '{}'");
        f.tool_in(hub, "asks-network", json!({"network": true}), "echo '{}'");
        f.tool_in(hub, "plain", json!({"env": {"MODE": "fast"}}), r#"echo "{\"mode\": \"$MODE\"}""#);
    }
    let mut config = f.config(Duration::from_secs(600), &[]);
    config.sources = vec![HubSource::workspace(&ws_hub)];
    let hub = f.load_with(config).await;
    let reason = |name: &str| hub.entry(name).unwrap().readiness.reason.clone().unwrap_or_default();
    assert!(reason("asks-secret").contains("a workspace's manifest cannot take values from [hub.env]"));
    assert!(reason("asks-network").contains("a workspace's manifest cannot have network: true"));
    let r = call(&hub, &f.ws, "plain", json!({})).await;
    assert_eq!(stdout_json(&r), json!({"mode": "fast"}), "plain values still pass");
    // The same manifests from the user's own hub folder are ready.
    let trusted = f.load().await;
    assert_eq!(trusted.ready().count(), 3);
}

#[tokio::test]
async fn option_like_positionals_follow_a_double_dash_and_text_output_passes_through() {
    let f = Fixture::new();
    let params = json!([{"name": "force", "type": "boolean"}, {"name": "files", "type": "array", "positional": true}]);
    f.tool("echo-argv", json!({"parameters": params}), ECHO_ARGV);
    f.tool("texty", json!({"output": {"format": "text"}}), "echo 'plain words'");
    let hub = f.load().await;
    let r = call(&hub, &f.ws, "echo-argv", json!({"force": true, "files": ["--delete-all", "x"]})).await;
    assert_eq!(stdout_json(&r), json!(["--force", "--", "--delete-all", "x"]));
    let r = call(&hub, &f.ws, "echo-argv", json!({"files": ["a"]})).await;
    assert_eq!(stdout_json(&r), json!(["a"]), "no -- when nothing looks like an option");
    let r = call(&hub, &f.ws, "texty", json!({})).await;
    assert_eq!((r.exit_code, r.stdout.as_slice()), (0, &b"plain words\n"[..]));
}

/// A workspace's tool never gets a host folder mounted: a program outside
/// the workspace is refused at load (its folder used to be mounted), and a
/// tool folder swapped for a symlink to a host folder after load is not
/// followed by a mount.
#[tokio::test]
async fn a_workspace_tool_gets_no_host_folder_mounted() {
    const CANARY: &str = "CANARY-2b9d-host-folder";
    let f = Fixture::new();
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside_dir.path()).unwrap();
    std::fs::create_dir_all(outside.join("bin")).unwrap();
    std::fs::create_dir_all(outside.join("data")).unwrap();
    std::fs::write(outside.join("bin/canary.txt"), CANARY).unwrap();
    std::fs::write(outside.join("data/secret.txt"), CANARY).unwrap();
    let host_tool = outside.join("bin/tool");
    std::fs::write(&host_tool, "#!/bin/sh\ncat \"$(dirname \"$0\")/canary.txt\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&host_tool, std::fs::Permissions::from_mode(0o755)).unwrap();

    let ws_hub = f.ws.join(".clix/hub");
    let text = json!({"format": "text"});
    f.tool_in(&ws_hub, "host-tool", json!({"command": host_tool, "output": text}), "true");
    let file = json!([{"name": "file", "type": "string", "positional": true, "required": true}]);
    let cat = f.tool_in(&ws_hub, "cat", json!({"command": "/bin/cat", "output": text, "parameters": file}), "true");
    std::fs::write(cat.join("data.txt"), "inside data\n").unwrap();
    let mut config = f.config(Duration::from_secs(600), &[]);
    config.sources = vec![HubSource::workspace(&ws_hub)];
    let hub = f.load_with(config).await;

    let problems: String = hub.problems().iter().map(|p| format!("{p}\n")).collect();
    assert!(hub.entry("host-tool").is_none(), "{problems}");
    assert!(problems.contains("is outside the workspace and the system folders"), "{problems}");
    let r = call(&hub, &f.ws, "host-tool", json!({})).await;
    assert_eq!(r.exit_code, 127, "{r:?}");
    assert!(!format!("{r:?}{problems}").contains(CANARY));

    let r = call(&hub, &f.ws, "cat", json!({"file": cat.join("data.txt")})).await;
    assert_eq!((r.exit_code, String::from_utf8_lossy(&r.stdout).as_ref()), (0, "inside data\n"), "{r:?}");
    // The tool's folder becomes a symlink to a host folder after load.
    std::fs::rename(&cat, ws_hub.join("cat-old")).unwrap();
    std::os::unix::fs::symlink(outside.join("data"), &cat).unwrap();
    let r = call(&hub, &f.ws, "cat", json!({"file": cat.join("secret.txt")})).await;
    assert_ne!(r.exit_code, 0, "{r:?}");
    assert!(!format!("{r:?}").contains(CANARY), "a host folder was mounted: {r:?}");
    // Not even tried: bwrap was never asked to bind the host folder.
    assert!(!r.stderr.contains(&outside.display().to_string()), "a mount of the host folder was tried: {r:?}");
    assert!(r.stderr.contains("No such file or directory"), "cat found nothing there: {r:?}");
}
