//! The MCP handler: one `run` tool over one engine per connection.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use clix_engine::{Engine, RunOutput, RunReport, ToolFormat, tool_definition};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, ServerInitializeError};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::{SERVER_NAME, SERVER_VERSION, ServeConfig, ServeError};

/// How often a running call reports progress when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What every session of one server shares: the engine settings and the
/// tool definition (the same for every engine of these settings).
pub struct Shared {
    config: ServeConfig,
    tool: Tool,
    /// Protocol versions offered: all of rmcp's over stdio, the handshake
    /// era only over HTTP (the 2026-07-28 era has no HTTP sessions).
    versions: Cow<'static, [ProtocolVersion]>,
    sessions: AtomicU64,
}

impl Shared {
    /// Builds the first engine, which checks the workspace and settings, and
    /// derives the tool definition from its catalog. The engine is returned
    /// for the first session to use.
    pub async fn new(config: ServeConfig, http: bool) -> Result<(Arc<Shared>, Engine), ServeError> {
        let versions = if http {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        };
        let mut shared =
            Shared { tool: Tool::new("run", "", Arc::default()), config, versions, sessions: AtomicU64::new(0) };
        let engine = shared.new_engine().await?;
        shared.tool = run_tool(&engine, &shared.config);
        Ok((Arc::new(shared), engine))
    }

    /// The `run` tool as `tools/list` shows it.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    async fn new_engine(&self) -> Result<Engine, ServeError> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let mut config = self.config.engine.clone();
        if let Some(os) = config.os.as_mut() {
            os.session_id = format!("{}-{n}", os.session_id);
        }
        // Each session's calls are a run of their own: `clix undo` takes back one client's work.
        if let Some(control) = config.control.as_mut() {
            control.run = format!("{}-{n}", control.run);
        }
        tracing::info!(session = n, "MCP session: a new engine (its own shell, cwd and variables)");
        Engine::new(config).await.map_err(|e| ServeError(e.to_string()))
    }
}

/// The `run` tool: the engine's description and input schema plus
/// `timeout_ms`, an output schema for `structuredContent`, and annotations
/// that tell the truth about what a shell can do.
fn run_tool(engine: &Engine, config: &ServeConfig) -> Tool {
    let definition = tool_definition(engine.catalog(), ToolFormat::Mcp);
    let description = definition["description"].as_str().unwrap_or_default().to_owned();
    let mut schema = definition["inputSchema"].as_object().cloned().unwrap_or_default();
    let limit = config.engine.limits.timeout();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "timeout_ms".into(),
            json!({
                "type": "integer",
                "minimum": 1,
                "description": format!(
                    "Optional time limit of this call in milliseconds; at most the configured {}s.",
                    limit.as_secs()
                ),
            }),
        );
    }
    let annotations =
        ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(config.network());
    Tool::new("run", description, Arc::new(schema))
        .with_title("Run a command line")
        .with_output_schema::<RunReport>()
        .with_annotations(annotations)
}

/// The arguments of one `run` call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunInput {
    command: String,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

/// One MCP connection (stdio) or session (HTTP): its own engine, created on
/// first use, and the shared settings.
#[derive(Clone)]
pub struct ClixServer {
    shared: Arc<Shared>,
    engine: Arc<Mutex<Option<Engine>>>,
}

impl ClixServer {
    /// A session whose engine is built on its first call (cheap: the HTTP
    /// transport makes one per request it validates).
    pub fn new(shared: Arc<Shared>) -> Self {
        ClixServer { shared, engine: Arc::default() }
    }

    /// A session that starts with `engine`.
    pub fn with_engine(shared: Arc<Shared>, engine: Engine) -> Self {
        ClixServer { shared, engine: Arc::new(Mutex::new(Some(engine))) }
    }

