//! The hub inside `run` (seed 001): every ready tool is a command of its own
//! (`log-search --keyword timeout --limit 50`), and `hub list|info|search|
//! stats|check|call` lets the agent find and inspect them. `clix hub …`
//! runs this same command, so people and agents see the same thing.

use std::fmt::Write as _;
use std::sync::Arc;

use clix_command::{
    Added, AgentCommand, CallTime, Capability, CommandIo, CommandSpec, CommandStatus, LISTED_AT_MOST, Parts,
    USAGE_EXIT, async_trait, fail, read_stdin,
};
use serde_json::{Map, Value, json};

use crate::{CallResult, HubConfig, HubRuntime, Tool, usage};

/// The hub's tools as commands: `hub` itself, and each ready tool under its
/// own name, most used first when there are more than the description
/// lists. A call as a stage of a line gets the line's time and keeps up to
/// its memory budget, as a program in a line does.
#[async_trait]
impl Capability for HubConfig {
    async fn add(&self, parts: &Parts<'_>) -> Result<Added, clix_command::CapabilityError> {
        let mut hub = HubRuntime::load(self.clone(), parts.sandbox.clone(), Some(parts.workspace)).await;
        hub.stop_lines_past(parts.output_cap);
        refuse_taken_names(&mut hub, parts);
        let unavailable = hub
            .entries()
            .iter()
            .filter_map(|e| {
                let why = e.readiness.reason.as_ref()?;
                let name = &e.tool.manifest.name;
                Some((name.clone(), format!("[error] {name}: this hub tool is not ready: {why}\nhint: hub check\n")))
            })
            .collect();
        let problems = hub.problems().len();
        let hub = Arc::new(hub);
        // Usage counts come from reading the audit log: only paid for when
        // the hub is too large to list whole.
        let ready =
            if hub.ready().count() > LISTED_AT_MOST { hub.most_used(usize::MAX) } else { hub.ready().collect() };
        let tools: Vec<Arc<dyn AgentCommand>> = ready
            .into_iter()
            .map(|tool| Arc::new(HubTool::new(tool, Arc::clone(&hub), parts.time.clone())) as Arc<dyn AgentCommand>)
            .collect();
        let section = section(&tools);
        Ok(Added {
            commands: vec![Arc::new(HubCommand::new(Arc::clone(&hub), parts.time.clone()))],
            // `hub` stays callable without ready tools (people run `clix hub
            // check`), but is not offered to the model then: there is nothing to find.
            offered: !tools.is_empty(),
            section,
            tools,
            tools_run: Some((
                "sandbox",
                "a hub tool: its words are checked against its manifest, its program runs in the sandbox",
            )),
            unavailable,
            unknown_hint: (problems > 0)
                .then(|| format!("hint: {problems} hub manifest(s) could not be loaded; hub check shows why\n")),
            ..Added::default()
        })
    }
}

/// A tool named like a command taken before it, a shell builtin or `hub`
/// itself would be shadowed or shadow it: it is not ready, and says why. So
/// is a workspace's tool named like a program on the sandbox's PATH: a
/// cloned repository's `.clix/hub/git` would otherwise answer the model's
/// `git push`.
fn refuse_taken_names(hub: &mut HubRuntime, parts: &Parts<'_>) {
    let mut clashes: Vec<(String, String)> = Vec::new();
    for tool in hub.ready() {
        let name = &tool.manifest.name;
        if name == "hub" || (parts.taken)(name) {
            clashes
                .push((name.clone(), format!("its name is taken by the built-in command `{name}`; rename the tool")));
        } else if let Some(program) =
            parts.sandbox.as_ref().filter(|_| !tool.trusted).and_then(|s| s.program_path(name))
        {
            clashes.push((
                name.clone(),
                format!(
                    "a workspace's tool may not take the name of the program {}; rename the tool",
                    program.display()
                ),
            ));
        }
    }
    for (name, reason) in clashes {
        hub.set_not_ready(&name, reason);
    }
}

/// The hub section of the `run` description and of `help`, empty without
/// tools: one line per listed tool, then how to find the rest.
fn section(tools: &[Arc<dyn AgentCommand>]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let shown = &tools[..tools.len().min(LISTED_AT_MOST)];
    let width = shown.iter().map(|t| t.spec().name.len()).max().unwrap_or(0);
    let mut text = String::from("Hub tools (JSON output; <tool> --help for parameters):\n");
    for tool in shown {
        let spec = tool.spec();
        let _ = writeln!(text, "  {:width$}  {}", spec.name, spec.summary);
    }
    if tools.len() > shown.len() {
        let _ = writeln!(
            text,
            "  … {} more, the most used are listed: find the right one with hub search <what you need>",
            tools.len() - shown.len()
        );
    }
    text
}

