//! A session's hub: the tools that loaded (with their readiness), the
//! problems of the others, and calls under the seed's governance: argv
//! only, sandboxed, rate-limited, serialized, audited, read by the contract.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clix_audit::{AuditLog, Pending};
use clix_postgres::SharedStore;
use clix_sandbox::{Outcome, Sandbox, SandboxError, SandboxMode};
use clix_workspace::Workspace;
use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::args::{build_argv, parse_command_line, usage};
use crate::contract::{OutputError, check_output, parse_error};
use crate::encoding::decode_output;
use crate::exec::{EnvLookup, ToolRun, tool_env};
use crate::governance::{Governance, Refusal};
use crate::load::{HubSource, LoadOptions, Tool, load_hub};
use crate::manifest::OutputFormat;
use crate::problem::Problem;
use crate::readiness::{self, Readiness};
use crate::search::{Found, SearchError, SearchIndex};
use crate::state::HubState;
use crate::stats::{CallRecord, ToolStats, stats};
use clix_command::flags::typed::ArgError;

/// Exit codes of calls clix refuses or cannot read (the seed's "other: system error").
pub(crate) mod exit {
    pub(crate) use clix_common::exit::{BAD_OUTPUT, CANNOT_RUN, CONFIG, TIMEOUT};
    /// No ready tool of that name, as bash's "command not found".
    pub(crate) const NOT_AVAILABLE: i32 = clix_common::exit::NOT_FOUND;
}

/// Self-tests of this many tools run at once at load.
const PARALLEL_CHECKS: usize = 4;
/// A tool without `timeout_ms` gets this long.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a session's hub is found and run.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The hub folders, in the order [`hub_sources`](crate::hub_sources) gives.
    pub sources: Vec<HubSource>,
    /// How manifests' commands are looked up.
    pub load: LoadOptions,
    /// Only tools of these domains exist for the session; empty means all.
    pub domains: Vec<String>,
    /// Holds `hub.sqlite` (self-test cache, rate counts) and the serialize locks.
    pub state_dir: PathBuf,
    /// How long a cached self-test result is used while the tool's files are unchanged.
    pub self_test_ttl: Duration,
    /// Fills `${NAME}` in manifests' `env`.
    pub env: EnvLookup,
    /// The audit log shared with the OS tier; `hub stats` reads it.
    pub audit_log: Option<AuditLog>,
    /// The store every replica shares (`[storage] url`): when set, rate
    /// limits count every machine's calls and `serialize` locks there.
    pub shared: Option<Arc<SharedStore>>,
    /// Who is calling, in the audit log.
    pub session: String,
}

/// A tool of the session and whether it can be called.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The tool as it loaded.
    pub tool: Tool,
    /// Whether it can be called, and why not.
    pub readiness: Readiness,
}

/// What a call produced, shaped like a command's result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallResult {
    /// The tool's JSON (converted to UTF-8), for the pipeline.
    pub stdout: Vec<u8>,
    /// The tool's own log lines, then clix's `[error] …` and `hint: …` lines.
    pub stderr: String,
    /// The tool's own exit code, or clix's for a call it refused
    /// (`clix_common::exit`: 2 a parameter error, 75 try later, 127 no such tool…).
    pub exit_code: i32,
    /// What the audit log and `hub stats` count the call as: the tool's own
    /// `error_code`, or clix's (`TIMEOUT`, `PARAMETER`, …); `None` on success.
    pub error_code: Option<String>,
}

impl CallResult {
    fn refused(tool: &str, code: &str, message: &str, hint: &str, exit_code: i32) -> Self {
        CallResult {
            stdout: Vec::new(),
            stderr: format!("[error] {tool}: {code}: {message}\nhint: {hint}\n"),
            exit_code,
            error_code: Some(code.to_string()),
        }
    }

    fn from_refusal(tool: &str, refusal: &Refusal) -> Self {
        CallResult {
            stdout: Vec::new(),
            stderr: refusal.text(tool),
            exit_code: refusal.exit_code,
            error_code: Some(refusal.code.to_string()),
        }
    }

    fn usage_error(m: &crate::manifest::Manifest, e: &ArgError) -> Self {
        let stderr = format!("[error] {}: {e}\n\n{}", m.name, usage(m));
        CallResult {
            stdout: Vec::new(),
            stderr,
            exit_code: clix_common::exit::USAGE,
            error_code: Some("PARAMETER".into()),
        }
    }
}

