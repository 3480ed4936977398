//! MCP servers as commands: each enabled `[[mcp.server]]` of the person's
//! config is a command (`github list_issues --state open | jq …`) whose
//! tools are subcommands (this crate starts the server, turns flags into
//! arguments and the result into a command's), and `mcp search` ranks their
//! tools. [`McpConfig`] is the capability that adds them to an engine, after
//! every other capability: a name already taken keeps its meaning.
//!
//! Governance: the policy gate has decided the words before this command
//! runs (bashkit's hook sees `SERVER TOOL --flags…`, so a rule can name
//! `SERVER TOOL`, and a refused call never starts its server). Between
//! `prepare` and `call` this command applies the entry's `rate_limit` and
//! `serialize` through the hub's own machinery (keyed `SERVER TOOL`: counts
//! and locks shared by every clix process, or every machine with a shared
//! store), keeps the call within the line's time, then writes one audit
//! line (kind `mcp`, which `hub stats` counts as the tool `SERVER TOOL`; a
//! refused call's too), holds the output to the line's memory budget and
//! hands the result's images to the model as `see` does.

mod search;

use std::sync::Arc;

use crate::{CallResult, ListedTool, McpSettings, McpToolCall, Prepared, ServerEntry, Servers, Transport, Vars};
use clix_audit::{AuditLog, Pending};
use clix_command::{
    Added, AgentCommand, Capability, CommandIo, CommandSpec, CommandStatus, LISTED_AT_MOST, Parts, async_trait, fail,
};
use clix_common::exit;
use clix_hub::{Governance, McpCallRecord, Refusal};
use serde_json::Value;

use clix_command::CallTime;
use clix_command::SeenImages;

/// What an engine's MCP servers are made of, from the person's config.
#[derive(Clone)]
pub struct McpConfig {
    /// `[mcp]`: the servers (only the enabled ones become commands).
    pub settings: McpSettings,
    /// The session's domains (`hub.domains`, `--domain`): when set, only
    /// servers of those domains exist, as with hub tools.
    pub domains: Vec<String>,
    /// Reads the variables servers are given (their `env` names, their
    /// headers' `${NAME}`s): the process's secret store and environment.
    pub vars: Vars,
    /// Where each call's `kind: "mcp"` line goes.
    pub audit_log: Option<AuditLog>,
    /// Names this engine's calls in the audit log.
    pub session_id: String,
    /// Where `rate_limit` counts and `serialize` locks are: the hub's
    /// (the state folder, or the shared store).
    pub governance: Governance,
    /// Where each server's tool list is kept between sessions, for
    /// `mcp search`; `None` keeps none.
    pub tool_cache: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConfig")
            .field("settings", &self.settings)
            .field("domains", &self.domains)
            .field("audit_log", &self.audit_log)
            .field("session_id", &self.session_id)
            .field("governance", &self.governance)
            .field("tool_cache", &self.tool_cache)
            .finish_non_exhaustive()
    }
}

impl McpConfig {
    /// The enabled servers of the session's domains.
    fn in_scope(&self) -> McpSettings {
        let in_domain =
            |e: &ServerEntry| self.domains.is_empty() || e.domain.as_ref().is_some_and(|d| self.domains.contains(d));
        McpSettings { server: self.settings.server.iter().filter(|e| e.enabled && in_domain(e)).cloned().collect() }
    }
}

