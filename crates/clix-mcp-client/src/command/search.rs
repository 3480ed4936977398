//! `mcp search QUERY`: the MCP servers' tools that fit a request, best
//! first, when there are too many servers to read each one's `--help`.
//! A command of its own rather than part of `hub search`: hub tools are
//! loaded with the session and always searchable, while a server's tools
//! are known only once it runs. So each server's list comes from this
//! session (if it ran), else from the list clix-mcp-client kept when it last
//! started (its `ToolCache`), else by starting it now; servers that cannot
//! start are named. The ranking is the hub's (`clix_hub::rank`), over
//! `SERVER TOOL`, the description and the parameters' names.

use std::sync::Arc;

use crate::{ListedTool, Servers, Transport};
use clix_command::{AgentCommand, CommandIo, CommandSpec, CommandStatus, async_trait, fail};
use clix_common::exit;
use serde_json::json;

use clix_command::CallTime;
use clix_command::flags::common::{JSON, limit};
use clix_command::flags::{Arity, Item, Operand, Syntax, pick_parsed};

const SEARCH: Syntax = Syntax::plain(
    "mcp search",
    &[Operand { shown: "<query>", arity: Arity::Many }],
    &[Item::Shown(limit("10")), Item::Shown(JSON)],
);

const SYNTAXES: [&Syntax; 1] = [&SEARCH];

/// `mcp …`: finding tools among the session's MCP servers.
pub(super) struct McpCommand {
    spec: CommandSpec,
    servers: Arc<Servers>,
    /// The servers that are commands, in the config's order.
    names: Vec<String>,
    /// `sandbox.mode = "host"`: stdio servers are not started (they would run unsandboxed).
    host_mode: bool,
    time: CallTime,
}

/// The tools found and the servers that could not be read.
struct Searched {
    found: Vec<(String, String, String, f64)>,
    not_started: Vec<(String, String)>,
}

impl McpCommand {
    pub(super) fn new(servers: Arc<Servers>, names: Vec<String>, host_mode: bool, time: CallTime) -> Self {
        let subcommands =
            vec![SEARCH.spec("the servers' tools that best fit a request, ranked: SERVER TOOL — description")];
        let spec = CommandSpec {
            name: "mcp".into(),
            summary: "find tools among the MCP servers: mcp search QUERY".into(),
            usage: "mcp search <query> [-n N] [--json]".into(),
            subcommands,
            details: "Searches every server's tool names and descriptions (a server whose tools are not known yet\n\
                      is started for it). Then `SERVER TOOL --help` shows a tool's flags."
                .into(),
            needs_args: true,
        };
        McpCommand { spec, servers, names, host_mode, time }
    }

    /// The server with a known tool named `word`, when `word` is not one of
    /// this command's own: `mcp TOOL` is a server's tool called by the
    /// wrong name, as small models write it. Never starts a server.
    fn server_of(&self, word: &str) -> Option<&str> {
        if self.spec.subcommands.iter().any(|s| s.name == word) || word.starts_with('-') {
            return None;
        }
        self.names
            .iter()
            .map(String::as_str)
            .find(|name| self.servers.known_tools(name).is_some_and(|tools| tools.iter().any(|t| t.name == word)))
    }