/// A session's hub once loaded: its tools with their readiness, the
/// manifests' problems, and governed calls (argv only, sandboxed,
/// rate-limited, serialized, audited). Shared by every command of a session.
pub struct HubRuntime {
    entries: Vec<Entry>,
    problems: Vec<Problem>,
    sandbox: Option<Arc<Sandbox>>,
    /// Rate counts, serialize locks and the self-test cache's file.
    governance: Governance,
    config: HubConfig,
    index: Mutex<Option<SearchIndex>>,
    /// Set by [`HubRuntime::stop_lines_past`].
    line_output_cap: Option<usize>,
}

/// The `error_code` of a call made as a stage of a command line whose
/// output passed the line's memory budget: the caller stops the line.
pub const OUTPUT_LIMIT: &str = "OUTPUT_LIMIT";

/// The audit log `hub stats` reads cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the audit log {log}: {source}")]
pub struct StatsError {
    /// The log, as it is shown.
    pub log: String,
    /// Why.
    pub source: std::io::Error,
}

impl HubRuntime {
    /// Loads the hub and decides which tools are ready: each self-test runs
    /// in the sandbox unless a result for this very manifest and program is
    /// cached and younger than the TTL. Without a sandbox no tool is ready.
    ///
    /// The workspace's hub folder (a source that is not trusted) is read
    /// only beneath `workspace`, the session's handle; without one it is a
    /// problem and nothing of it is read.
    pub async fn load(config: HubConfig, sandbox: Option<Arc<Sandbox>>, workspace: Option<&Workspace>) -> Self {
        let hub = load_hub(&config.sources, &config.load, workspace.map(|w| &**w));
        let in_scope = |t: &Tool| {
            config.domains.is_empty() || t.manifest.domain.as_ref().is_some_and(|d| config.domains.contains(d))
        };
        let mut tools: Vec<Tool> = hub.tools.into_iter().filter(in_scope).collect();
        tools.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        // A session without tools (most of them) does not touch the state file.
        let governance = Governance::new(config.state_dir.clone(), config.shared.clone());
        let state = if tools.is_empty() { None } else { governance.state().ok() };
        let checks = futures_util::stream::iter(tools.into_iter().map(|tool| {
            let (sandbox, env) = (sandbox.as_deref(), &config.env);
            let ttl = config.self_test_ttl;
            async move {
                let readiness = readiness_of(&tool, sandbox, state, env, ttl).await;
                Entry { tool, readiness }
            }
        }))
        .buffered(PARALLEL_CHECKS)
        .collect::<Vec<Entry>>()
        .await;
        for problem in &hub.problems {
            tracing::debug!(%problem, "hub manifest not loaded");
        }
        if !checks.is_empty() || !hub.problems.is_empty() {
            tracing::info!(
                ready = checks.iter().filter(|e| e.readiness.ready).count(),
                not_ready = checks.iter().filter(|e| !e.readiness.ready).count(),
                problems = hub.problems.len(),
                "hub loaded"
            );
        }
        HubRuntime {
            entries: checks,
            problems: hub.problems,
            sandbox,
            governance,
            config,
            index: Mutex::new(None),
            line_output_cap: None,
        }
    }

