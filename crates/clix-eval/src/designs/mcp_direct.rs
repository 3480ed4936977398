//! The `mcp-direct` design: a task's MCP server's tools offered to the
//! model one by one, as MCP clients that give a model a server's tools do.
//!
//! Each tool's definition is its name, description and `inputSchema` as
//! the server's `tools/list` gave them (the description trimmed); each call goes to the server with
//! the model's arguments unchanged (through `clix_mcp_client::Servers`, the
//! server in the sandbox as under `run`), and its whole result comes back:
//! the structured content as JSON, else the text, and a tool's error text.
//! Nothing is cut, as Claude Desktop cuts nothing (Claude Code stops at
//! 25,000 tokens, above what the suite's results reach). `read_file` (the
//! `typed` design's) reads the workspace, for tasks that join a file.

use std::sync::Arc;
use std::time::Instant;

use clix_mcp_client::{McpSettings, ServerEntry, Servers};
use clix_sandbox::Sandbox;
use clix_workspace::Workspace;
use serde_json::Value;

use super::{ToolSpec, typed};
use crate::trace::TracedCall;

/// The tools the design has whatever the server: the workspace's files.
pub(super) const FIXED_TOOLS: &[&str] = &["read_file"];

/// One attempt's MCP server, its tools offered directly.
pub struct McpDirectTools {
    servers: Servers,
    server: String,
    /// The server's tools, then `read_file`.
    specs: Vec<ToolSpec>,
    workspace: Workspace,
}

impl McpDirectTools {
    /// Lists `entry`'s tools (starting it in `sandbox` for that) and keeps
    /// the server, started once, for the attempt's calls.
    pub async fn open(entry: ServerEntry, sandbox: Sandbox, workspace: Workspace) -> Result<Self, String> {
        let server = entry.name.clone();
        let servers = Servers::new(&McpSettings { server: vec![entry] }, Arc::new(sandbox), workspace.root());
        let mut specs: Vec<ToolSpec> = servers
            .tools(&server)
            .await
            .map_err(|e| e.to_string())?
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: Value::Object(tool.input_schema.clone()),
            })
            .collect();
        if let Some(taken) = specs.iter().find(|s| FIXED_TOOLS.contains(&s.name.as_str())) {
            return Err(format!("{server}: its tool `{}` has the name of the design's own", taken.name));
        }
        specs.extend(typed::specs().into_iter().filter(|s| FIXED_TOOLS.contains(&s.name.as_str())));
        Ok(McpDirectTools { servers, server, specs, workspace })
    }

    /// The tools to offer the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    /// Whether `tool` is one of them.
    pub fn has(&self, tool: &str) -> bool {
        self.specs.iter().any(|s| s.name == tool)
    }

    /// The server's name, for the system prompt's sentence on the tools.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// One call: `read_file`, or the server's tool with the model's arguments.
    pub async fn call(&self, tool: &str, arguments: &Value) -> TracedCall {
        let started = Instant::now();
        if FIXED_TOOLS.contains(&tool) {
            return typed::answer(tool, arguments, typed::read_file(&self.workspace, arguments), started);
        }
        let Value::Object(map) = arguments else {
            let message = format!("{tool}: the arguments must be a JSON object, not {arguments}");
            return TracedCall::refused(tool, arguments, message);
        };
        let call =
            clix_mcp_client::McpToolCall { server: self.server.clone(), tool: tool.into(), arguments: map.clone() };
        let result = self.servers.call(&call).await;
        let (stdout, stderr) = (String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
        // The server's whole result: nothing is cut (see the module's doc).
        TracedCall {
            tool: tool.into(),
            arguments: arguments.clone(),
            text: format!("{stdout}{stderr}"),
            images: Vec::new(),
            stdout: stdout.into_owned(),
            stderr: stderr.into_owned(),
            exit_code: result.exit_code,
            duration: started.elapsed(),
            stage_failed: false,
        }
    }
}