/// Each enabled server of the session's domains as a command (and `mcp`,
/// to search their tools), unless its name is taken (a command of ours, a
/// hub tool, a shell builtin keeps its meaning, and the server is reported).
/// Without an OS tier, stdio servers fail when used (the sandbox says why)
/// while HTTP ones still answer.
#[async_trait]
impl Capability for McpConfig {
    async fn add(&self, parts: &Parts<'_>) -> Result<Added, clix_command::CapabilityError> {
        let settings = self.in_scope();
        let root = parts.workspace.root();
        let (sandbox, host_mode) = match &parts.sandbox {
            Some(sandbox) => (Arc::clone(sandbox), sandbox.settings().mode == clix_sandbox::SandboxMode::Host),
            None => {
                let off = clix_sandbox::SandboxSettings { mode: clix_sandbox::SandboxMode::Off, ..Default::default() };
                (Arc::new(clix_sandbox::Sandbox::new(off, root, None, None, self.session_id.clone())), false)
            }
        };
        let mut servers = Servers::new(&settings, sandbox, root).with_vars(Arc::clone(&self.vars));
        if let Some(dir) = &self.tool_cache {
            servers = servers.with_tool_cache(crate::ToolCache::new(dir));
        }
        let servers = Arc::new(servers);
        let shared = McpShared {
            servers: Arc::clone(&servers),
            audit: self.audit_log.clone().map(|log| (log, self.session_id.clone())),
            seen: Arc::clone(parts.seen),
            time: parts.time.clone(),
            output_cap: parts.output_cap,
            host_mode,
            governance: self.governance.clone(),
        };
        let mut added = Added { offered: true, ..Added::default() };
        let mut listed = Vec::new();
        let mut known_tools = Vec::new();
        for entry in &settings.server {
            let name = &entry.name;
            if (parts.taken)(name) {
                let why = format!("its name is taken by the command `{name}`, which keeps it; rename the server");
                tracing::warn!(server = %name, "MCP server not a command: {why}");
                added.notices.push(format!("MCP server {name} is not a command: {why}"));
                continue;
            }
            let server = McpServer::new(entry, &shared);
            listed.push((name.clone(), server.spec.summary.clone()));
            known_tools.extend(servers.known_tools(name).unwrap_or_default().into_iter().map(|t| (name.clone(), t)));
            added.tools.push(Arc::new(server));
        }
        // `mcp search`, unless a server or another command has the name (it keeps it).
        let names: Vec<String> = listed.iter().map(|(name, _)| name.clone()).collect();
        if !names.is_empty() && !names.iter().any(|n| n == "mcp") && !(parts.taken)("mcp") {
            added.commands.push(Arc::new(search::McpCommand::new(servers, names, host_mode, parts.time.clone())));
        }
        added.placeholder = Some(("mcp", section(&listed, &known_tools)));
        Ok(added)
    }
}

/// The MCP servers' part of the `run` description (its `{mcp}`) and of
/// `help`, empty without servers: one line per server (its name and
/// description), and its tools while few are known.
fn section(servers: &[(String, String)], known_tools: &[(String, ListedTool)]) -> String {
    if servers.is_empty() {
        return String::new();
    }
    let width = servers.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let mut text = String::from(
        "MCP servers (each a command: <server> --help lists its tools, <server> <tool> --help its flags; \
         structured results are JSON):\n",
    );
    // Their tools too while few are known (seed 001, as for the hub), so
    // the first call can be the right one: how each is called and the shape
    // of its result, so one line can call it and filter the result. Known
    // from an earlier session's list, never by starting a server for a
    // description.
    let tools = if known_tools.len() <= LISTED_AT_MOST { known_tools } else { &[] };
    for (server, summary) in servers {
        text.push_str(&format!("  {server:width$}  {summary}\n"));
        for (_, tool) in tools.iter().filter(|(of, _)| of == server) {
            // Written whole, server first: a model that sees the tool
            // indented under its server alone calls it by another name.
            let call = if tool.synopsis.is_empty() { &tool.name } else { &tool.synopsis };
            let output = if tool.output.is_empty() { String::new() } else { format!(" → {}", tool.output) };
            let summary = tool.description.lines().next().unwrap_or_default();
            text.push_str(&format!("    {server} {call}{output}\n      {summary}\n"));
        }
    }
    text
}

/// One MCP server as a command.
struct McpServer {
    spec: CommandSpec,
    /// Its entry: the limits of its tools.
    entry: ServerEntry,
    servers: Arc<Servers>,
    governance: Governance,
    /// Why it cannot run here (a stdio server with `sandbox.mode = "host"`).
    refused: Option<String>,
    audit: Option<(AuditLog, String)>,
    seen: SeenImages,
    time: CallTime,
    /// The line's memory budget: a result past it stops the line.
    output_cap: usize,
}

/// What every server command shares.
struct McpShared {
    servers: Arc<Servers>,
    audit: Option<(AuditLog, String)>,
    seen: SeenImages,
    time: CallTime,
    output_cap: usize,
    /// `sandbox.mode = "host"`: a stdio server would run unsandboxed.
    host_mode: bool,
    governance: Governance,
}

