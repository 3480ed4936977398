//! A provider-neutral conversation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// An image for the model, already scaled by `see`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub mime: String,
    /// Base64 of the encoded image.
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model sent them (maybe not valid JSON).
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
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
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message { role, text: text.into(), images: vec![], tool_calls: vec![], tool_call_id: None, is_error: false }
    }

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
