//! clix as an MCP server: the single `run` tool over stdio or streamable HTTP.
//!
//! Any MCP client (Claude Code, Claude Desktop, Cursor, …) gets clix's shell
//! through one tool, `run(command, stdin?, timeout_ms?)`. Each call goes
//! through [`Engine::run_within`](clix_engine::Engine::run_within); the tool
//! result's text is exactly the Layer-2 presentation, images from `see` are
//! image content, and the raw facts behind them come back as
//! `structuredContent` (`clix_engine::RunReport`).
//!
//! - **Sessions.** One [`Engine`](clix_engine::Engine) (one shell session) per
//!   MCP connection: a stdio server has one; the HTTP server has one per MCP
//!   session id, created on the first call and dropped when the session ends or
//!   stays idle too long; past `--max-sessions` a new one gets 503. `cd` and
//!   variables never leak between them, and the calls of one connection run in
//!   order. Behind a load balancer, `--route NAME` makes each HTTP session id
//!   end with `.NAME`, so the balancer can send a session's requests to the
//!   replica that holds it ([`Route`]).
//! - **Both protocol eras.** rmcp answers the legacy `initialize` handshake and
//!   the 2026-07-28 `server/discover`. Over HTTP only the handshake era is
//!   offered: 2026-07-28 has no sessions over HTTP, and a shell without a
//!   session would lose `cd` between calls.
//! - **Cancellation and progress.** `notifications/cancelled` stops the running
//!   line through the engine's [`CancelHandle`](clix_engine::CancelHandle)
//!   (sandboxed programs' process groups are killed) and nothing more is sent
//!   for that request; a call that carries a `progressToken` gets a progress
//!   notification every second while it runs.
//! - **HTTP's guards.** Every listener needs a bearer token, loopback included
//!   (loopback is shared with every local user and every sandboxed program with
//!   the network): from `CLIX_MCP_TOKEN`, a 0600 `--token-file`, or made once
//!   and kept 0600 in the state folder, never on a command line (`token.rs`). A
//!   browser request whose `Origin` is neither loopback nor named by
//!   `--allow-origin` gets 403, so a web page cannot reach a local server.
//!
//! This crate calls the engine as the CLI does; it holds no execution or
//! presentation logic, and writes nothing to stdout but MCP's own messages
//! (under `clix mcp`, stdout is the protocol).

mod http;
mod route;
mod run;
mod server;
mod token;

pub use http::{HttpOptions, serve_http};
pub use route::Route;
pub use run::serve;
pub use server::{ClixServer, Shared, serve_stdio};
pub use token::{TOKEN_FILE, Token, TokenOrigin};

use clix_engine::{EngineConfig, SandboxMode};

/// The name in `serverInfo`.
pub const SERVER_NAME: &str = "clix";
/// The version in `serverInfo`: clix's own.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What every session's engine is built from.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The engine of each session; `os.session_id` gets the session's number
    /// as a suffix (`-1`, `-2`, …) in the audit log.
    pub engine: EngineConfig,
}

impl ServeConfig {
    /// Whether sandboxed programs can reach the network: the tool's
    /// `openWorldHint`.
    pub fn network(&self) -> bool {
        self.engine.os.as_ref().is_some_and(|os| match os.settings.mode {
            SandboxMode::Host => true,
            SandboxMode::Bwrap => os.settings.network,
            SandboxMode::Off => false,
        })
    }
}

/// Errors that stop a server before or while it serves.
#[derive(Debug)]
pub struct ServeError(pub String);

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}