impl McpServer {
    fn new(entry: &ServerEntry, shared: &McpShared) -> Self {
        let name = &entry.name;
        let description = entry.description.split_whitespace().collect::<Vec<_>>().join(" ");
        let summary =
            if description.is_empty() { "an MCP server (no description in its entry)".into() } else { description };
        let how = match entry.transport() {
            Transport::Stdio => "a program of your config, run in the sandbox from its first use to the session's end",
            Transport::Http => "reached over streamable HTTP",
        };
        let spec = CommandSpec {
            name: name.clone(),
            summary,
            usage: format!("{name} [--help | <tool> [--flag value…] [--json '{{…}}'] | <tool> --help]"),
            subcommands: Vec::new(),
            details: format!(
                "An MCP server ({how}); its tools are subcommands.\n\
                 {name} --help                 its tools, one line each\n\
                 {name} <tool> --help          a tool's flags, from its input schema (types, defaults, values)\n\
                 {name} <tool> --flag value…   a call; lists repeat a flag; --json '{{…}}' gives nested objects\n\
                 Structured results are JSON on stdout (pipe them to jq); a tool's error exits 1 with its text\n\
                 on stderr; images are attached for you to view, as with see."
            ),
            needs_args: false,
        };
        let refused = (shared.host_mode && entry.transport() == Transport::Stdio).then(|| {
            format!(
                "[error] {name}: sandbox.mode = \"host\" would run this MCP server unsandboxed; stdio servers run \
                 only in the sandbox. Set sandbox.mode = \"bwrap\" (apt-get install bubblewrap)\n"
            )
        });
        McpServer {
            spec,
            entry: entry.clone(),
            servers: Arc::clone(&shared.servers),
            governance: shared.governance.clone(),
            refused,
            audit: shared.audit.clone(),
            seen: Arc::clone(&shared.seen),
            time: shared.time.clone(),
            output_cap: shared.output_cap,
        }
    }
}

#[async_trait]
impl AgentCommand for McpServer {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    /// `SERVER --help` lists the server's tools, which only it knows.
    fn answers_help(&self) -> bool {
        true
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let name = &self.spec.name;
        if let Some(why) = &self.refused {
            return fail(&io, why, exit::CANNOT_RUN).await;
        }
        let limit = self.time.remaining();
        let call = match tokio::time::timeout(limit, self.servers.prepare(name, io.args)).await {
            Ok(Prepared::Call(call)) => call,
            Ok(Prepared::Done(result)) => return self.emit(&io, result).await,
            Err(_) => {
                let line = format!(
                    "[error] {name}: the MCP server did not start or list its tools within the line's {} s left; \
                     the next call tries again\n",
                    limit.as_secs()
                );
                return fail(&io, &line, exit::TIMEOUT).await;
            }
        };
        let mut audit = PendingCall::new(self.audit.as_ref(), &call);
        let key = format!("{name} {}", call.tool);
        let _held = match self.govern(&key, &call.tool).await {
            Ok(held) => held,
            Err(refusal) => {
                let result = CallResult::error(refusal.exit_code, refusal.text(&key));
                audit.refused(&result, refusal.code);
                return self.emit(&io, result).await;
            }
        };
        let result = match tokio::time::timeout(self.time.remaining(), self.servers.call(&call)).await {
            Ok(result) => result,
            Err(_) => CallResult::error(
                exit::TIMEOUT,
                format!(
                    "[error] {name} {}: no result within the line's time limit ({} s in all); ask for less, or \
                     raise [limits] timeout_secs",
                    call.tool,
                    self.time.limit.as_secs()
                ),
            ),
        };
        audit.finish(&result, self.too_big(&result));
        self.emit(&io, result).await
    }
}

impl McpServer {
    /// The tool's `rate_limit` and `serialize`, as the hub applies its
    /// tools': a slot counted, then the lock waited for within what is left
    /// of the line's time (held until the returned guard is dropped).
    async fn govern(&self, key: &str, tool: &str) -> Result<Option<clix_hub::Held>, Refusal> {
        if let Some(per_minute) = self.entry.rate_limit_of(tool) {
            self.governance.take_slot(key, per_minute)?;
        }
        if !self.entry.serializes(tool) {
            return Ok(None);
        }
        self.governance.serialize(key, self.time.remaining()).await.map(Some)
    }

    /// Whether `result` is past the line's memory budget.
    fn too_big(&self, result: &CallResult) -> bool {
        result.stdout.len() > self.output_cap || result.stderr.len() > self.output_cap
    }

    /// The result as the stage's: its bytes and code, its images attached;
    /// output past the line's memory budget stops the line, as a program's does.
    async fn emit(&self, io: &CommandIo<'_>, result: CallResult) -> bashkit::Result<CommandStatus> {
        if self.too_big(&result) {
            return Err(bashkit::Error::ResourceLimit(bashkit::LimitExceeded::BuiltinOutput {
                command: self.spec.name.clone(),
                limit: self.output_cap,
            }));
        }
        io.stdout.write_all(&result.stdout).await?;
        io.stderr.write_all(&result.stderr).await?;
        for (i, image) in result.images.iter().enumerate() {
            let label = format!("{} image {}", self.spec.name, i + 1);
            match clix_command::decode_off_thread(&label, image.data.clone()).await {
                Ok(seen) => {
                    let line = format!(
                        "[{label}: {} {}x{}, attached for viewing]\n",
                        seen.mime.trim_start_matches("image/").to_uppercase(),
                        seen.width,
                        seen.height
                    );
                    match clix_command::attach(&self.seen, seen, &self.spec.name) {
                        Ok(()) => io.stderr.write_all(line.as_bytes()).await?,
                        Err(message) => io.stderr.write_all(message.to_string().as_bytes()).await?,
                    }
                }
                Err(message) => io.stderr.write_all(message.to_string().as_bytes()).await?,
            }
        }
        Ok(CommandStatus::with_code(result.exit_code))
    }
}

