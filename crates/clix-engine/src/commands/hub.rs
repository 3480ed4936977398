//! The hub inside `run` (seed 001): every ready tool is a command of its own
//! (`log-search --keyword timeout --limit 50`), and `hub list|info|search|
//! stats|check|call` lets the agent find and inspect them. `clix hub …`
//! runs this same command, so people and agents see the same thing.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use clix_hub::{CallResult, HubRuntime, Tool, usage};
use clix_shell::{
    AgentCommand, CommandIo, CommandSpec, CommandStatus, SubcommandSpec, USAGE_EXIT, async_trait, fail, read_stdin,
    usage_error,
};
use serde_json::{Map, Value, json};

use super::Deadline;

const LIST: &str = "hub list [--domain D] [--all] [--json]";
const INFO: &str = "hub info <tool> [--json]";
const SEARCH: &str = "hub search <query> [-k 5] [--json]";
const STATS: &str = "hub stats [tool] [--json]";
const CHECK: &str = "hub check";
const CALL: &str = "hub call <tool> --json '{\"param\": value}'";

/// How a tool call gets its time: what is left of the line's limit.
#[derive(Clone)]
pub(crate) struct CallTime {
    pub(crate) deadline: Deadline,
    pub(crate) limit: Duration,
}

impl CallTime {
    fn remaining(&self) -> Duration {
        self.deadline.remaining(self.limit)
    }
}

/// One ready hub tool as a command.
pub(crate) struct HubTool {
    spec: CommandSpec,
    hub: Arc<HubRuntime>,
    time: CallTime,
}

impl HubTool {
    pub(crate) fn new(tool: &Tool, hub: Arc<HubRuntime>, time: CallTime) -> Self {
        let m = &tool.manifest;
        let full = usage(m);
        // usage() starts with "usage: <synopsis>\n<description>\n"; the spec holds those apart.
        let synopsis = full.lines().next().unwrap_or("").trim_start_matches("usage: ").to_string();
        let details = full.lines().skip(2).collect::<Vec<_>>().join("\n").trim().to_string();
        let spec = CommandSpec {
            name: m.name.clone(),
            summary: format!("{} (hub tool, JSON out)", m.description),
            usage: synopsis,
            subcommands: Vec::new(),
            details,
            // A bare call is a call: a tool whose parameters all have defaults runs.
            needs_args: false,
        };
        HubTool { spec, hub, time }
    }
}

#[async_trait]
impl AgentCommand for HubTool {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let stdin = read_stdin(&io).await?;
        let stdin = (!stdin.is_empty()).then_some(stdin.as_slice());
        let result = self.hub.call_words(&self.spec.name, io.args, stdin, io.cwd, self.time.remaining()).await;
        emit(&io, result).await
    }
}

async fn emit(io: &CommandIo<'_>, r: CallResult) -> bashkit::Result<CommandStatus> {
    io.stdout.write_all(&r.stdout).await?;
    io.stderr.write_all(r.stderr.as_bytes()).await?;
    Ok(CommandStatus::with_code(r.exit_code))
}

/// `hub …`: discovery and structured calls.
pub(crate) struct HubCommand {
    spec: CommandSpec,
    hub: Arc<HubRuntime>,
    time: CallTime,
}

impl HubCommand {
    pub(crate) fn new(hub: Arc<HubRuntime>, time: CallTime) -> Self {
        let sub = SubcommandSpec::new;
        let spec = CommandSpec {
            name: "hub".into(),
            summary: "external tools declared by manifests: hub list|info|search|stats|check|call".into(),
            usage: "hub list|info|search|stats|check|call".into(),
            subcommands: vec![
                sub("list", LIST, "the ready tools (--all: also those that are not, with why)"),
                sub("info", INFO, "a tool's usage, parameters, output schema and readiness"),
                sub("search", SEARCH, "the tools that best fit a request, ranked"),
                sub("stats", STATS, "calls, success rate, p50/p95 latency, error codes"),
                sub("check", CHECK, "every manifest problem, not-ready tool and version drift"),
                sub("call", CALL, "call a tool with JSON arguments (stdin if --json is absent)"),
            ],
            details: "Each ready tool is also a command: <tool> --help shows its parameters; its stdout is JSON,\n\
                      so pipe it to jq. Errors say [error] <tool>: CODE: message, then a hint."
                .into(),
            needs_args: true,
        };
        HubCommand { spec, hub, time }
    }
}

