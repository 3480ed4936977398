//! The servers of one session: each started on first use (a stdio one in
//! the sandbox, an HTTP one through rmcp's client), kept for the session,
//! and gone when [`Servers`] is dropped. A server that ends is started again
//! by the next call.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clix_common::exit;
use clix_sandbox::{Sandbox, Service, ServiceRequest};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use crate::cache::{ListedTool, ToolCache};
use crate::output::CallResult;
use crate::schema::Tool;
use crate::settings::{McpSettings, ServerEntry, TemplateError, Transport};

/// How long a server gets to start and answer `initialize` (and to list
/// its tools) before it is reported as not answering.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One call, checked against the tool's schema and not yet made: what the
/// engine's policy gate, audit line and rate limits look at before
/// [`Servers::call`] makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolCall {
    /// The server's name (the command).
    pub server: String,
    /// The tool's name (the subcommand).
    pub tool: String,
    /// The arguments sent, as the schema types them.
    pub arguments: Map<String, Value>,
}

impl McpToolCall {
    /// The arguments as one line of JSON (for an audit line).
    pub fn arguments_json(&self) -> String {
        Value::Object(self.arguments.clone()).to_string()
    }
}

/// What an argv asks of a server: a call to make, or an answer already
/// (a help page, a usage error, a server that would not start).
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// A tool call to make with [`Servers::call`].
    Call(McpToolCall),
    /// The result, nothing to call.
    Done(CallResult),
}

/// A live connection, dropped in field order: the client, then the process.
struct Connection {
    client: RunningService<RoleClient, ()>,
    /// A stdio server's process in the sandbox (none for HTTP).
    process: Option<Service>,
    /// Set when a stdio server wrote a message longer than clix reads.
    too_long: Arc<AtomicBool>,
}

/// One server's state: its connection (none before first use, or after it
/// ended) and its tools, listed once per session.
#[derive(Default)]
struct Slot {
    connection: Option<Connection>,
    tools: Option<Arc<Vec<Tool>>>,
}

/// Where a server's variables (its `env` names, the `${NAME}`s of its
/// headers) are read: the caller's process environment and secret store.
pub type Vars = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The MCP servers of one session, each a command.
pub struct Servers {
    entries: Vec<ServerEntry>,
    sandbox: Arc<Sandbox>,
    workspace: PathBuf,
    /// Reads the variables servers are given; `std::env::var` unless set.
    vars: Vars,
    /// One per entry; a call holds its server's, so the calls to one
    /// server run one at a time, in order.
    slots: HashMap<String, Mutex<Slot>>,
    start_timeout: Duration,
    /// Where each server's tool list is kept between sessions.
    cache: Option<ToolCache>,
}

/// Why a server's tools cannot be had; each says which server, and what
/// to check.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No server of that name is configured.
    #[error("{0}: no MCP server of that name")]
    Unknown(String),
    /// Its headers, arguments or URL name a variable that is not set.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A configured header cannot be sent.
    #[error("{0}")]
    Header(String),
    /// A stdio server did not start: with its command and the end of its stderr.
    #[error("{0}")]
    NotStarted(String),
    /// An HTTP server did not answer.
    #[error("{0}")]
    Unreachable(String),
    /// It started, and did not list its tools.
    #[error("{server}: the MCP server did not list its tools: {why}")]
    NotListed {
        /// The server.
        server: String,
        /// Why.
        why: String,
    },
}

impl Servers {
    /// The enabled servers of `settings`, none started: stdio ones will run
    /// in `sandbox` with `workspace` as their folder.
    pub fn new(settings: &McpSettings, sandbox: Arc<Sandbox>, workspace: &Path) -> Self {
        let entries: Vec<ServerEntry> = settings.server.iter().filter(|e| e.enabled).cloned().collect();
        let slots = entries.iter().map(|e| (e.name.clone(), Mutex::new(Slot::default()))).collect();
        let vars: Vars = Arc::new(|name| std::env::var(name).ok());
        Servers {
            entries,
            sandbox,
            workspace: workspace.to_path_buf(),
            vars,
            slots,
            start_timeout: START_TIMEOUT,
            cache: None,
        }
    }