    /// Runs one call. `None` means it was cancelled and nothing is to be sent.
    async fn run(
        &self,
        input: RunInput,
        cancelled: impl Future<Output = ()>,
        progress: Option<(Peer<RoleServer>, ProgressToken)>,
    ) -> Result<Option<RunOutput>, ErrorData> {
        let mut cancelled = std::pin::pin!(cancelled);
        // Calls of one session run one at a time, in order; a call cancelled
        // while it waits never starts.
        let mut slot = tokio::select! {
            biased;
            slot = self.engine.lock() => slot,
            () = &mut cancelled => return Ok(None),
        };
        if slot.is_none() {
            let engine = self.shared.new_engine().await.map_err(|e| ErrorData::internal_error(e.0, None))?;
            *slot = Some(engine);
        }
        let Some(engine) = slot.as_mut() else { unreachable!("the engine was just set") };
        // Taken before the line starts, so a cancel during it reaches it.
        let cancel = engine.cancel_handle();
        let limit = input.timeout_ms.map(Duration::from_millis);
        let stdin = input.stdin.as_deref().map(str::as_bytes);
        let run = engine.run_within(&input.command, stdin, limit);
        let mut run = std::pin::pin!(run);

        let started = Instant::now();
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        loop {
            tokio::select! {
                biased;
                out = &mut run => return Ok(Some(out)),
                () = &mut cancelled => {
                    tracing::debug!(
                        running_ms = started.elapsed().as_millis() as u64,
                        "MCP call cancelled by the client: the line is stopped, its result dropped"
                    );
                    // Sticks until the line sees it, even one that has not
                    // started yet; the line then ends at once. Its result is dropped.
                    cancel.cancel();
                    let _ = run.await;
                    return Ok(None);
                }
                _ = ticks.tick(), if progress.is_some() => {
                    if let Some((peer, token)) = &progress {
                        let secs = started.elapsed().as_secs();
                        let note = ProgressNotificationParam::new(token.clone(), secs as f64)
                            .with_message(format!("running for {secs}s"));
                        let peer = peer.clone();
                        // Sent from its own task so a slow client never holds the line up.
                        tokio::spawn(async move {
                            let _ = peer.notify_progress(note).await;
                        });
                    }
                }
            }
        }
    }
}

/// The tool result of a finished line: the presentation, then each image
/// `see` accepted, with the raw facts as `structuredContent` (a [`RunReport`]
/// without the streams, which the text already shows).
fn tool_result(out: RunOutput) -> CallToolResult {
    let structured = out.report();
    let mut content = Vec::with_capacity(1 + out.images.len());
    content.push(ContentBlock::text(out.text));
    let b64 = base64::engine::general_purpose::STANDARD;
    for image in out.images {
        content.push(ContentBlock::image(b64.encode(&image.data), image.mime));
    }
    let mut result = CallToolResult::success(content);
    result.is_error = Some(structured.exit_code != 0);
    result.structured_content = serde_json::to_value(&structured).ok();
    result
}

/// A call the tool cannot start: shown to the model, which can fix it.
fn input_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("[error] run: {message}\n[exit:2 | 0ms]"))])
}

impl ServerHandler for ClixServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(SERVER_NAME, SERVER_VERSION);
        info.instructions = Some(
            "clix: one tool, `run`, runs a command line in a bash-compatible shell jailed to the workspace. \
             Start with `help`."
                .into(),
        );
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.shared.versions.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.shared.tool.clone()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "run").then(|| self.shared.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "run" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}; the only tool is run", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let input: RunInput = match serde_json::from_value(arguments) {
            Ok(input) => input,
            Err(e) => {
                return Ok(
                    input_error(format!("invalid arguments: {e}. Expected {{command, stdin?, timeout_ms?}}")).into()
                );
            }
        };
        if input.timeout_ms == Some(0) {
            return Ok(input_error("timeout_ms must be at least 1".into()).into());
        }
        let progress = context.meta.get_progress_token().map(|token| (context.peer.clone(), token));
        let ct = context.ct.clone();
        match self.run(input, ct.cancelled_owned(), progress).await? {
            Some(out) => Ok(tool_result(out).into()),
            // rmcp drops the answer to a cancelled request; this is never sent.
            None => Err(ErrorData::internal_error("cancelled", None)),
        }
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(config: ServeConfig) -> Result<(), ServeError> {
    let (shared, engine) = Shared::new(config, false).await?;
    let server = ClixServer::with_engine(shared, engine);
    let service = match server.serve(rmcp::transport::stdio_pipes()).await {
        Ok(service) => service,
        // The client went away before saying anything: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError(format!("MCP handshake failed: {e}"))),
    };
    service.waiting().await.map_err(|e| ServeError(format!("MCP server stopped: {e}")))?;
    Ok(())
}