use clix_command::flags::common::{JSON, limit};
use clix_command::flags::{Arity, Item, Misuse, Operand, Opt, Parsed, Syntax, Takes, pick_parsed};

const LIST: Syntax = Syntax::plain(
    "hub list",
    &[],
    &[
        Item::Shown(Opt { short: None, long: "--domain", takes: Takes::Text("D") }),
        Item::Shown(Opt { short: None, long: "--all", takes: Takes::Nothing }),
        Item::Shown(JSON),
    ],
);
const INFO: Syntax = Syntax::plain("hub info", &[Operand { shown: "<tool>", arity: Arity::One }], &[Item::Shown(JSON)]);
const SEARCH: Syntax = Syntax::plain(
    "hub search",
    &[Operand { shown: "<query>", arity: Arity::Many }],
    &[Item::Shown(limit("5")), Item::Shown(JSON)],
);
const STATS: Syntax =
    Syntax::plain("hub stats", &[Operand { shown: "[tool]", arity: Arity::Optional }], &[Item::Shown(JSON)]);
const CHECK: Syntax = Syntax::plain("hub check", &[], &[Item::Shown(JSON)]);
/// `--json` here carries the call's arguments; the output is always JSON.
const CALL: Syntax = Syntax::plain(
    "hub call",
    &[Operand { shown: "<tool>", arity: Arity::One }],
    &[Item::Shown(Opt { short: None, long: "--json", takes: Takes::Text("'{\"param\": value}'") })],
);

/// One ready hub tool as a command.
struct HubTool {
    spec: CommandSpec,
    hub: Arc<HubRuntime>,
    time: CallTime,
}

impl HubTool {
    fn new(tool: &Tool, hub: Arc<HubRuntime>, time: CallTime) -> Self {
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
        emit(&io, &self.hub, &self.spec.name, result).await
    }
}

/// The call's result as the stage's; output past the line's memory budget
/// stops the whole line, as a program's does (`StageRun`).
async fn emit(io: &CommandIo<'_>, hub: &HubRuntime, tool: &str, r: CallResult) -> bashkit::Result<CommandStatus> {
    if r.error_code.as_deref() == Some(crate::OUTPUT_LIMIT) {
        let limit = hub.line_output_cap().unwrap_or_default();
        return Err(bashkit::Error::ResourceLimit(bashkit::LimitExceeded::BuiltinOutput {
            command: tool.to_string(),
            limit,
        }));
    }
    io.stdout.write_all(&r.stdout).await?;
    io.stderr.write_all(r.stderr.as_bytes()).await?;
    Ok(CommandStatus::with_code(r.exit_code))
}

/// `hub …`: discovery and structured calls.
struct HubCommand {
    spec: CommandSpec,
    hub: Arc<HubRuntime>,
    time: CallTime,
}

impl HubCommand {
    fn new(hub: Arc<HubRuntime>, time: CallTime) -> Self {
        let summaries = [
            "the ready tools (--all: also those that are not, with why)",
            "a tool's usage, parameters, output schema and readiness",
            "the tools that best fit a request, ranked",
            "calls, success rate, p50/p95 latency, error codes",
            "every manifest problem, not-ready tool and version drift",
            "call a tool with JSON arguments (stdin if --json is absent)",
        ];
        let subcommands = SYNTAXES.iter().zip(summaries).map(|(syntax, summary)| syntax.spec(summary)).collect();
        let spec = CommandSpec {
            name: "hub".into(),
            summary: "external tools declared by manifests: hub list|info|search|stats|check|call".into(),
            usage: "hub list|info|search|stats|check|call".into(),
            subcommands,
            details: "Each ready tool is also a command: <tool> --help shows its parameters; its stdout is JSON,\n\
                      so pipe it to jq. Errors say [error] <tool>: CODE: message, then a hint."
                .into(),
            needs_args: true,
        };
        HubCommand { spec, hub, time }
    }
}

/// Every subcommand of `hub`, in the order `--help` lists them.
const SYNTAXES: [&Syntax; 6] = [&LIST, &INFO, &SEARCH, &STATS, &CHECK, &CALL];