/// Flags shared by the subcommands, and the words left over.
#[derive(Default)]
struct Args {
    json: Option<String>,
    as_json: bool,
    all: bool,
    domain: Option<String>,
    k: Option<usize>,
    words: Vec<String>,
}

fn parse(sub: &str, args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--json" if sub == "call" => a.json = Some(value(arg)?),
            "--json" => a.as_json = true,
            "--all" => a.all = true,
            "--domain" => a.domain = Some(value(arg)?),
            "-k" | "-n" => {
                let v = value(arg)?;
                a.k = Some(v.parse().map_err(|_| format!("{arg} needs a number, not {v:?}"))?);
            }
            flag if flag.starts_with('-') && flag.len() > 1 => return Err(format!("unknown option {flag}")),
            _ => a.words.push(arg.clone()),
        }
    }
    Ok(a)
}

#[async_trait]
impl AgentCommand for HubCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        let (sub, rest) = match self.spec.pick_subcommand(io.args) {
            Ok(picked) => picked,
            Err(line) => return fail(&io, &line, USAGE_EXIT).await,
        };
        let who = format!("hub {}", sub.name);
        let args = match parse(&sub.name, rest) {
            Ok(args) => args,
            Err(e) => return fail(&io, &format!("[error] {who}: {e}. usage: {}\n", sub.usage), USAGE_EXIT).await,
        };
        let needs_word = matches!(sub.name.as_str(), "info" | "search" | "call");
        if needs_word && args.words.is_empty() {
            return usage_error(&io, &who, &sub.usage).await;
        }
        let hub = &self.hub;
        let (text, code) = match sub.name.as_str() {
            "list" => (list(hub, &args), 0),
            "info" => info(hub, &args.words[0], args.as_json),
            "search" => search(hub, &args.words.join(" "), args.k.unwrap_or(5), args.as_json),
            "stats" => stats(hub, args.words.first().map(String::as_str), args.as_json),
            "check" => check(hub),
            _ => return self.call_json(&io, &args).await,
        };
        if code == 0 {
            io.stdout.write_all(text.as_bytes()).await?;
            Ok(CommandStatus::success())
        } else {
            fail(&io, &text, code).await
        }
    }
}

impl HubCommand {
    /// `hub call <tool> --json '{…}'`: arguments as a JSON object.
    async fn call_json(&self, io: &CommandIo<'_>, args: &Args) -> bashkit::Result<CommandStatus> {
        let name = &args.words[0];
        if self.hub.entry(name).is_none_or(|e| !e.readiness.ready) {
            let (text, code) = unknown_tool(&self.hub, name, clix_common::exit::NOT_FOUND);
            return fail(io, &text, code).await;
        }
        let text = match &args.json {
            Some(text) => text.clone(),
            None => String::from_utf8_lossy(&read_stdin(io).await?).into_owned(),
        };
        let parsed: Map<String, Value> =
            match serde_json::from_str::<Value>(if text.trim().is_empty() { "{}" } else { &text }) {
                Ok(Value::Object(map)) => map,
                Ok(other) => {
                    let msg =
                        format!("[error] hub call: the arguments must be a JSON object, not {other}. usage: {CALL}\n");
                    return fail(io, &msg, 2).await;
                }
                Err(e) => {
                    let msg = format!("[error] hub call: --json is not valid JSON ({e}). usage: {CALL}\n");
                    return fail(io, &msg, 2).await;
                }
            };
        // The JSON is the arguments; stdin was used for them when --json was absent.
        let result = self.hub.call(name, &parsed, None, io.cwd, self.time.remaining()).await;
        emit(io, result).await
    }
}

