//! The Anthropic Messages API, streaming, with prompt-cache breakpoints.
//!
//! A request marks three of the API's four allowed `cache_control`
//! breakpoints: the last tool definition, the system prompt's stable block
//! (the session's notes follow it, unmarked), and the newest message's last
//! content block. Everything before a breakpoint is read from the cache when
//! an earlier request had it (a tenth of the input price) and written to it
//! otherwise, so every step pays in full only for what is new since the last.

use std::collections::BTreeMap;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::{ChatRequest, ChatResponse, Provider, ProviderError, Usage, http_error};
use crate::message::{Message, Role, ToolCall, ToolSpec, split_system};

pub(super) const API_VERSION: &str = "2023-06-01";

pub(super) async fn complete(
    p: &Provider,
    req: &ChatRequest<'_>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, ProviderError> {
    let mut request = p
        .client
        .post(format!("{}/v1/messages", p.base_url))
        .header("anthropic-version", API_VERSION)
        .json(&body(p, req));
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
                if let Some(usage) = data.pointer("/message/usage") {
                    read_usage(usage, &mut reply.usage);
                }
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
                if let Some(usage) = data.get("usage") {
                    read_usage(usage, &mut reply.usage);
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

/// The request body of `req`, its breakpoints marked (see the module's
/// doc): what is sent, and what `--show-prompt` shows.
pub(super) fn body(p: &Provider, req: &ChatRequest<'_>) -> Value {
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|ToolSpec { name, description, parameters }| {
            json!({"name": name, "description": description, "input_schema": parameters})
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = breakpoint();
    }
    let (system, rest) = split_system(req.messages);
    let mut messages = messages(rest);
    if let Some(last) = messages.last_mut().and_then(|m| m["content"].as_array_mut()).and_then(|c| c.last_mut()) {
        last["cache_control"] = breakpoint();
    }
    let mut body = json!({
        "model": p.model,
        "max_tokens": req.max_output_tokens,
        "system": system_blocks(&system),
        "messages": messages,
        "tools": tools,
        "tool_choice": {"type": req.tool_choice.anthropic()},
        "stream": true,
    });
    if let Some(t) = p.temperature() {
        body["temperature"] = json!(t);
    }
    body
}

/// A `cache_control` breakpoint: the prefix up to here is cached (five minutes).
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// The system prompt as text blocks: the stable part, marked as a
/// breakpoint, then each of the session's notes (memory facts change
/// between sessions; the stable part's cache outlives them). Empty texts are
/// left out: the API refuses an empty text block.
fn system_blocks(system: &[&str]) -> Vec<Value> {
    system
        .iter()
        .enumerate()
        .filter(|(_, text)| !text.is_empty())
        .map(|(i, text)| {
            let mut block = json!({"type": "text", "text": text});
            if i == 0 {
                block["cache_control"] = breakpoint();
            }
            block
        })
        .collect()
}

/// Anthropic's `input_tokens` leaves out what was read from or written to
/// the cache, so the input is the sum of the three. `message_start` carries
/// them, `message_delta` the final output count (and, in newer versions,
/// the input again); what an event leaves out keeps its value.
fn read_usage(u: &Value, usage: &mut Usage) {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let fresh = n("input_tokens").unwrap_or_else(|| usage.uncached_input_tokens());
    usage.cache_read_tokens = n("cache_read_input_tokens").unwrap_or(usage.cache_read_tokens);
    usage.cache_write_tokens = n("cache_creation_input_tokens").unwrap_or(usage.cache_write_tokens);
    usage.input_tokens = fresh + usage.cache_read_tokens + usage.cache_write_tokens;
    if let Some(out) = n("output_tokens") {
        usage.output_tokens = out;
    }
}

/// The wire form of the conversation after the system prompt: tool results
/// and any following user text or images merge into one user turn, because
/// the API wants user and assistant turns to alternate.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
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
