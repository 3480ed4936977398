//! OpenAI-compatible Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, …).

use std::collections::BTreeMap;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::{ChatRequest, ChatResponse, Provider, ProviderError, Usage, http_error};
use crate::message::{Message, Role, SYSTEM_JOIN, ToolCall, ToolSpec, split_system};

pub(super) async fn complete(
    p: &Provider,
    req: &ChatRequest<'_>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, ProviderError> {
    if p.stream {
        // llama.cpp's server answers a streamed request with `auto` tool
        // choice with an empty body, or drops the connection; the same
        // request unstreamed works.
        match streamed(p, req, on_text).await {
            Ok(reply) if !(reply.text.is_empty() && reply.tool_calls.is_empty()) => return Ok(reply),
            Ok(_) => tracing::debug!(
                model = %p.model,
                "model call: the streamed reply was empty; the same request again, unstreamed"
            ),
            Err(Streamed::Dropped) => tracing::debug!(
                model = %p.model,
                "model call: no answer to the streamed request; the same request again, unstreamed"
            ),
            Err(Streamed::Failed(e)) => return Err(e),
        }
    }
    let reply = unstreamed(p, req).await?;
    if !reply.text.is_empty() {
        on_text(&reply.text);
    }
    Ok(reply)
}

/// The request body of `req`: what is sent, and what `--show-prompt` shows.
pub(super) fn body(p: &Provider, req: &ChatRequest<'_>, stream: bool) -> Value {
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|ToolSpec { name, description, parameters }| {
            json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
        })
        .collect();
    let mut body = json!({
        "model": p.model,
        "messages": messages(req.messages),
        "tools": tools,
        "tool_choice": req.tool_choice.openai(),
        "max_tokens": req.max_output_tokens,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(t) = p.temperature() {
        body["temperature"] = json!(t);
    }
    body
}

/// The wire form of the conversation. The system prompt is one message,
/// its stable part first and the session's notes after it. Tool messages
/// cannot carry images in this API, so images ride in a user message (the
/// loop puts them there).
fn messages(messages: &[Message]) -> Vec<Value> {
    let (system, rest) = split_system(messages);
    let system = (!system.is_empty()).then(|| json!({"role": "system", "content": system.join(SYSTEM_JOIN)}));
    system
        .into_iter()
        .chain(rest.iter().map(|m| match m.role {
            Role::System => json!({"role": "system", "content": m.text}),
            Role::User if m.images.is_empty() => json!({"role": "user", "content": m.text}),
            Role::User => {
                let mut parts = vec![json!({"type": "text", "text": m.text})];
                parts.extend(m.images.iter().map(|i| {
                    json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", i.mime, i.data)}})
                }));
                json!({"role": "user", "content": parts})
            }
            Role::Assistant => {
                // `content` must be a string, even empty: some servers reject null.
                let mut msg = json!({"role": "assistant", "content": m.text});
                if !m.tool_calls.is_empty() {
                    msg["tool_calls"] = m
                        .tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                msg
            }
            Role::Tool => json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text}),
        }))
        .collect()
}

/// Why a streamed call gave nothing usable.
enum Streamed {
    /// No reply to the streamed request (llama.cpp drops it).
    Dropped,
    /// An error the unstreamed try would repeat (an HTTP error status).
    Failed(ProviderError),
}

async fn send(p: &Provider, body: &Value) -> Result<reqwest::Response, reqwest::Error> {
    let mut request = p.client.post(format!("{}/chat/completions", p.base_url)).json(body);
    if let Some(key) = &p.api_key {
        request = request.bearer_auth(key.expose());
    }
    request.send().await
}