    /// Takes a tool out of the session (its name clashes with a command, …).
    pub fn set_not_ready(&mut self, name: &str, reason: String) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.tool.manifest.name == name) {
            e.readiness.ready = false;
            e.readiness.reason = Some(reason);
        }
    }

    /// Every tool of the session's domains, ready or not, by name.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Why the manifests that did not load were refused (what `hub check` prints).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The tools that can be called, in name order.
    pub fn ready(&self) -> impl Iterator<Item = &Tool> {
        self.entries.iter().filter(|e| e.readiness.ready).map(|e| &e.tool)
    }

    /// The tool of that name, ready or not.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tool.manifest.name == name)
    }

    /// Where calls are audited (and `hub stats` reads), if anywhere.
    fn audit_log(&self) -> Option<AuditLog> {
        self.config.audit_log.clone()
    }

    /// The `k` ready tools that best fit `query`.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<Found>, SearchError> {
        let mut index = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if index.is_none() {
            *index = Some(SearchIndex::build(self.ready().map(|t| &t.manifest))?);
        }
        Ok(index.as_ref().map_or(Ok(Vec::new()), |i| i.search(query, k))?)
    }

    /// Figures per tool from the audit log.
    pub fn stats(&self, tool: Option<&str>) -> Result<Vec<ToolStats>, StatsError> {
        let Some(log) = self.audit_log() else { return Ok(Vec::new()) };
        stats(&log, tool).map_err(|source| StatsError { log: log.source().to_string(), source })
    }

    /// Ready tools, most called first (then by name): what a model sees
    /// when the hub is too large to list whole.
    pub fn most_used(&self, n: usize) -> Vec<&Tool> {
        let counts: HashMap<String, u64> =
            self.stats(None).unwrap_or_default().into_iter().map(|s| (s.tool, s.calls)).collect();
        let mut tools: Vec<&Tool> = self.ready().collect();
        tools.sort_by(|a, b| {
            let calls = |t: &Tool| counts.get(&t.manifest.name).copied().unwrap_or(0);
            calls(b).cmp(&calls(a)).then_with(|| a.manifest.name.cmp(&b.manifest.name))
        });
        tools.truncate(n);
        tools
    }

    /// Calls are stages of command lines: each keeps up to `bytes` of
    /// stdout and of stderr (the line's memory budget), and output past it
    /// is an [`OUTPUT_LIMIT`] error, never a tool's output cut short.
    pub fn stop_lines_past(&mut self, bytes: usize) {
        self.line_output_cap = Some(bytes);
    }

    /// What [`HubRuntime::stop_lines_past`] set.
    pub fn line_output_cap(&self) -> Option<usize> {
        self.line_output_cap
    }

    /// Calls a ready tool with checked arguments (from its flags or from
    /// JSON), from `cwd`, within `limit`.
    pub async fn call(
        &self,
        name: &str,
        args: &Map<String, Value>,
        stdin: Option<&[u8]>,
        cwd: &Path,
        limit: Duration,
    ) -> CallResult {
        let mut audit = pending_call(self, name, args);
        let result = match self.entry(name).filter(|e| e.readiness.ready) {
            None => {
                let hint = "see hub list --all";
                CallResult::refused(name, "NOT_AVAILABLE", "no ready tool of this name", hint, exit::NOT_AVAILABLE)
            }
            Some(entry) => match build_argv(&entry.tool.manifest, args) {
                Ok(argv) => self.governed_call(&entry.tool, &argv, stdin, cwd, limit, &mut audit).await,
                Err(e) => CallResult::usage_error(&entry.tool.manifest, &e),
            },
        };
        finish_call(&mut audit, &result);
        result
    }

    /// Calls a tool with its own command line (`--keyword x --limit 5`):
    /// `--help` gives the usage (not a call); a line that does not fit the
    /// manifest is a parameter error, audited like any call.
    pub async fn call_words(
        &self,
        name: &str,
        words: &[String],
        stdin: Option<&[u8]>,
        cwd: &Path,
        limit: Duration,
    ) -> CallResult {
        let Some(entry) = self.entry(name) else { return self.call(name, &Map::new(), stdin, cwd, limit).await };
        let m = &entry.tool.manifest;
        match parse_command_line(m, words) {
            Ok(args) => self.call(name, &args, stdin, cwd, limit).await,
            Err(ArgError::Help) => CallResult { stdout: usage(m).into_bytes(), ..CallResult::default() },
            Err(e) => {
                let mut audit = pending_call(self, name, &Map::new());
                let result = CallResult::usage_error(m, &e);
                finish_call(&mut audit, &result);
                result
            }
        }
    }

    async fn governed_call(
        &self,
        tool: &Tool,
        argv: &[String],
        stdin: Option<&[u8]>,
        cwd: &Path,
        limit: Duration,
        audit: &mut PendingCall<'_>,
    ) -> CallResult {
        let m = &tool.manifest;
        let name = m.name.as_str();
        let started = Instant::now();
        let timeout = m.timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis).min(limit);
        if let Some(per_minute) = m.rate_limit
            && let Err(refusal) = self.governance.take_slot(name, per_minute)
        {
            return CallResult::from_refusal(name, &refusal);
        }
        let _lock = if m.serialize {
            match self.governance.serialize(name, timeout).await {
                Ok(held) => Some(held),
                Err(refusal) => return CallResult::from_refusal(name, &refusal),
            }
        } else {
            None
        };
        let env = match tool_env(m, &self.config.env, tool.trusted) {
            Ok(env) => env,
            Err(e) => {
                return CallResult::refused(
                    name,
                    "CONFIG",
                    &e,
                    "fix the manifest's env or clix's config",
                    exit::CONFIG,
                );
            }
        };
        let Some(sandbox) = &self.sandbox else {
            let hint = "turn the OS tier on: sandbox.mode = \"bwrap\"";
            return CallResult::refused(name, "SANDBOX_UNAVAILABLE", "the OS tier is off", hint, exit::CANNOT_RUN);
        };
        // Time spent waiting for a rate slot or the lock counts against the limit.
        let left = timeout.saturating_sub(started.elapsed());
        let output_cap = self.line_output_cap;
        let run =
            ToolRun { tool, args: argv, cwd, stdin, timeout: left, env: &env, audited_by_caller: true, output_cap };
        match run.run(sandbox).await {
            Ok(outcome) => read_outcome(tool, outcome, timeout, output_cap.is_some(), audit),
            Err(e) => {
                let hint = match e {
                    SandboxError::Unavailable(_) => "see sandbox status",
                    SandboxError::Spawn { .. } => "see hub info for the tool's program and folder",
                };
                CallResult::refused(name, "SANDBOX_UNAVAILABLE", &e.to_string(), hint, exit::CANNOT_RUN)
            }
        }
    }
}