    /// The same, reading the servers' variables with `vars` (a process
    /// whose secrets left its environment keeps them in a store), read when
    /// a server starts and never logged.
    pub fn with_vars(mut self, vars: Vars) -> Self {
        self.vars = vars;
        self
    }

    /// The same, giving each server `timeout` to start instead of [`START_TIMEOUT`].
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// The same, keeping each server's tool list in `cache` whenever it is
    /// listed (the server started), for [`Servers::known_tools`].
    pub fn with_tool_cache(mut self, cache: ToolCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// `server`'s tools without starting it: this session's list if it was
    /// listed (and no call holds the server now), else the cached one.
    pub fn known_tools(&self, server: &str) -> Option<Vec<ListedTool>> {
        let (entry, slot) = self.slot(server).ok()?;
        if let Ok(slot) = slot.try_lock()
            && let Some(tools) = &slot.tools
        {
            return Some(tools.iter().map(ListedTool::from).collect());
        }
        self.cache.as_ref()?.read(entry)
    }

    /// The servers' entries (the enabled ones), in the config's order.
    pub fn entries(&self) -> &[ServerEntry] {
        &self.entries
    }

    /// Whether `name` is one of the servers.
    pub fn has(&self, name: &str) -> bool {
        self.slots.contains_key(name)
    }

    /// `server`'s tools, listed when first asked (starting it) and kept for the session.
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, ServerError> {
        let (entry, slot) = self.slot(server)?;
        let mut slot = slot.lock().await;
        self.tools_of(entry, &mut slot).await
    }

    /// What `argv` (the words after the server's name) asks: a help page
    /// (`SERVER`, `SERVER --help`, `SERVER TOOL --help`), a usage error
    /// (exit 2), or a checked call.
    pub async fn prepare(&self, server: &str, argv: &[String]) -> Prepared {
        let tools = match self.tools(server).await {
            Ok(tools) => tools,
            Err(e) => return Prepared::Done(CallResult::error(exit::FAILURE, e.to_string())),
        };
        // `help` asks for the list, unless the server has a tool of that name.
        let asks_help = |w: &String| {
            matches!(w.as_str(), "--help" | "-h") || (w == "help" && !tools.iter().any(|t| t.name == "help"))
        };
        let Some(first) = argv.first().filter(|w| !asks_help(w)) else {
            return Prepared::Done(CallResult::text(server_help(server, &tools)));
        };
        let Some(tool) = tools.iter().find(|t| t.name == *first) else {
            // No near name: the list itself, so the next line can be
            // right without a `--help` call first.
            let hint = match clix_common::names::did_you_mean(first, tools.iter().map(|t| t.name.as_str())) {
                Some(near) => format!("did you mean `{server} {near}`?"),
                None if first.starts_with('-') => {
                    format!("a tool's name comes first, then its flags. {}", server_help(server, &tools))
                }
                None => server_help(server, &tools),
            };
            return Prepared::Done(CallResult::usage(format!("{server}: no tool `{first}`; {hint}")));
        };
        match tool.arguments(server, &argv[1..]) {
            Ok(Some(arguments)) => {
                Prepared::Call(McpToolCall { server: server.into(), tool: tool.name.clone(), arguments })
            }
            Ok(None) => Prepared::Done(CallResult::text(tool.help(server))),
            Err(usage) => Prepared::Done(CallResult::usage(usage)),
        }
    }

    /// Makes `call`, starting its server if it is not running. A server
    /// that ends during the call is reported with its stderr and started
    /// again by the next call.
    pub async fn call(&self, call: &McpToolCall) -> CallResult {
        let (entry, slot) = match self.slot(&call.server) {
            Ok(found) => found,
            Err(e) => return CallResult::error(exit::NOT_FOUND, e.to_string()),
        };
        let mut slot = slot.lock().await;
        let connection = match self.connected(entry, &mut slot).await {
            Ok(c) => c,
            Err(e) => return CallResult::error(exit::FAILURE, e.to_string()),
        };
        let params = CallToolRequestParams::new(call.tool.clone()).with_arguments(call.arguments.clone());
        tracing::debug!(server = %call.server, tool = %call.tool, "mcp: calling a tool");
        match connection.client.call_tool(params).await {
            Ok(result) => CallResult::from_tool(result),
            // The server answered, with a protocol error: it is still there.
            Err(ServiceError::McpError(e)) => CallResult::error(
                exit::FAILURE,
                format!(
                    "{} {}: the MCP server refused the call: {} (code {})",
                    call.server, call.tool, e.message, e.code.0
                ),
            ),
            Err(e) => {
                let ended = slot.connection.take();
                let why = match ended {
                    Some(c) if c.too_long.load(Ordering::SeqCst) => format!(
                        "its reply passed {} MiB, the most clix reads of one MCP message; ask for less (a \
                         narrower query, a page of results)",
                        MAX_MESSAGE_BYTES >> 20
                    ),
                    Some(c) => gone(entry, c, &e.to_string()).await,
                    None => e.to_string(),
                };
                CallResult::error(
                    exit::FAILURE,
                    format!(
                        "{} {}: the MCP server failed during the call: {why}\nThe next call starts it again.",
                        call.server, call.tool
                    ),
                )
            }
        }
    }

    /// [`Servers::prepare`] then [`Servers::call`], with no one deciding in between.
    pub async fn run(&self, server: &str, argv: &[String]) -> CallResult {
        match self.prepare(server, argv).await {
            Prepared::Call(call) => self.call(&call).await,
            Prepared::Done(result) => result,
        }
    }

    fn slot(&self, server: &str) -> Result<(&ServerEntry, &Mutex<Slot>), ServerError> {
        let entry = self.entries.iter().find(|e| e.name == server);
        entry.zip(self.slots.get(server)).ok_or_else(|| ServerError::Unknown(server.to_string()))
    }

    async fn tools_of(&self, entry: &ServerEntry, slot: &mut Slot) -> Result<Arc<Vec<Tool>>, ServerError> {
        if let Some(tools) = &slot.tools {
            return Ok(Arc::clone(tools));
        }
        let connection = self.connected(entry, slot).await?;
        let listed = tokio::time::timeout(self.start_timeout, connection.client.list_all_tools()).await;
        let listed = match listed {
            Ok(Ok(tools)) => tools,
            failed => {
                let what = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} s", self.start_timeout.as_secs()),
                };
                let why = match slot.connection.take() {
                    Some(c) => gone(entry, c, &what).await,
                    None => what,
                };
                return Err(ServerError::NotListed { server: entry.name.clone(), why });
            }
        };
        let tools: Vec<Tool> = listed
            .iter()
            .map(|t| {
                Tool::from_schema(&t.name, t.description.as_deref().unwrap_or_default(), &t.input_schema)
                    .with_output(t.output_schema.as_deref())
            })
            .filter_map(|tool| shown_safely(entry, tool))
            .collect();
        if let Some(cache) = &self.cache {
            cache.write(entry, &tools);
        }
        let tools = Arc::new(tools);
        slot.tools = Some(Arc::clone(&tools));
        Ok(tools)
    }

    /// The slot's live connection, started (again) when there is none or
    /// its process has ended.
    async fn connected<'s>(&self, entry: &ServerEntry, slot: &'s mut Slot) -> Result<&'s Connection, ServerError> {
        let ended = slot
            .connection
            .as_mut()
            .is_some_and(|c| c.process.as_mut().is_some_and(|p| p.exited().is_some()) || c.client.is_closed());
        if ended {
            tracing::debug!(server = %entry.name, "mcp: the server had ended; starting it again");
            slot.connection = None;
        }
        if slot.connection.is_none() {
            let started = match entry.transport() {
                Transport::Stdio => self.start_stdio(entry).await?,
                Transport::Http => self.connect_http(entry).await?,
            };
            slot.connection = Some(started);
        }
        slot.connection.as_ref().ok_or_else(|| ServerError::Unreachable(format!("{}: no connection", entry.name)))
    }

    async fn start_stdio(&self, entry: &ServerEntry) -> Result<Connection, ServerError> {
        let mut argv = vec![entry.command.clone().unwrap_or_default()];
        argv.extend(entry.resolve_args(|v| (self.vars)(v))?);
        let read_only = own_folders(&argv, &self.workspace);
        let env: Vec<(String, String)> =
            entry.env.iter().filter_map(|k| (self.vars)(k).map(|v| (k.clone(), v))).collect();
        let request = ServiceRequest {
            argv: &argv,
            cwd: &self.workspace,
            read_only: &read_only,
            share_network: entry.network,
            fds: Vec::new(),
        };
        // As configured: the variables' values stay out of the log.
        let configured: Vec<&String> = entry.command.iter().chain(&entry.args).collect();
        tracing::debug!(server = %entry.name, argv = ?configured, network = entry.network, "mcp: starting a stdio server");
        let (mut process, stdin, stdout) = self
            .sandbox
            .start_stdio_service(request, &env)
            .await
            .map_err(|e| ServerError::NotStarted(self.not_started(entry, &e.to_string(), None)))?;
        let too_long = Arc::new(AtomicBool::new(false));
        let stdout = Capped { inner: stdout, line: 0, too_long: Arc::clone(&too_long) };
        let handshake = ().serve_with_lifecycle((stdout, stdin), ClientLifecycleMode::Initialize);
        let what = match tokio::time::timeout(self.start_timeout, handshake).await {
            Ok(Ok(client)) => return Ok(Connection { client, process: Some(process), too_long }),
            Ok(Err(e)) => format!("the MCP handshake failed ({e})"),
            Err(_) => format!("it did not answer `initialize` within {} s", self.start_timeout.as_secs()),
        };
        let what = match wait_exit(&mut process).await {
            Some(code) => format!("{what}; it exited with {code}"),
            None => what,
        };
        Err(ServerError::NotStarted(self.not_started(entry, &what, Some(&process.stderr_tail()))))
    }

    async fn connect_http(&self, entry: &ServerEntry) -> Result<Connection, ServerError> {
        let url = entry.resolve_url(|v| (self.vars)(v))?.unwrap_or_default();
        let resolved = entry.resolve_headers(|v| (self.vars)(v))?;
        let mut headers = HashMap::new();
        for (name, value) in resolved.0 {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ServerError::Header(format!("{}: header {name:?} is not a header name", entry.name)))?;
            let value = http::HeaderValue::from_str(&value).map_err(|_| {
                ServerError::Header(format!("{}: header {name} holds a character a header cannot carry", entry.name))
            })?;
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(headers);
        // The workspace's reqwest has no default crypto provider (ring is
        // lighter to build): without one, building the client panics.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_config(config);
        tracing::debug!(server = %entry.name, url = %url, "mcp: connecting to an HTTP server");
        let handshake = ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize);
        match tokio::time::timeout(self.start_timeout, handshake).await {
            Ok(Ok(client)) => Ok(Connection { client, process: None, too_long: Arc::default() }),
            Ok(Err(e)) => Err(ServerError::Unreachable(format!(
                "{}: the MCP server at {url} did not answer: {e}\ncheck: that it is running and serves streamable \
                 HTTP at that path (often /mcp), and that its headers (a token) are right",
                entry.name
            ))),
            Err(_) => Err(ServerError::Unreachable(format!(
                "{}: the MCP server at {url} did not answer within {} s\ncheck: that it is running and reachable",
                entry.name,
                self.start_timeout.as_secs()
            ))),
        }
    }

    /// The navigating error of a stdio server that did not start.
    fn not_started(&self, entry: &ServerEntry, what: &str, tail: Option<&str>) -> String {
        let command = std::iter::once(entry.command.as_deref().unwrap_or_default())
            .chain(entry.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let mut out = format!("{}: the MCP server did not start: {what}\n", entry.name);
        out.push_str(&format!(
            "  command: {command} (in the sandbox, in {}, network {})\n",
            self.workspace.display(),
            if entry.network { "on" } else { "off" }
        ));
        match tail.filter(|t| !t.is_empty()) {
            Some(tail) => out.push_str(&format!("  its stderr ends:\n{}\n", indent(tail))),
            None => out.push_str("  it wrote nothing to stderr\n"),
        }
        let unset: Vec<&str> = entry.env.iter().filter(|k| (self.vars)(k).is_none()).map(String::as_str).collect();
        if !unset.is_empty() {
            out.push_str(&format!("  not set in clix's environment: {}\n", unset.join(", ")));
        }
        out.push_str(
            "  check: that the command runs in a terminal; that what it needs is visible in the sandbox (the \
             workspace, the system's folders, the folders its absolute paths name: `sandbox status`); that the \
             variables it needs are in its `env`; `network = true` if it needs the network",
        );
        out
    }
}