/// Why `name` cannot be used, with `code`: 127 for a call (as a command
/// that does not exist), 1 for a lookup such as `hub info`.
fn unknown_tool(hub: &HubRuntime, name: &str, code: i32) -> (String, i32) {
    match hub.entry(name) {
        Some(e) => {
            let why = e.readiness.reason.as_deref().unwrap_or("not ready");
            (format!("[error] hub: {name} is not ready: {why}\nhint: hub check shows every problem\n"), code)
        }
        None => {
            let names: Vec<&str> = hub.ready().map(|t| t.manifest.name.as_str()).collect();
            let suggestion = clix_hub::problem::did_you_mean(name, names.iter().copied())
                .map(|s| format!(" Did you mean {s}?"))
                .unwrap_or_default();
            (format!("[error] hub: no tool {name}.{suggestion}\nhint: hub list, or hub search <words>\n"), code)
        }
    }
}

fn list(hub: &HubRuntime, args: &Args) -> String {
    let entries: Vec<_> = hub
        .entries()
        .iter()
        .filter(|e| args.all || e.readiness.ready)
        .filter(|e| args.domain.as_ref().is_none_or(|d| e.tool.manifest.domain.as_ref() == Some(d)))
        .collect();
    if args.as_json {
        let tools: Vec<Value> = entries
            .iter()
            .map(|e| {
                let m = &e.tool.manifest;
                json!({
                    "name": m.name, "version": m.version, "description": m.description, "domain": m.domain,
                    "ready": e.readiness.ready, "reason": e.readiness.reason, "drift": e.readiness.drift,
                    "manifest_path": e.tool.manifest_path, "program": e.tool.program,
                })
            })
            .collect();
        return json!({"tools": tools, "problems": hub.problems()}).to_string() + "\n";
    }
    let mut out = String::new();
    if entries.is_empty() {
        out.push_str("(no tools; put manifests in .clix/hub/ or pass --hub DIR)\n");
    }
    let width = entries.iter().map(|e| e.tool.manifest.name.len()).max().unwrap_or(0);
    let version_width = entries.iter().map(|e| e.tool.manifest.version.len()).max().unwrap_or(0);
    for e in &entries {
        let m = &e.tool.manifest;
        let domain = m.domain.as_deref().map(|d| format!("[{d}] ")).unwrap_or_default();
        let _ = writeln!(out, "{:width$}  {:version_width$}  {domain}{}", m.name, m.version, m.description);
        if let Some(reason) = &e.readiness.reason {
            let _ = writeln!(out, "{:width$}  NOT READY: {reason}", "");
        }
        if let Some(drift) = &e.readiness.drift {
            let _ = writeln!(out, "{:width$}  warning: version drift: {drift}", "");
        }
    }
    let hidden = hub.entries().iter().filter(|e| !e.readiness.ready).count();
    if hidden > 0 && !args.all {
        let _ = writeln!(out, "({hidden} tool(s) not ready: hub list --all)");
    }
    if !hub.problems().is_empty() {
        let _ = writeln!(out, "({} manifest problem(s): hub check)", hub.problems().len());
    }
    out
}

