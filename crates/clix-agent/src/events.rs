//! What a run reports as it goes: rendered by the CLI, written to the
//! trajectory, and printed as JSON lines with `--jsonl`.

use serde::{Deserialize, Serialize};

use crate::message::{Image, Message, ToolCall, ToolSpec};
use crate::provider::{ToolChoice, Usage};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Start {
        run_id: String,
        task: String,
        provider: String,
        model: String,
        workspace: String,
    },
    /// What the model is given, in full: the system prompt, the tool and
    /// the conversation after the system prompt. Recorded in the trajectory
    /// only (not shown, not in `--jsonl`): when a task begins, and again
    /// whenever the conversation changes other than by growing at its end
    /// (compaction replaced its oldest turns). With the `request` records
    /// after it, a run can be replayed call by call from its file.
    Context {
        system: String,
        tools: Vec<ToolSpec>,
        messages: Vec<Message>,
    },
    /// One model call (its retries included), in the trajectory only: the
    /// messages added to the conversation since the last `context` or
    /// `request` record. The call's whole conversation is the last
    /// `context`'s messages followed by the `added` of every `request`
    /// since, this one included.
    Request {
        step: u32,
        tool_choice: ToolChoice,
        max_output_tokens: u32,
        added: Vec<Message>,
    },
    /// A piece of the model's text as it streams (not kept in trajectories).
    Text {
        text: String,
    },
    /// The model's whole reply of one step.
    Response {
        step: u32,
        text: String,
        tool_calls: Vec<ToolCall>,
        usage: Usage,
    },
    ToolCall {
        step: u32,
        id: String,
        command: String,
        stdin: Option<String>,
    },
    ToolResult {
        step: u32,
        id: String,
        text: String,
        exit_code: i32,
        duration_ms: u64,
        images: Vec<Image>,
    },
    Usage {
        step: u32,
        input_tokens: u64,
        output_tokens: u64,
        total_tokens: u64,
    },
    /// Memories relevant to the task were put before it (a marked block).
    Recall {
        ids: Vec<i64>,
        block: String,
    },
    /// The session's summary was stored in memory.
    Remembered {
        id: i64,
        kind: String,
        text: String,
    },
    /// The oldest turns were summarized to stay inside the context window.
    Compacted {
        messages_removed: usize,
        summary: String,
    },
    Retry {
        attempt: u32,
        wait_ms: u64,
        error: String,
    },
    Error {
        message: String,
    },
    Done {
        stop_reason: String,
        answer: String,
        steps: u32,
        input_tokens: u64,
        output_tokens: u64,
    },
}