/// A call's audit line, written when it ends; one that never ends (the
/// line was cancelled) is written as cancelled (clix-audit's [`Pending`]).
struct PendingCall<'a>(Pending<'a, McpCallRecord>);

impl<'a> PendingCall<'a> {
    fn new(audit: Option<&'a (AuditLog, String)>, call: &McpToolCall) -> Self {
        let record = McpCallRecord {
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments: clix_audit::redact_json(&call.arguments),
            exit_code: exit::NO_CODE,
            error_code: None,
            duration_ms: 0,
            stdout_bytes: 0,
            stderr_bytes: 0,
            images: 0,
        };
        let arguments = Value::Object(record.arguments.clone());
        tracing::debug!(server = %call.server, tool = %call.tool, %arguments, "mcp call");
        PendingCall(Pending::new(audit.map(|(log, session)| (log, session.as_str())), record))
    }

    fn finish(&mut self, result: &CallResult, too_big: bool) {
        self.0.finish(|record| {
            record.exit_code = result.exit_code;
            record.error_code = match result.exit_code {
                _ if too_big => Some("OUTPUT_LIMIT".into()),
                exit::TIMEOUT => Some("TIMEOUT".into()),
                _ => None,
            };
            record.stdout_bytes = result.stdout.len() as u64;
            record.stderr_bytes = result.stderr.len() as u64;
            record.images = result.images.len() as u64;
            log_finished(record);
        });
    }

    /// A call clix refused before making it (`RATE_LIMITED`, `BUSY`, …).
    fn refused(&mut self, result: &CallResult, code: &str) {
        self.0.finish(|record| {
            record.exit_code = result.exit_code;
            record.error_code = Some(code.to_string());
            record.stderr_bytes = result.stderr.len() as u64;
            log_finished(record);
        });
    }
}

fn log_finished(record: &McpCallRecord) {
    tracing::debug!(server = %record.server, tool = %record.tool, exit_code = record.exit_code, "mcp call finished");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known tools are listed under their server while there are at most
    /// [`LISTED_AT_MOST`] of them in all; past that, servers only.
    #[test]
    fn known_tools_are_listed_up_to_the_limit() {
        let servers = [("a".to_string(), "a's tools".to_string()), ("b".to_string(), "b's tools".to_string())];
        for (known, listed) in [(0, 0), (3, 3), (LISTED_AT_MOST, LISTED_AT_MOST), (LISTED_AT_MOST + 1, 0)] {
            let known_tools: Vec<(String, ListedTool)> = (0..known)
                .map(|i| {
                    let server = if i % 2 == 0 { "a" } else { "b" };
                    let tool = ListedTool {
                        name: format!("tool{i}"),
                        description: format!("does {i}\nin detail"),
                        parameters: vec!["n".into()],
                        synopsis: format!("tool{i} --n <integer>"),
                        output: if i == 0 { "{rows:[{id}]}".into() } else { String::new() },
                    };
                    (server.to_string(), tool)
                })
                .collect();
            let section = section(&servers, &known_tools);
            let lines: Vec<&str> =
                section.lines().filter(|l| l.starts_with("    a tool") || l.starts_with("    b tool")).collect();
            assert_eq!(lines.len(), listed, "{known} known:\n{section}");
            // How each is called, its result's shape when it has one, and
            // its summary on the line after.
            if listed > 0 {
                assert!(section.contains("    a tool0 --n <integer> → {rows:[{id}]}\n      does 0\n"), "{section}");
            }
            if listed > 1 {
                assert!(section.contains("    b tool1 --n <integer>\n      does 1\n"), "{section}");
                // Each under its own server.
                let b = section.find("  b  ").unwrap();
                assert!(
                    section.find("    b tool1 ").unwrap() > b && section.find("    a tool0 ").unwrap() < b,
                    "{section}"
                );
            }
        }
        assert_eq!(section(&[], &[]), "", "no servers, no section");
    }
}