async fn readiness_of(
    tool: &Tool,
    sandbox: Option<&Sandbox>,
    state: Option<&HubState>,
    env: &EnvLookup,
    ttl: Duration,
) -> Readiness {
    let readiness = find_readiness(tool, sandbox, state, env, ttl).await;
    tracing::debug!(
        tool = %tool.manifest.name,
        ready = readiness.ready,
        reason = readiness.reason.as_deref().unwrap_or(""),
        "hub tool readiness"
    );
    readiness
}

async fn find_readiness(
    tool: &Tool,
    sandbox: Option<&Sandbox>,
    state: Option<&HubState>,
    env: &EnvLookup,
    ttl: Duration,
) -> Readiness {
    let Some(sandbox) = sandbox else {
        return Readiness::not_ready("the OS tier is off, so no hub tool can run (sandbox.mode)");
    };
    if sandbox.settings().mode == SandboxMode::Host {
        return Readiness::not_ready("sandbox.mode = \"host\" would run it unsandboxed; hub tools need bwrap");
    }
    if tool.manifest.network && !tool.trusted {
        return Readiness::not_ready(
            "a workspace's manifest cannot have network: true; put the tool in your own hub folder \
             (the config folder's hub/, or --hub DIR)",
        );
    }
    let env = match tool_env(&tool.manifest, env, tool.trusted) {
        Ok(env) => env,
        Err(e) => return Readiness::not_ready(e),
    };
    if tool.manifest.self_test.is_none() && tool.manifest.version_args.is_none() {
        return Readiness { ready: true, reason: None, drift: None };
    }
    let key = readiness::cache_key(tool);
    let name = tool.manifest.name.as_str();
    if let Some(cached) = state.and_then(|s| s.cached_readiness(&key, readiness::now_ms(), ttl)) {
        tracing::debug!(
            tool = name,
            ttl_secs = ttl.as_secs(),
            "hub readiness cache hit: the self-test is not run again"
        );
        return cached;
    }
    tracing::debug!(
        tool = name,
        state = state.is_some(),
        "hub readiness cache miss (first load, manifest or program changed, or older than hub.self_test_ttl_secs): running the self-test"
    );
    let (readiness, conclusive) = readiness::check(sandbox, tool, &env).await;
    // A sandbox that could not start says nothing about the tool: not cached.
    if conclusive && let Some(state) = state {
        state.remember_readiness(&key, readiness::now_ms(), &readiness);
    } else if !conclusive {
        tracing::debug!(tool = name, "the sandbox could not start the self-test: result not cached");
    }
    readiness
}