    /// Each server's tools: known without starting it, or by starting it.
    async fn search(&self, query: &str, k: usize) -> Result<Searched, String> {
        let mut rows = Vec::new();
        let mut not_started = Vec::new();
        for name in &self.names {
            let tools = match self.servers.known_tools(name) {
                Some(tools) => tools,
                None => match self.start(name).await {
                    Ok(tools) => tools,
                    Err(why) => {
                        not_started.push((name.clone(), why));
                        continue;
                    }
                },
            };
            rows.extend(tools.into_iter().map(|t| (format!("{name} {}", t.name), t.description, t.parameters)));
        }
        let found = clix_hub::rank(rows, query, k)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|f| {
                let (server, tool) = f.name.split_once(' ').unwrap_or((f.name.as_str(), ""));
                (server.to_string(), tool.to_string(), f.description, f.score)
            })
            .collect();
        Ok(Searched { found, not_started })
    }

    /// Starts `name` to list its tools (which keeps the list for next time).
    async fn start(&self, name: &str) -> Result<Vec<ListedTool>, String> {
        let stdio = self.servers.entries().iter().any(|e| e.name == name && e.transport() == Transport::Stdio);
        if self.host_mode && stdio {
            return Err("sandbox.mode = \"host\": stdio servers run only in the sandbox".into());
        }
        tracing::debug!(server = name, "mcp search: no list of its tools yet; starting it");
        match tokio::time::timeout(self.time.remaining(), self.servers.tools(name)).await {
            Ok(Ok(tools)) => Ok(tools.iter().map(ListedTool::from).collect()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("it did not start and list its tools within the line's time".into()),
        }
    }
}

#[async_trait]
impl AgentCommand for McpCommand {
    fn spec(&self) -> &CommandSpec {
        &self.spec
    }

    async fn run(&self, io: CommandIo<'_>) -> bashkit::Result<CommandStatus> {
        // `mcp SERVER TOOL …`: the server is a command of its own. Said,
        // not run for the caller: a policy rule names `SERVER TOOL`, and a
        // line that reaches it another way must not slip past the rule.
        if let Some(server) = io.args.first().filter(|word| self.names.contains(word)) {
            let line = io.args.join(" ");
            let message = format!(
                "[error] mcp: {server} is a command of its own: run `{line}` without `mcp` \
                 (`{server} --help` lists its tools)\n"
            );
            return fail(&io, &message, exit::USAGE).await;
        }
        if let Some(server) = io.args.first().and_then(|word| self.server_of(word)) {
            let tool = &io.args[0];
            let message = format!(
                "[error] mcp: `{tool}` is a tool of the MCP server {server}: run it as `{server} {tool} …` \
                 (`{server} {tool} --help` shows its flags)\n"
            );
            return fail(&io, &message, exit::USAGE).await;
        }
        let (_, _, args) = match pick_parsed(&io, &self.spec, &SYNTAXES).await? {
            Ok(chosen) => chosen,
            Err(status) => return Ok(status),
        };
        let query = args.operands.join(" ");
        let searched = match self.search(&query, args.count("--limit").unwrap_or(10)).await {
            Ok(searched) => searched,
            Err(e) => return fail(&io, &format!("[error] mcp search: {e}\n"), exit::FAILURE).await,
        };
        let out = if args.on("--json") { as_json(&searched) } else { as_text(&searched) };
        io.stdout.write_all(out.as_bytes()).await?;
        for (server, why) in &searched.not_started {
            let first = why.lines().next().unwrap_or_default();
            let line = format!("mcp search: {server} could not start, its tools were not searched: {first}\n");
            io.stderr.write_all(line.as_bytes()).await?;
        }
        // Nothing could be searched at all: a failure, not an empty answer.
        if searched.not_started.len() == self.names.len() && !self.names.is_empty() {
            return Ok(CommandStatus::with_code(exit::FAILURE));
        }
        Ok(CommandStatus::success())
    }
}

fn as_text(searched: &Searched) -> String {
    if searched.found.is_empty() {
        return "(no tool matches; try other words, or SERVER --help)\n".into();
    }
    searched
        .found
        .iter()
        .map(|(server, tool, description, _)| {
            let line = description.lines().next().unwrap_or_default();
            format!("{server} {tool} — {line}\n")
        })
        .collect()
}

fn as_json(searched: &Searched) -> String {
    let found: Vec<_> = searched
        .found
        .iter()
        .map(|(server, tool, description, score)| {
            json!({"server": server, "tool": tool, "description": description, "score": score})
        })
        .collect();
    let not_started: Vec<_> =
        searched.not_started.iter().map(|(server, error)| json!({"server": server, "error": error})).collect();
    json!({"found": found, "not_started": not_started}).to_string() + "\n"
}
