//! What a run reports as it goes: rendered by the CLI, written to the
//! trajectory, and printed as JSON lines with `--jsonl`.

use serde::{Deserialize, Serialize};

use crate::message::{Image, Message, ToolCall, ToolSpec};
use crate::provider::{ToolChoice, Usage};
use crate::stop::StopReason;

/// One thing that happened in a run. Serialized with its kind in `type`
/// (`start`, `tool_call`, …): a trajectory line and a `--jsonl` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A task begins.
    Start {
        /// The trajectory's id (empty when the run has none).
        run_id: String,
        /// The task as the person gave it (piped stdin included).
        task: String,
        /// The API kind and base URL, e.g. `OpenAi http://127.0.0.1:11434/v1`.
        provider: String,
        /// The model's name as the provider knows it.
        model: String,
        /// The workspace folder the commands run in.
        workspace: String,
    },
    /// What the model is given, in full: the system prompt, the tool and
    /// the conversation after the system prompt. Recorded in the trajectory
    /// only (not shown, not in `--jsonl`): when a task begins, and again
    /// whenever the conversation changes other than by growing at its end
    /// (compaction replaced its oldest turns). With the `request` records
    /// after it, a run can be replayed call by call from its file.
    Context {
        /// The system prompt (memory facts included).
        system: String,
        /// The tools offered: the one `run` tool.
        tools: Vec<ToolSpec>,
        /// The conversation after the system prompt, oldest first.
        messages: Vec<Message>,
    },
    /// One model call (its retries included), in the trajectory only: the
    /// messages added to the conversation since the last `context` or
    /// `request` record. The call's whole conversation is the last
    /// `context`'s messages followed by the `added` of every `request`
    /// since, this one included.
    Request {
        /// The step this call belongs to (one more than the last step for
        /// the text-only call after a budget stop).
        step: u32,
        /// `auto`, or `none` for the text-only call after a budget stop.
        tool_choice: ToolChoice,
        /// The cap on the reply's length, in tokens.
        max_output_tokens: u32,
        /// The messages new since the previous record.
        added: Vec<Message>,
    },
    /// What the conversation gained after the run's last model call (the
    /// final reply, the results of its calls, the loop's notes), in the
    /// trajectory only, written when the run ends. With the last `context`
    /// and the `request` records since, it is the whole conversation:
    /// what `clix ask --continue` rebuilds.
    Tail {
        /// The messages new since the previous record.
        added: Vec<Message>,
    },
    /// The text of a model reply the run keeps, once the reply is whole (not
    /// kept in trajectories). A reply asked again for (a guess made without
    /// looking, a give-up after a failed call) has none: its text is only in
    /// its `response`.
    Text {
        /// The new text, appended to what came before.
        text: String,
    },
    /// The model's whole reply of one step.
    Response {
        /// The step, from 1.
        step: u32,
        /// Its text (empty when it only called the tool).
        text: String,
        /// Its tool calls, in order, as the model sent them.
        tool_calls: Vec<ToolCall>,
        /// This call's tokens.
        usage: Usage,
    },
    /// A tool call about to run (clix's: a `run` call going to the engine).
    ToolCall {
        /// The step of the reply that made it.
        step: u32,
        /// The call's id, which its result answers.
        id: String,
        /// The tool called (`run`; other names only under the eval
        /// harness's other tool designs). Files from before it was recorded
        /// read as `run`.
        #[serde(default = "run_tool")]
        tool: String,
        /// The command line (a tool without one: its arguments as JSON).
        command: String,
        /// Text given as the command's stdin, if any.
        stdin: Option<String>,
    },
    /// What a call returned, as the model gets it. A call the engine could
    /// not take (another tool, bad arguments) has exit code 2 and no duration.
    ToolResult {
        /// The step of the reply that made the call.
        step: u32,
        /// The call's id.
        id: String,
        /// Layer 2's text: the output, its notes and the `[exit:N | 12ms]` footer.
        text: String,
        /// The command line's exit code.
        exit_code: i32,
        /// How long the command ran, in milliseconds.
        duration_ms: u64,
        /// Images from `see`, sent to the model with its next call.
        images: Vec<Image>,
        /// What the call changed in the workspace (`clix diff`, `clix undo`),
        /// when it changed something and checkpoints are kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changes: Option<clix_engine::ChangeSet>,
        /// `review` mode: the person declined the changes, and the
        /// workspace is as it was before the call.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        declined: bool,
    },
    /// The run's tokens so far, after each reply.
    Usage {
        /// The step just answered.
        step: u32,
        /// Input tokens of every call of the run so far.
        input_tokens: u64,
        /// Output tokens of every call of the run so far.
        output_tokens: u64,
        /// Their sum, what `agent.max_total_tokens` limits.
        total_tokens: u64,
        /// Of the input, the tokens read from the provider's prompt cache.
        #[serde(default)]
        cache_read_tokens: u64,
        /// Of the input, the tokens written to the prompt cache.
        #[serde(default)]
        cache_write_tokens: u64,
    },
    /// Memories relevant to the task were put before it (a marked block).
    Recall {
        /// The memories' ids (`memory forget <id>` takes them).
        ids: Vec<i64>,
        /// The block as the model reads it.
        block: String,
    },
    /// The session's summary was stored in memory.
    Remembered {
        /// The new memory's id.
        id: i64,
        /// Its kind: `summary`.
        kind: String,
        /// The summary.
        text: String,
        /// The tokens of the model call that wrote it (the run's own
        /// usage leaves them out; `clix runs` adds them in).
        #[serde(default)]
        usage: Usage,
        /// What that call cost, at the model's prices; absent when none are.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    /// The oldest turns were summarized to stay inside the context window.
    Compacted {
        /// How many messages the summary replaced.
        messages_removed: usize,
        /// The summary now in their place.
        summary: String,
        /// The tokens of the model call that wrote it (the run's own
        /// usage leaves them out; `clix runs` adds them in).
        #[serde(default)]
        usage: Usage,
        /// What that call cost, at the model's prices; absent when none are.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    /// A model call failed in a way worth another try; the next one waits.
    Retry {
        /// The try that failed, from 1.
        attempt: u32,
        /// The wait before the next try, in milliseconds.
        wait_ms: u64,
        /// What went wrong, secrets scrubbed.
        error: String,
    },
    /// Something the person should know that did not end the run (memory
    /// that failed, a trajectory that cannot be written), or what did.
    Error {
        /// What happened, and what to do about it when there is something.
        message: String,
    },
    /// Facts about the run from the program that started it, in the
    /// trajectory only: the eval harness records the task, the tool design
    /// and where the task's absolute paths are in the attempt's workspace.
    Annotation {
        /// What the value is (`eval`).
        name: String,
        /// The facts.
        value: serde_json::Value,
    },
    /// The run ended.
    Done {
        /// Why (`answered`, `max_steps`, …, `error: <message>`).
        stop_reason: StopReason,
        /// The model's last text.
        answer: String,
        /// Steps taken.
        steps: u32,
        /// Tokens of the whole run, its fields beside the others
        /// (`input_tokens`, `output_tokens`, `cache_read_tokens`,
        /// `cache_write_tokens`; the last two 0 in files from before them).
        #[serde(flatten)]
        usage: Usage,
        /// What the run cost at the prices set for its model
        /// (`agent.prices`); absent when none are.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
}

/// The tool of a `tool_call` record written before records named it.
fn run_tool() -> String {
    crate::tools::TOOL.to_string()
}
