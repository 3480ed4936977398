//! A provider-neutral conversation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt: who the agent is, its tool, memory facts. The
    /// conversation starts with the stable prompt, then the session's
    /// notes, each a system message of its own ([`split_system`]).
    System,
    /// The person's task, recall blocks, images from `see`, and the loop's
    /// own notes (an empty reply, a budget used up, a compaction summary).
    User,
    /// The model's replies.
    Assistant,
    /// A tool result, answering one call.
    Tool,
}

/// An image for the model, already scaled by `see`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Its type, e.g. `image/png`.
    pub mime: String,
    /// Base64 of the encoded image.
    pub data: String,
}

/// One tool call of a model's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id its result must carry (made up when a server sends none).
    pub id: String,
    /// The tool called (anything but `run` is answered with an error).
    pub name: String,
    /// The arguments exactly as the model sent them (maybe not valid JSON).
    pub arguments: String,
}

/// One turn of the conversation; each provider puts it in its wire form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who it is from.
    pub role: Role,
    /// Its text (empty for a reply that only calls the tool).
    pub text: String,
    /// For [`Role::User`]: images the model is shown with the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// For [`Role::Assistant`]: the tool calls of the reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`]: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For [`Role::Tool`]: the command failed (non-zero exit or a bad call).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    /// A message of plain text.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message { role, text: text.into(), images: vec![], tool_calls: vec![], tool_call_id: None, is_error: false }
    }

    /// The answer to call `call_id`; `is_error` when the command failed.
    pub fn tool_result(call_id: &str, text: impl Into<String>, is_error: bool) -> Self {
        Message { tool_call_id: Some(call_id.to_string()), is_error, ..Message::new(Role::Tool, text) }
    }
}

/// A tool as the model is told about it, the same for every provider (each
/// puts it in its own wire form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by (`run`).
    pub name: String,
    /// What it does and how to call it, as the model reads it.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// Between the system prompt's parts where a provider takes it as one text.
pub(crate) const SYSTEM_JOIN: &str = "\n\n";

/// The texts of the system messages the conversation starts with (the
/// stable prompt `Agent::new` built, then the notes added for the session),
/// and the conversation after them. Providers send the stable part first,
/// so the prefix a prompt cache matches on ends as late as it can.
pub(crate) fn split_system(messages: &[Message]) -> (Vec<&str>, &[Message]) {
    let count = messages.iter().take_while(|m| m.role == Role::System).count();
    let (system, rest) = messages.split_at(count);
    (system.iter().map(|m| m.text.as_str()).collect(), rest)
}
