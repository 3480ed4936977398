//! The tool designs the harness compares, behind one executor.
//!
//! - `run`: clix's one `run` tool, `Engine::run` (Layer 1 + Layer 2),
//!   exactly what `clix ask` gives a model.
//! - `bash`: one `bash` tool, real bash in the same bubblewrap sandbox,
//!   raw stdout+stderr cut at 30,000 characters, as popular coding agents'
//!   bash tools are; no footer, spill file or binary guard.
//! - `typed`: `read_file`, `write_file`, `edit_file`, `list_dir`,
//!   `search_files` and `shell` (as `bash`), a typical typed tool set.
//! - `mcp-direct`: a task's MCP server's tools, each offered as a typed
//!   tool with its `inputSchema`, each result sent whole, as MCP clients
//!   that give a model a server's tools do; plus `read_file`. It runs only
//!   tasks with an MCP server, which `run` has as a command.
//!
//! A model-driven loop offers [`Executor::tools`] to the model and sends
//! each of its calls to [`Executor::call`]; the `--solution` mode sends a
//! task's reference [`Step`]s to [`Executor::step`]. Either way every call
//! comes back as a [`TracedCall`]: the text the model is sent, plus the raw
//! facts the checks score.

mod bash;
mod mcp_direct;
mod run;
mod typed;

pub use clix_agent::ToolSpec;
use serde::Serialize;
use serde_json::{Value, json};

pub use bash::{BashTools, OUTPUT_LIMIT_CHARS};
pub use mcp_direct::McpDirectTools;
pub use run::RunTools;
pub use typed::TypedTools;

use crate::task::Step;
use crate::trace::TracedCall;

/// A tool design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Design {
    /// clix's one `run` tool.
    Run,
    /// One raw `bash` tool.
    Bash,
    /// Typed file tools plus `shell`.
    Typed,
    /// A task's MCP server's tools as typed tools, plus `read_file`.
    #[serde(rename = "mcp-direct")]
    McpDirect,
}

impl Design {
    /// The designs a run has unless told (`--tools`), in the order reports
    /// show them: the ones every task can run in.
    pub const ALL: [Design; 3] = [Design::Run, Design::Bash, Design::Typed];
    /// Every design, `mcp-direct` (for tasks with an MCP server) too.
    pub const EVERY: [Design; 4] = [Design::Run, Design::Bash, Design::Typed, Design::McpDirect];

    /// The design's name, as `--tools` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Design::Run => "run",
            Design::Bash => "bash",
            Design::Typed => "typed",
            Design::McpDirect => "mcp-direct",
        }
    }

    /// The names of the tools the design always offers (`mcp-direct` adds
    /// its server's).
    pub fn tool_names(self) -> &'static [&'static str] {
        match self {
            Design::Run => &["run"],
            Design::Bash => &["bash"],
            Design::Typed => typed::TOOL_NAMES,
            Design::McpDirect => mcp_direct::FIXED_TOOLS,
        }
    }

    /// The tool that runs a solution's command line; `mcp-direct` has none.
    fn line_tool(self) -> Option<&'static str> {
        match self {
            Design::Run => Some("run"),
            Design::Bash => Some("bash"),
            Design::Typed => Some("shell"),
            Design::McpDirect => None,
        }
    }
}

impl std::fmt::Display for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Design {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Design::EVERY
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown design `{s}`; the designs: run, bash, typed, mcp-direct"))
    }
}

/// Bytes of a tool's definition, sent to the model with every call (the
/// Chat Completions `tools[]` entry, as compact JSON).
pub fn definition_bytes(tool: &ToolSpec) -> u64 {
    let entry = json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    });
    entry.to_string().len() as u64
}

/// One attempt's tools, in one design.
pub enum Executor {
    /// clix's `run`.
    Run(RunTools),
    /// Raw bash.
    Bash(BashTools),
    /// The typed tool set.
    Typed(TypedTools),
    /// An MCP server's tools, directly.
    McpDirect(McpDirectTools),
}

impl Executor {
    /// Which design this is.
    pub fn design(&self) -> Design {
        match self {
            Executor::Run(_) => Design::Run,
            Executor::Bash(_) => Design::Bash,
            Executor::Typed(_) => Design::Typed,
            Executor::McpDirect(_) => Design::McpDirect,
        }
    }

    /// The tools to offer the model.
    pub fn tools(&self) -> Vec<ToolSpec> {
        match self {
            Executor::Run(t) => vec![t.spec()],
            Executor::Bash(_) => vec![bash::spec("bash")],
            Executor::Typed(_) => typed::specs(),
            Executor::McpDirect(t) => t.specs(),
        }
    }

    /// Runs one tool call as a model makes it. An unknown tool or bad
    /// arguments come back as a failed call whose text tells the model what
    /// to send instead; nothing here panics on a model's input.
    pub async fn call(&mut self, tool: &str, arguments: &Value) -> TracedCall {
        match self {
            Executor::Run(t) if tool == "run" => t.call(arguments).await,
            Executor::Bash(t) if tool == "bash" => t.call("bash", arguments).await,
            Executor::Typed(t) if typed::TOOL_NAMES.contains(&tool) => t.call(tool, arguments).await,
            Executor::McpDirect(t) if t.has(tool) => t.call(tool, arguments).await,
            _ => TracedCall::refused(tool, arguments, clix_agent::unknown_tool_text(tool, &self.tools())),
        }
    }

    /// Runs one solution step: a command line through the design's shell
    /// tool, or a named call. An answer step calls nothing: `None`.
    pub async fn step(&mut self, step: &Step) -> Option<TracedCall> {
        match step {
            Step::Line(line) => match self.design().line_tool() {
                Some(tool) => Some(self.call(tool, &json!({ "command": line })).await),
                None => Some(TracedCall::refused(
                    "shell",
                    &json!({ "command": line }),
                    format!("{} has no tool that runs a command line; call its tools by name", self.design()),
                )),
            },
            Step::Call { tool, arguments } => Some(self.call(tool, arguments).await),
            Step::Answer { .. } => None,
        }
    }
}

/// The string argument `name`, or the message telling the model what is missing.
pub(crate) fn string_arg<'a>(arguments: &'a Value, name: &str) -> Result<&'a str, String> {
    match arguments.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("argument `{name}` must be a string, not {other}")),
        None => Err(format!("missing argument `{name}`")),
    }
}

/// An optional string argument.
pub(crate) fn optional_string_arg<'a>(arguments: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match arguments.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => string_arg(arguments, name).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designs_parse_by_name() {
        for design in Design::EVERY {
            assert_eq!(design.name().parse::<Design>(), Ok(design));
            assert_eq!(serde_json::to_value(design).unwrap(), json!(design.name()));
        }
        assert_eq!(
            "zsh".parse::<Design>().unwrap_err(),
            "unknown design `zsh`; the designs: run, bash, typed, mcp-direct"
        );
    }

    #[test]
    fn arguments_are_checked_by_type() {
        let args = json!({"command": "ls", "n": 3});
        assert_eq!(string_arg(&args, "command"), Ok("ls"));
        assert_eq!(string_arg(&args, "n"), Err("argument `n` must be a string, not 3".into()));
        assert_eq!(string_arg(&args, "stdin"), Err("missing argument `stdin`".into()));
        assert_eq!(optional_string_arg(&args, "stdin"), Ok(None));
        assert!(optional_string_arg(&args, "n").is_err());
    }
}
