//! The Anthropic Messages API, streaming.

use std::collections::BTreeMap;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::{ChatRequest, ChatResponse, Provider, ProviderError, http_error};
use crate::message::{Message, Role, ToolCall, ToolSpec};

const API_VERSION: &str = "2023-06-01";

pub(super) async fn complete(
    p: &Provider,
    req: &ChatRequest<'_>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, ProviderError> {
    let body = body(p, req);
    let mut request =
        p.client.post(format!("{}/v1/messages", p.base_url)).header("anthropic-version", API_VERSION).json(&body);
    if let Some(key) = &p.api_key {
        request = request.header("x-api-key", key.expose());
    }
    let resp = request.send().await.map_err(|e| p.connect_error(e))?;
    if !resp.status().is_success() {
        return Err(http_error(resp).await);
    }

    let mut reply = ChatResponse::default();
    let mut tool_blocks: BTreeMap<u64, ToolCall> = BTreeMap::new();
    let mut events = resp.bytes_stream().eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| ProviderError::Protocol(format!("broken event stream: {e}")))?;
        if event.data.trim().is_empty() {
            continue;
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::Protocol(format!(
                "malformed stream event ({e}): {}",
                event.data.chars().take(200).collect::<String>()
            ))
        })?;
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match data.get("type").and_then(Value::as_str).unwrap_or(&event.event) {
            "message_start" => {
                reply.usage.input_tokens =
                    data.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0);
            }
            "content_block_start"
                if data.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use") =>
            {
                let field = |k: &str| {
                    data.pointer(&format!("/content_block/{k}")).and_then(Value::as_str).unwrap_or("").to_string()
                };
                tool_blocks.insert(index, ToolCall { id: field("id"), name: field("name"), arguments: String::new() });
            }
            "content_block_delta" => match data.pointer("/delta/type").and_then(Value::as_str) {
                Some("text_delta") => {
                    let text = data.pointer("/delta/text").and_then(Value::as_str).unwrap_or_default();
                    on_text(text);
                    reply.text.push_str(text);
                }
                Some("input_json_delta") => {
                    let part = data.pointer("/delta/partial_json").and_then(Value::as_str).unwrap_or_default();
                    if let Some(call) = tool_blocks.get_mut(&index) {
                        call.arguments.push_str(part);
                    }
                }
                _ => {}
            },
            "message_delta" => {
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    reply.usage.output_tokens = out;
                }
            }
            "error" => {
                let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                let kind = data.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                // An overload mid-stream is the streaming form of a 529.
                let status = if kind == "overloaded_error" { 529 } else { 500 };
                return Err(ProviderError::Http { status, message: message.to_string(), retry_after: None });
            }
            _ => {}
        }
    }
    reply.tool_calls = tool_blocks
        .into_values()
        .map(|mut c| {
            // A tool call without arguments streams no JSON at all.
            if c.arguments.is_empty() {
                c.arguments = "{}".into();
            }
            c
        })
        .collect();
    Ok(reply)
}

/// The request body of `req`: what is sent, and what `--show-prompt` shows.
pub(super) fn body(p: &Provider, req: &ChatRequest<'_>) -> Value {
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|ToolSpec { name, description, parameters }| {
            json!({"name": name, "description": description, "input_schema": parameters})
        })
        .collect();
    let system: Vec<&str> = req.messages.iter().filter(|m| m.role == Role::System).map(|m| m.text.as_str()).collect();
    let mut body = json!({
        "model": p.model,
        "max_tokens": req.max_output_tokens,
        "system": system.join("\n\n"),
        "messages": messages(req.messages),
        "tools": tools,
        "tool_choice": {"type": req.tool_choice.anthropic()},
        "stream": true,
    });
    if let Some(t) = p.temperature() {
        body["temperature"] = json!(t);
    }
    body
}

/// The wire form: system text goes in `system`; tool results and any
/// following user text or images merge into one user turn, because the API
/// wants user and assistant turns to alternate.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.text.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.text}));
                }
                for c in &m.tool_calls {
                    // The API needs an object; arguments that were not JSON go back as a string field.
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"_unparsed_arguments": c.arguments}));
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                }
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": "(empty)"}));
                }
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id,
                    "content": m.text,
                    "is_error": m.is_error,
                })],
            ),
            Role::User | Role::System => {
                let mut blocks = vec![json!({"type": "text", "text": m.text})];
                blocks.extend(m.images.iter().map(
                    |i| json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}}),
                ));
                ("user", blocks)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}