fn info(hub: &HubRuntime, name: &str, as_json: bool) -> (String, i32) {
    let Some(entry) = hub.entry(name) else { return unknown_tool(hub, name, 1) };
    let (tool, m) = (&entry.tool, &entry.tool.manifest);
    if as_json {
        let v = json!({"manifest": m, "manifest_path": tool.manifest_path, "program": tool.program,
                       "ready": entry.readiness.ready, "reason": entry.readiness.reason, "drift": entry.readiness.drift});
        return (v.to_string() + "\n", 0);
    }
    let mut out = usage(m);
    if !m.permissions.is_empty() {
        let _ = writeln!(out, "\npermissions: {}", m.permissions.join(", "));
    }
    if let Some(schema) = &m.output.schema {
        let _ = writeln!(out, "\noutput: JSON matching {schema}");
    }
    let _ = writeln!(out, "\nversion: {}  domain: {}", m.version, m.domain.as_deref().unwrap_or("-"));
    let _ = writeln!(out, "manifest: {}\nprogram:  {}", tool.manifest_path.display(), tool.program.display());
    match &entry.readiness.reason {
        Some(reason) => {
            let _ = writeln!(out, "NOT READY: {reason}");
        }
        None => out.push_str("ready\n"),
    }
    if let Some(drift) = &entry.readiness.drift {
        let _ = writeln!(out, "warning: version drift: {drift}");
    }
    (out, 0)
}

fn search(hub: &HubRuntime, query: &str, k: usize, as_json: bool) -> (String, i32) {
    let found = match hub.search(query, k) {
        Ok(found) => found,
        Err(e) => return (format!("[error] hub search: {e}\n"), 1),
    };
    if as_json {
        return (serde_json::to_string(&found).unwrap_or_default() + "\n", 0);
    }
    if found.is_empty() {
        return ("(no tool matches; try other words, or hub list)\n".into(), 0);
    }
    let width = found.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let rows = found.iter().map(|f| format!("{:width$}  {:.2}  {}\n", f.name, f.score, f.description)).collect();
    (rows, 0)
}

fn stats(hub: &HubRuntime, tool: Option<&str>, as_json: bool) -> (String, i32) {
    let all = match hub.stats(tool) {
        Ok(all) => all,
        Err(e) => return (format!("[error] hub stats: {e}\n"), 1),
    };
    if as_json {
        return (serde_json::to_string(&all).unwrap_or_default() + "\n", 0);
    }
    if all.is_empty() {
        return ("(no calls recorded yet)\n".into(), 0);
    }
    let width = all.iter().map(|s| s.tool.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:width$}  calls  success  p50_ms  p95_ms  errors\n", "tool");
    for s in &all {
        let errors: Vec<String> = s.errors.iter().map(|(code, n)| format!("{code}:{n}")).collect();
        let errors = if errors.is_empty() { "-".to_string() } else { errors.join(" ") };
        let _ = writeln!(
            out,
            "{:width$}  {:>5}  {:>6.1}%  {:>6}  {:>6}  {errors}",
            s.tool,
            s.calls,
            s.success_rate * 100.0,
            s.p50_ms,
            s.p95_ms
        );
    }
    (out, 0)
}

/// Every problem of the hub; exits 1 when a manifest is bad or a tool is
/// not ready (the seed's fail-fast), version drift alone only warns.
fn check(hub: &HubRuntime) -> (String, i32) {
    let mut out = String::new();
    for p in hub.problems() {
        let _ = writeln!(out, "{p}");
    }
    let mut not_ready = 0;
    for e in hub.entries() {
        let file = e.tool.manifest_path.display();
        if let Some(reason) = &e.readiness.reason {
            not_ready += 1;
            let _ = writeln!(out, "{file}: self_test: {reason} (fix the tool, or its self_test args)");
        }
        if let Some(drift) = &e.readiness.drift {
            let _ = writeln!(out, "{file}: version: warning: {drift} (update `version` in the manifest)");
        }
    }
    let ready = hub.ready().count();
    if hub.problems().is_empty() && not_ready == 0 {
        let _ = writeln!(out, "ok: {ready} tool(s) ready, no problems");
        (out, 0)
    } else {
        let _ = writeln!(
            out,
            "{} manifest problem(s), {not_ready} tool(s) not ready; {ready} tool(s) ready",
            hub.problems().len()
        );
        (out, 1)
    }
}