async fn streamed(
    p: &Provider,
    req: &ChatRequest<'_>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, Streamed> {
    let resp = match send(p, &body(p, req, true)).await {
        Ok(resp) if resp.status().is_success() => resp,
        Ok(resp) => return Err(Streamed::Failed(http_error(resp).await)),
        // Unreachable or dropped: the unstreamed try tells which, and says so.
        Err(_) => return Err(Streamed::Dropped),
    };
    let mut events = resp.bytes_stream().eventsource();
    let mut reply = ChatResponse::default();
    // Tool calls arrive in pieces keyed by their index.
    let mut calls: BTreeMap<u64, ToolCall> = BTreeMap::new();
    let fail = |m: String| Streamed::Failed(ProviderError::Protocol(m));
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| fail(format!("broken event stream: {e}")))?;
        if event.data.trim() == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|e| fail(format!("malformed stream chunk ({e}): {}", clip(&event.data))))?;
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if chunk.get("usage").is_some_and(|u| !u.is_null()) {
            reply.usage = usage_of(&chunk);
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else { continue };
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            on_text(text);
            reply.text.push_str(text);
        }
        for piece in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = piece.get("index").and_then(Value::as_u64).unwrap_or(0);
            let call = calls.entry(index).or_insert_with(|| ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            if let Some(id) = piece.get("id").and_then(Value::as_str) {
                call.id.push_str(id);
            }
            if let Some(name) = piece.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(args) = piece.pointer("/function/arguments").and_then(Value::as_str) {
                call.arguments.push_str(args);
            }
        }
    }
    reply.tool_calls = calls.into_values().enumerate().map(|(i, c)| with_id(c, i)).collect();
    Ok(reply)
}

/// An error the server sent inside the stream, after its 200. One with an
/// HTTP status in its `code` is that status's error: llama.cpp's server
/// sends `{"code": 500, "message": "Invalid diff: …"}` so once the reply has
/// begun, and a server error is retried unstreamed (`model_call`).
fn stream_error(error: &Value) -> Streamed {
    let status = error.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
    match status.filter(|s| (400..600).contains(s)) {
        Some(status) => Streamed::Failed(ProviderError::Http {
            status,
            message: error.get("message").and_then(Value::as_str).unwrap_or("error in stream").to_string(),
            retry_after: None,
        }),
        None => Streamed::Failed(ProviderError::Protocol(format!("error in stream: {error}"))),
    }
}

async fn unstreamed(p: &Provider, req: &ChatRequest<'_>) -> Result<ChatResponse, ProviderError> {
    let resp = send(p, &body(p, req, false)).await.map_err(|e| p.connect_error(e))?;
    if !resp.status().is_success() {
        return Err(http_error(resp).await);
    }
    let value: Value = resp.json().await.map_err(|e| ProviderError::Protocol(format!("reply is not JSON: {e}")))?;
    let message = value
        .pointer("/choices/0/message")
        .ok_or_else(|| ProviderError::Protocol(format!("no choices[0].message in {}", clip(&value.to_string()))))?;
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            let field = |path: &str| c.pointer(path).and_then(Value::as_str).unwrap_or_default().to_string();
            with_id(
                ToolCall { id: field("/id"), name: field("/function/name"), arguments: field("/function/arguments") },
                i,
            )
        })
        .collect();
    Ok(ChatResponse {
        text: message.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
        tool_calls,
        usage: usage_of(&value),
    })
}

/// Some servers omit tool-call ids; every call needs one to be answered.
fn with_id(mut call: ToolCall, index: usize) -> ToolCall {
    if call.id.is_empty() {
        call.id = format!("call_{index}");
    }
    call
}

/// The usage of a reply (or of the stream chunk that carries it).
/// `prompt_tokens` counts the cached tokens too; OpenAI says how many in
/// `usage.prompt_tokens_details.cached_tokens`, llama.cpp's server (b7710,
/// seen with xllamacpp 0.2.9) only in its own `timings.cache_n`, beside
/// `usage` (`prompt_tokens` = `cache_n` + `prompt_n`). Neither writes to
/// a cache at a price of its own.
fn usage_of(reply: &Value) -> Usage {
    let n = |path: &str| reply.pointer(path).and_then(Value::as_u64);
    let input_tokens = n("/usage/prompt_tokens").unwrap_or(0);
    let cached = n("/usage/prompt_tokens_details/cached_tokens").or_else(|| n("/timings/cache_n")).unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens: n("/usage/completion_tokens").unwrap_or(0),
        cache_read_tokens: cached.min(input_tokens),
        cache_write_tokens: 0,
    }
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}