/// A finished run, read by the contract.
/// `in_line`: the call is a stage of a command line, whose output past the
/// line's memory budget is [`OUTPUT_LIMIT`], which stops the line.
fn read_outcome(tool: &Tool, o: Outcome, timeout: Duration, in_line: bool, audit: &mut PendingCall<'_>) -> CallResult {
    let m = &tool.manifest;
    let name = m.name.as_str();
    if let Some(line) = audit.record() {
        (line.stdout_bytes, line.stderr_bytes) = (o.stdout_total, o.stderr_total);
    }
    let logs = decode_output(&o.stderr).text;
    let with_logs = |mut r: CallResult| {
        r.stderr.insert_str(0, &logs);
        r
    };
    if o.timed_out.is_some() {
        let message = format!("no result within {} ms", timeout.as_millis());
        let hint = "narrow the request, or raise timeout_ms in the tool's manifest";
        return with_logs(CallResult::refused(name, "TIMEOUT", &message, hint, exit::TIMEOUT));
    }
    if o.exit_code == clix_common::exit::FAILURE && logs.starts_with("bwrap:") {
        // bubblewrap itself could not set the tool up (a mount, the cwd).
        let message = logs.trim().to_string();
        let hint = "see hub info for the tool's program and folder";
        return CallResult::refused(name, "SANDBOX_UNAVAILABLE", &message, hint, exit::CANNOT_RUN);
    }
    if o.exit_code != 0 {
        let error = parse_error(&o.stderr);
        let error_code = error.as_ref().map(|e| e.error_code.clone());
        let stderr = match error {
            // The structured error replaces its own JSON line; other log lines stay.
            Some(_) => {
                let kept: String =
                    logs.lines().filter(|l| parse_error(l.as_bytes()).is_none()).map(|l| format!("{l}\n")).collect();
                format!("{kept}{}\n", crate::contract::error_text(name, o.exit_code, &o.stderr))
            }
            None => format!("{logs}{}\n", crate::contract::error_text(name, o.exit_code, &o.stderr)),
        };
        return CallResult { stdout: Vec::new(), stderr, exit_code: o.exit_code, error_code };
    }
    if in_line && o.was_capped() {
        let message = format!(
            "output is {} bytes on stdout and {} on stderr, more than a command line may hold",
            o.stdout_total, o.stderr_total
        );
        let hint = "ask for less (a limit parameter), or raise [limits] max_memory_bytes";
        return with_logs(CallResult::refused(name, OUTPUT_LIMIT, &message, hint, exit::BAD_OUTPUT));
    }
    if o.stdout_dropped() > 0 {
        let message = format!("stdout is {} bytes, more than the sandbox keeps", o.stdout_total);
        let hint = "ask for less (a limit parameter), or fix the tool";
        return with_logs(CallResult::refused(name, "BAD_OUTPUT", &message, hint, exit::BAD_OUTPUT));
    }
    if m.output.format == OutputFormat::Text {
        return CallResult {
            stdout: decode_output(&o.stdout).text.into_bytes(),
            stderr: logs,
            ..CallResult::default()
        };
    }
    match check_output(name, m.output.schema.as_ref(), &o.stdout) {
        Ok(_) => {
            let decoded = decode_output(&o.stdout);
            let mut stderr = logs;
            if decoded.converted() {
                stderr.push_str(&format!("clix: {name}: output converted from {} to UTF-8\n", decoded.encoding));
            }
            let mut stdout = decoded.text.into_bytes();
            if !stdout.ends_with(b"\n") {
                stdout.push(b'\n');
            }
            CallResult { stdout, stderr, ..CallResult::default() }
        }
        Err(e) => {
            let code = match e {
                OutputError::NotJson { .. } => "BAD_OUTPUT",
                OutputError::Schema { .. } => "SCHEMA_VIOLATION",
            };
            let stderr = format!(
                "{logs}[error] {e}\nhint: the tool broke its output contract; report it to the tool's owner \
                 (hub info {name} shows its schema)\n"
            );
            CallResult { stdout: Vec::new(), stderr, exit_code: exit::BAD_OUTPUT, error_code: Some(code.into()) }
        }
    }
}

/// The audit line of a call; one never finished (its caller stopped
/// waiting) is written as cancelled (clix-audit's [`Pending`]).
type PendingCall<'a> = Pending<'a, CallRecord>;

/// The line of a call of `tool` with `args` that starts now.
fn pending_call<'a>(runtime: &'a HubRuntime, tool: &str, args: &Map<String, Value>) -> PendingCall<'a> {
    let params = clix_audit::redact_json(args);
    // Parameters as the audit log keeps them (secret-named ones redacted).
    tracing::debug!(tool, params = %serde_json::Value::Object(params.clone()), "hub call");
    let record = CallRecord {
        tool: tool.to_string(),
        params,
        exit_code: clix_common::exit::NO_CODE,
        error_code: None,
        duration_ms: 0,
        stdout_bytes: 0,
        stderr_bytes: 0,
    };
    let sink = runtime.config.audit_log.as_ref().map(|log| (log, runtime.config.session.as_str()));
    Pending::new(sink, record)
}

/// Writes the call's line with its result.
fn finish_call(audit: &mut PendingCall<'_>, result: &CallResult) {
    audit.finish(|line| {
        line.exit_code = result.exit_code;
        line.error_code = result.error_code.clone();
        tracing::debug!(
            tool = %line.tool,
            exit_code = result.exit_code,
            error_code = result.error_code.as_deref().unwrap_or(""),
            "hub call finished"
        );
    });
}