#[async_trait]
impl AgentCommand for HubCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        // `hub ticket-info OPS-102`: a tool's name where a subcommand goes.
        // Small models write it so; the tool is a command of its own.
        if let Some(tool) = io.args.first().filter(|w| self.hub.entry(w).is_some())
            && !SYNTAXES.iter().any(|s| s.name.strip_prefix("hub ") == Some(tool.as_str()))
        {
            let example = if io.args.len() > 1 { format!(" or `{}`", io.args.join(" ")) } else { String::new() };
            let line = format!(
                "[error] hub: {tool} is a hub tool, not a subcommand: run it by its name (`{tool} --help`{example})\n"
            );
            return fail(&io, &line, USAGE_EXIT).await;
        }
        let (syntax, sub, args) = match pick_parsed(&io, &self.spec, &SYNTAXES).await? {
            Ok(chosen) => chosen,
            Err(status) => return Ok(status),
        };
        let hub = &self.hub;
        let json = args.on("--json");
        let first = args.operands.first().map(String::as_str);
        let (text, code) = match (syntax.subcommand(), first) {
            ("list", _) => (list(hub, &args), 0),
            ("info", Some(tool)) => info(hub, tool, json),
            ("search", _) => search(hub, &args.operands.join(" "), args.count("--limit").unwrap_or(5), json),
            ("stats", tool) => stats(hub, tool, json),
            ("check", _) if json => {
                // The report is the output, on stdout even when it finds problems (exit 1).
                let (report, code) = check_json(hub);
                io.stdout.write_all(report.as_bytes()).await?;
                return Ok(CommandStatus::with_code(code));
            }
            ("check", _) => check(hub),
            ("call", Some(tool)) => return self.call_json(&io, tool, args.text("--json")).await,
            // The syntax requires the tool's name.
            _ => return syntax.report(&io, &sub.summary, Misuse::Usage).await,
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
    /// `hub call <tool> --json '{…}'`: arguments as a JSON object (`given`, else stdin).
    async fn call_json(&self, io: &CommandIo<'_>, name: &str, given: Option<&str>) -> bashkit::Result<CommandStatus> {
        if self.hub.entry(name).is_none_or(|e| !e.readiness.ready) {
            let (text, code) = unknown_tool(&self.hub, name, clix_common::exit::NOT_FOUND);
            return fail(io, &text, code).await;
        }
        let text = match given {
            Some(text) => text.to_string(),
            None => String::from_utf8_lossy(&read_stdin(io).await?).into_owned(),
        };
        let parsed: Map<String, Value> =
            match serde_json::from_str::<Value>(if text.trim().is_empty() { "{}" } else { &text }) {
                Ok(Value::Object(map)) => map,
                Ok(other) => {
                    let usage = CALL.usage();
                    let msg =
                        format!("[error] hub call: the arguments must be a JSON object, not {other}. usage: {usage}\n");
                    return fail(io, &msg, USAGE_EXIT).await;
                }
                Err(e) => {
                    let msg = format!("[error] hub call: --json is not valid JSON ({e}). usage: {}\n", CALL.usage());
                    return fail(io, &msg, USAGE_EXIT).await;
                }
            };
        // The JSON is the arguments; stdin was used for them when --json was absent.
        let result = self.hub.call(name, &parsed, None, io.cwd, self.time.remaining()).await;
        emit(io, &self.hub, name, result).await
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
            let suggestion = clix_common::names::did_you_mean(name, names.iter().copied())
                .map(|s| format!(" Did you mean {s}?"))
                .unwrap_or_default();
            (format!("[error] hub: no tool {name}.{suggestion}\nhint: hub list, or hub search <words>\n"), code)
        }
    }
}

fn list(hub: &HubRuntime, args: &Parsed) -> String {
    let all = args.on("--all");
    let domain = args.text("--domain");
    let entries: Vec<_> = hub
        .entries()
        .iter()
        .filter(|e| all || e.readiness.ready)
        .filter(|e| domain.is_none_or(|d| e.tool.manifest.domain.as_deref() == Some(d)))
        .collect();
    if args.on("--json") {
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
    if hidden > 0 && !all {
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

/// `hub check --json`: the same findings as [`check`], as one object.
fn check_json(hub: &HubRuntime) -> (String, i32) {
    let entries = hub.entries();
    let not_ready: Vec<Value> = entries
        .iter()
        .filter_map(|e| {
            let reason = e.readiness.reason.as_ref()?;
            Some(json!({"tool": e.tool.manifest.name, "manifest_path": e.tool.manifest_path, "reason": reason}))
        })
        .collect();
    let drift: Vec<Value> = entries
        .iter()
        .filter_map(|e| {
            let drift = e.readiness.drift.as_ref()?;
            Some(json!({"tool": e.tool.manifest.name, "manifest_path": e.tool.manifest_path, "drift": drift}))
        })
        .collect();
    let ok = hub.problems().is_empty() && not_ready.is_empty();
    let report = json!({
        "ok": ok, "ready": hub.ready().count(), "problems": hub.problems(), "not_ready": not_ready, "drift": drift,
    });
    (report.to_string() + "\n", if ok { 0 } else { 1 })
}