/// Why a connection ended: its process's exit and stderr when it has one.
async fn gone(entry: &ServerEntry, mut connection: Connection, error: &str) -> String {
    let Some(process) = connection.process.as_mut() else {
        return format!("{error} (server at {})", entry.url.as_deref().unwrap_or_default());
    };
    let exit = wait_exit(process).await;
    let tail = process.stderr_tail();
    let mut out = match exit {
        Some(code) => format!("it exited with {code} ({error})"),
        None => error.to_string(),
    };
    if !tail.is_empty() {
        out.push_str(&format!("\n  its stderr ends:\n{}", indent(&tail)));
    }
    out
}

/// The process's exit code, waiting up to two seconds for one that is
/// ending (its pipes close just before it is reaped).
async fn wait_exit(process: &mut Service) -> Option<i32> {
    for _ in 0..80 {
        if let Some(code) = process.exited() {
            // Its last stderr is read by a task of its own: a moment to land.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Some(code);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

/// The last lines of a stderr tail, indented.
fn indent(tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().collect();
    let kept = &lines[lines.len().saturating_sub(12)..];
    kept.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// `SERVER` / `SERVER --help`: its tools, one line each.
fn server_help(server: &str, tools: &[Tool]) -> String {
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    let mut out = format!("{server}: an MCP server's tools, each a subcommand ({}):\n", tools.len());
    for tool in tools {
        out.push_str(&format!("  {:width$}  {}\n", tool.name, tool.summary()));
    }
    out.push_str(&format!("`{server} TOOL --help` shows a tool's parameters.\n"));
    out
}

/// The host folders a stdio server's own files are in: each absolute path
/// of its argv that exists (a file's folder, or the folder itself),
/// mounted read-only, as the hub mounts a tool's folder. The system's
/// folders and the workspace are there already. The sandbox refuses one
/// that would bring a secret store, the home folder or clix's own folders
/// with it (`Sandbox::start_stdio_service`).
fn own_folders(argv: &[String], workspace: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = Vec::new();
    for word in argv.iter().filter(|w| w.starts_with('/')) {
        let path = Path::new(word);
        let folder = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => path.to_path_buf(),
            Ok(_) => match path.parent() {
                Some(p) => p.to_path_buf(),
                None => continue,
            },
            Err(_) => continue,
        };
        let present = clix_sandbox::SYSTEM_DIRS.iter().any(|s| folder.starts_with(s))
            || folder.starts_with(workspace)
            || folders.iter().any(|f| folder.starts_with(f));
        if !present {
            folders.push(folder);
        }
    }
    folders
}

/// The most clix reads of one message of a stdio server (rmcp's own line
/// limit): past it the server's output ends for clix at once, so the call
/// fails then, instead of rmcp dropping the line and the call waiting out
/// the line's time limit.
const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// A stdio server's output, ended with an error once one line (one
/// JSON-RPC message) passes [`MAX_MESSAGE_BYTES`].
struct Capped<R> {
    inner: R,
    /// Bytes since the last newline.
    line: usize,
    too_long: Arc<AtomicBool>,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Capped<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &polled {
            let new = &buf.filled()[before..];
            self.line = match new.iter().rposition(|b| *b == b'\n') {
                Some(at) => new.len() - at - 1,
                None => self.line + new.len(),
            };
            if self.line > MAX_MESSAGE_BYTES {
                self.too_long.store(true, Ordering::SeqCst);
                return std::task::Poll::Ready(Err(std::io::Error::other("a message passed the size clix reads")));
            }
        }
        polled
    }
}

/// A tool as the model and a terminal may be shown it (security round 4,
/// finding 10): a name or a parameter's name that is not MCP's tool-name
/// alphabet (letters, digits, `_`, `-`, `.`; a parameter, no control
/// character or space) leaves the tool out, logged; control and
/// text-direction characters of its description and result shape are
/// shown escaped, so none adds a line to the run tool's description.
fn shown_safely(entry: &ServerEntry, mut tool: Tool) -> Option<Tool> {
    let name_ok = !tool.name.is_empty()
        && tool.name.len() <= 128
        && tool.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let bad_param =
        tool.params.iter().find(|p| p.name.is_empty() || p.name.chars().any(|c| c.is_whitespace() || c.is_control()));
    if !name_ok || bad_param.is_some() {
        tracing::warn!(
            server = %entry.name,
            tool = %clix_common::names::escape_controls(&tool.name),
            "mcp: a tool left out: its name or a parameter's is not one a command line can hold"
        );
        return None;
    }
    tool.description = clix_common::names::escape_controls_in_text(&tool.description).into_owned();
    tool.output = clix_common::names::escape_controls(&tool.output);
    Some(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Security round 4, finding 10: names with control characters or
    /// spaces never reach the run tool's description, help or a terminal.
    #[test]
    fn a_tool_is_shown_only_with_names_a_command_line_holds() {
        let entry = ServerEntry::stdio("srv", "x", &[]);
        let schema = |param: &str| {
            serde_json::json!({"type": "object", "properties": {param: {"type": "string"}}})
                .as_object()
                .cloned()
                .unwrap_or_default()
        };
        for (name, param, kept) in [
            ("search", "query", true),
            ("get.file-v2", "path_x", true),
            ("evil\nrun rm -rf /", "q", false),
            ("esc\u{1b}[2J", "q", false),
            ("rtl\u{202e}x", "q", false),
            ("two words", "q", false),
            ("ok", "bad\nparam", false),
            ("ok", "with space", false),
        ] {
            let tool = Tool::from_schema(name, "d", &schema(param));
            assert_eq!(shown_safely(&entry, tool).is_some(), kept, "{name:?} {param:?}");
        }
        let tool = Tool::from_schema("ok", "line one\u{1b}]52;c;x\u{7}\nline two\u{202e}", &schema("q"));
        let shown = shown_safely(&entry, tool).map(|t| t.description).unwrap_or_default();
        assert_eq!(shown, "line one\\u{1b}]52;c;x\\u{7}\nline two\\u{202e}");
    }

    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: T) {}

    /// The engine keeps the servers in a command shared across threads,
    /// and awaits their calls in futures that must be `Send`.
    #[test]
    fn servers_and_their_calls_cross_threads() {
        let dir = std::env::temp_dir();
        let sandbox = Arc::new(Sandbox::new(clix_sandbox::SandboxSettings::default(), &dir, None, None, "t".into()));
        let servers = Servers::new(&McpSettings::default(), sandbox, &dir);
        send_sync(&servers);
        let call = McpToolCall { server: "x".into(), tool: "y".into(), arguments: Map::new() };
        send(servers.call(&call));
        send(servers.run("x", &[]));
        send(servers.tools("x"));
    }
}
