//! MCP servers as commands: a server a person configured (`[[mcp.server]]`) is
//! a command, its tools are subcommands, and a call's result is a command's
//! (bytes for the pipe, an exit code, images apart).
//!
//! This crate owns:
//!
//! - the `[mcp]` section ([`McpSettings`], [`ServerEntry`]: `command` and
//!   `args` or `url` and `headers`, the `env` names passed through, `network`,
//!   `domain`, `enabled`, `rate_limit`, `serialize`, and per-tool overrides)
//!   and its `validate`, every problem at once; header values that name
//!   variables (`Bearer ${GITHUB_TOKEN}`), read from clix's environment when
//!   the server is first used and never shown;
//! - [`import`]: the `mcpServers` object of Claude Desktop, Claude Code and
//!   Cursor as `[[mcp.server]]` text, with what was skipped and why, and the
//!   variables to export for values the file held literally (a literal secret
//!   is never written); [`as_toml`] prints them, and [`add_to_config`] adds
//!   them to the person's config file with toml_edit, only when nothing but
//!   `mcp.server` changes (a hostile `.mcp.json` cannot rewrite the rest);
//! - the lifecycle ([`Servers`]): a stdio server starts on first use inside the
//!   OS sandbox (`clix_sandbox::Sandbox::start_stdio_service`; the workspace as
//!   its folder, its `env` on top of the allowlist, the folders its absolute
//!   paths name read-only, never the home folder or one holding it, the network
//!   only with `network = true`), lives for the session and ends with the
//!   handle (and with clix); an HTTP server is reached through rmcp's
//!   streamable-HTTP client. Calls to one server run in order. A server that
//!   does not start, or ends during a call, gets an error naming what failed,
//!   its exit code, the end of its stderr, the variables of its `env` that are
//!   not set and what to check; the next call starts it again;
//! - tools as subcommands ([`Tool`], from each tool's `inputSchema`, `$ref`s
//!   into `$defs` followed): flags with types, enums, repeated flags for lists,
//!   `--json`; usage errors (exit 2) with the usage line and the near name;
//!   help at the seed's levels (`SERVER`, `SERVER --help`, `SERVER TOOL
//!   --help`);
//! - each server's tool list kept between sessions ([`ToolCache`]: a JSON file
//!   per server, named by a hash of what starts it), written whenever the
//!   server lists its tools, so `mcp search` need not start it
//!   (`Servers::known_tools`);
//! - a call's result ([`CallResult`]): `structuredContent` as JSON on stdout,
//!   text as text, images decoded apart, `isError` as exit 1 on stderr.
//!
//! - the servers as an engine's commands ([`McpConfig`], a
//!   `clix_command::Capability`): each server a command, `mcp search` over
//!   their tools (ranked by the hub's `rank`), the `{mcp}` part of the `run`
//!   description.
//!
//! A call is prepared ([`Servers::prepare`] → [`McpToolCall`]: server, tool,
//! arguments) before it is made ([`Servers::call`]); the command runs the
//! policy's decision (already made on the line), the hub's rate limits and
//! locks (`clix_hub::Governance`) and the audit line in between. MCP tools
//! are governed calls as hub tools are, which is why this crate sits a tier
//! above the hub.
//!
//! It must not print (it emits `tracing` events), run anything except through
//! `clix-sandbox`, decide policy, or read configuration from a workspace: its
//! settings come from its caller, out of the person's own config.

mod cache;
mod command;
mod import;
mod import_toml;
mod output;
mod schema;
mod servers;
mod settings;

pub use cache::{ListedTool, ToolCache};
pub use command::McpConfig;
pub use import::{ImportError, Imported, Skipped, import};
pub use import_toml::{ConfigEditError, add_to_config, as_toml};
pub use output::{CallResult, Image};
pub use schema::{Kind, Param, Tool};
pub use servers::{McpToolCall, Prepared, START_TIMEOUT, ServerError, Servers, Vars};
pub use settings::{McpSettings, ResolvedHeaders, ServerEntry, TemplateError, ToolLimits, Transport, is_command_name};
