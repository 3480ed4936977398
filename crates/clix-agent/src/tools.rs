//! What the agent acts through: the tools it offers the model and the
//! calls it runs.
//!
//! clix's own is the engine's one `run` tool ([`Engine`] implements
//! [`Tools`]). The eval harness gives the same loop, with the same
//! prompts, budgets and trajectory, other tool designs (a raw `bash` tool,
//! a typed tool set) to measure them against `run`.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use clix_common::template::Template;
use clix_engine::{CancelHandle, Engine, SeenImage, ToolFormat, tool_definition};
use serde_json::Value;

use crate::message::{ToolCall, ToolSpec};

/// clix's one tool.
pub(crate) const TOOL: &str = "run";

/// A tool set the agent loop can drive.
pub trait Tools {
    /// The tools offered to the model, sent with every model call.
    fn specs(&self) -> Vec<ToolSpec>;

    /// The system prompt's sentences on acting through these tools (its
    /// `{tool_guidance}`).
    fn guidance(&self) -> String;

    /// The folder the tools work in (the system prompt names it).
    fn workspace(&self) -> PathBuf;

    /// Ends the call in flight at once (Ctrl-C, a deadline). `None` when
    /// the tools cannot be cancelled; each call's own time limit ends it.
    fn cancel_handle(&self) -> Option<CancelHandle>;

    /// Reads one of the model's calls: what will run, or the `[error] …`
    /// text the model gets back instead (an unknown tool, bad arguments).
    fn prepare(&self, call: &ToolCall) -> Result<Invocation, String>;

    /// Runs a prepared call. Never panics on what the model sent.
    fn run(&mut self, invocation: &Invocation) -> impl Future<Output = ToolOutcome>;

    /// The calls that follow belong to run `run_id` (its checkpoints are
    /// the run's steps). Tools that keep none ignore it.
    fn begin_run(&mut self, _run_id: &str) {}
}

/// A call the tools accepted, about to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The tool's name.
    pub tool: String,
    /// Its arguments, parsed.
    pub arguments: Value,
    /// The line people see for it: the command line of a shell tool, else
    /// the arguments as compact JSON.
    pub command: String,
    /// Text given as the command's stdin, if any.
    pub stdin: Option<String>,
}

impl Invocation {
    /// The invocation of `tool` with `arguments`: its command line when it
    /// has a `command` string, its `stdin` when it has one.
    pub fn of(tool: &str, arguments: Value) -> Invocation {
        let command = match arguments.get("command").and_then(Value::as_str) {
            Some(command) => command.to_string(),
            None => arguments.to_string(),
        };
        let stdin = arguments.get("stdin").and_then(Value::as_str).map(str::to_string);
        Invocation { tool: tool.to_string(), arguments, command, stdin }
    }
}

/// What a call gave back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutcome {
    /// The result as the model gets it.
    pub text: String,
    /// The exit code (0 for success).
    pub exit_code: i32,
    /// How long it ran.
    pub duration: Duration,
    /// Images the model is shown with its next call (`see`).
    pub images: Vec<SeenImage>,
    /// A pipeline stage other than the last failed, which the exit code
    /// (the last stage's) does not show; the footer names it (`[exit:0 | jq
    /// exit 5 | 4ms]`). The loop treats the call as failed, as it treats a
    /// non-zero exit, while the code stays the line's own.
    pub stage_failed: bool,
    /// What the call changed in the workspace, when it changed something.
    pub changes: Option<clix_engine::ChangeSet>,
    /// `review` mode: the person declined the call's changes.
    pub declined: bool,
}

/// The arguments of a call as JSON, forgiving one common slip of small
/// models (raw control characters inside a string), or the `[error] …`
/// text that tells the model what to send. Empty arguments are `{}`.
pub fn call_arguments(call: &ToolCall) -> Result<Value, String> {
    let text = if call.arguments.trim().is_empty() { "{}" } else { &call.arguments };
    crate::agent::tool_calls::lenient_json(text).map_err(|e| {
        format!(
            "[error] the arguments of your {} call are not valid JSON ({e}). Send one JSON object, e.g. {{\"command\": \"ls -la\"}}.",
            call.name
        )
    })
}

/// clix's own tools: the one `run` tool over the engine's session.
impl Tools for Engine {
    fn specs(&self) -> Vec<ToolSpec> {
        let def = tool_definition(self.catalog(), ToolFormat::OpenAi);
        vec![ToolSpec {
            name: TOOL.into(),
            description: def["function"]["description"].as_str().unwrap_or_default().to_string(),
            parameters: def["function"]["parameters"].clone(),
        }]
    }

    fn guidance(&self) -> String {
        Template::parse(crate::prompt::RUN_GUIDANCE).render(&[])
    }

    fn workspace(&self) -> PathBuf {
        self.shell().workspace().to_path_buf()
    }

    fn cancel_handle(&self) -> Option<CancelHandle> {
        Some(Engine::cancel_handle(self))
    }

    fn begin_run(&mut self, run_id: &str) {
        self.set_checkpoint_run(run_id);
    }

    fn prepare(&self, call: &ToolCall) -> Result<Invocation, String> {
        if call.name != TOOL {
            return Err(crate::unknown_tool_text(&call.name, &self.specs()));
        }
        let (command, stdin) = crate::agent::tool_calls::parse_call(call)?;
        let arguments = serde_json::json!({ "command": command, "stdin": stdin });
        Ok(Invocation { tool: call.name.clone(), arguments, command, stdin })
    }

    async fn run(&mut self, invocation: &Invocation) -> ToolOutcome {
        let out = Engine::run(self, &invocation.command, invocation.stdin.as_deref().map(str::as_bytes)).await;
        ToolOutcome {
            changes: out.changes.set.filter(|set| !set.is_empty()),
            declined: out.changes.declined,
            stage_failed: !out.failed_stages.is_empty(),
            text: out.text,
            exit_code: out.exit_code,
            duration: out.raw.duration,
            images: out.images,
        }
    }
}
