//! A scripted model server for the tests of the agent and its front ends: real HTTP on 127.0.0.1 that answers each request
//! with the next prepared reply (SSE streams, errors, garbage) and records
//! every request it got.
#![allow(clippy::unwrap_used, missing_docs)] // a harness whose socket fails has failed its test; each item is named for what it serves

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A 2x1 red PNG.
pub const RED_PNG: &[u8] = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x01\x08\x02\x00\x00\x00\x7b\x40\xe8\xdd\x00\x00\x00\x0d\x49\x44\x41\x54\x78\x9c\x63\xf8\xcf\xc0\x00\x44\x00\x08\xfe\x01\xff\xc6\x9e\x79\xf7\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

/// One prepared answer.
#[derive(Clone)]
pub enum Reply {
    /// `text/event-stream` with these raw SSE frames (each ends with a blank line).
    Sse(Vec<String>),
    /// A status with extra headers and a body.
    Status(u16, Vec<(&'static str, String)>, String),
    /// Wait, then answer with the inner reply.
    Delay(Duration, Box<Reply>),
    /// Wait until the test's condition holds (an event it waits for: a
    /// second request arrived, it has looked at the client), then answer
    /// with the inner reply. See [`when`].
    When(Arc<dyn Fn() -> bool + Send + Sync>, Box<Reply>),
}

/// `reply`, held until `ready()`: polled, and at most [`WHEN_LIMIT`], so a
/// test whose event never comes fails on its own assertion instead of
/// hanging (and before a client's 60 s model-call limit).
pub fn when(ready: impl Fn() -> bool + Send + Sync + 'static, reply: Reply) -> Reply {
    Reply::When(Arc::new(ready), Box::new(reply))
}

/// The longest a [`Reply::When`] waits for its condition.
pub const WHEN_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

pub struct Server {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

pub async fn start(script: Vec<Reply>) -> Server {
    serve(script, None).await
}

/// A server whose replies `answer` computes from each request's body, for
/// requests that arrive in no set order (parallel runs). It also counts
/// the requests in flight at once; [`FnServer::most_at_once`] reads the peak.
pub async fn start_fn(answer: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FnServer {
    start_routes(move |request| answer(&request.body)).await
}

/// As [`start_fn`], with the whole request (its path and headers too) to
/// answer from: a server with more than one endpoint (`GET /v1/models`).
pub async fn start_routes(answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FnServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    let counts: Arc<Mutex<(usize, usize)>> = Arc::default();
    let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
    let (recorded, peak) = (Arc::clone(&requests), Arc::clone(&counts));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (answer, recorded, counts) = (Arc::clone(&answer), Arc::clone(&recorded), Arc::clone(&peak));
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else { return };
                // Counted in flight before `answer` sees it: an answer held
                // until this request arrives (`when`) must not be written
                // and uncounted before this one is counted, or two requests
                // that overlapped would show as one at a time.
                {
                    let mut c = counts.lock().unwrap();
                    c.0 += 1;
                    c.1 = c.1.max(c.0);
                }
                let reply = answer(&request);
                recorded.lock().unwrap().push(request);
                write_reply(&mut socket, reply).await;
                counts.lock().unwrap().0 -= 1;
            });
        }
    });
    FnServer { url, requests, counts }
}

/// See [`start_fn`].
pub struct FnServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    counts: Arc<Mutex<(usize, usize)>>,
}

impl FnServer {
    /// The most requests that were being answered at the same time.
    pub fn most_at_once(&self) -> usize {
        self.counts.lock().unwrap().1
    }
}

/// Like [`start`], but a summarization request (the agent compacting its
/// context) is answered with `summary` without using up the script.
pub async fn start_with_summarizer(script: Vec<Reply>, summary: &str) -> Server {
    serve(script, Some(summary.to_string())).await
}

async fn serve(script: Vec<Reply>, summary: Option<String>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
    let script = Arc::new(Mutex::new(std::collections::VecDeque::from(script)));
    let recorded = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (recorded, script, summary) = (Arc::clone(&recorded), Arc::clone(&script), summary.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else { return };
                let summarizing = request
                    .body
                    .pointer("/messages/0/content")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.starts_with("You summarize"));
                recorded.lock().unwrap().push(request);
                if let (true, Some(summary)) = (summarizing, summary) {
                    write_reply(&mut socket, openai_text(&summary, 1, 1)).await;
                    return;
                }
                let reply = script.lock().unwrap().pop_front();
                let reply = reply.unwrap_or(Reply::Status(500, vec![], "script exhausted".into()));
                write_reply(&mut socket, reply).await;
            });
        }
    });
    Server { url, requests }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let path = lines.next()?.split_whitespace().nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    Some(Recorded { path, headers, body })
}

async fn write_reply(socket: &mut tokio::net::TcpStream, reply: Reply) {
    let (status, headers, body, content_type) = match reply {
        Reply::Delay(wait, inner) => {
            tokio::time::sleep(wait).await;
            return Box::pin(write_reply(socket, *inner)).await;
        }
        Reply::When(ready, inner) => {
            let end = tokio::time::Instant::now() + WHEN_LIMIT;
            while !ready() && tokio::time::Instant::now() < end {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            return Box::pin(write_reply(socket, *inner)).await;
        }
        Reply::Sse(frames) => (200, vec![], frames.concat(), "text/event-stream"),
        Reply::Status(code, headers, body) => (code, headers, body, "application/json"),
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.shutdown().await;
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

/// An OpenAI-style stream of `text` in small pieces, with usage.
pub fn openai_text(text: &str, input_tokens: u64, output_tokens: u64) -> Reply {
    let mut frames: Vec<String> = text
        .as_bytes()
        .chunks(5)
        .map(|c| data(json!({"choices": [{"index": 0, "delta": {"content": String::from_utf8_lossy(c)}}]})))
        .collect();
    frames.push(data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    frames.push(data(
        json!({"choices": [], "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}}),
    ));
    frames.push("data: [DONE]\n\n".into());
    Reply::Sse(frames)
}

/// An OpenAI-style stream with these tool calls `(name, arguments)`, the
/// arguments split across chunks as real servers do.
pub fn openai_calls(calls: &[(&str, &str)], input_tokens: u64, output_tokens: u64) -> Reply {
    let mut frames = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        frames.push(data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": ""}}
        ]}}]})));
        for piece in args.as_bytes().chunks(7) {
            frames.push(data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": String::from_utf8_lossy(piece)}}
            ]}}]})));
        }
    }
    frames.push(data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
    frames.push(data(
        json!({"choices": [], "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}}),
    ));
    frames.push("data: [DONE]\n\n".into());
    Reply::Sse(frames)
}

/// `reply` (a stream) with `extra` merged into the JSON of each frame that
/// has `pointer` (`/usage` of an OpenAI stream's usage chunk,
/// `/message/usage` of Anthropic's `message_start`): the usage fields a real
/// server adds that the builders above leave out (cached tokens, llama.cpp's
/// `timings`).
pub fn with_usage(reply: Reply, pointer: &str, extra: &Value) -> Reply {
    fn merge(into: &mut Value, extra: &Value) {
        match (into, extra) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (slot, v) => *slot = v.clone(),
        }
    }
    let Reply::Sse(frames) = reply else { panic!("with_usage takes a stream") };
    let frames = frames
        .into_iter()
        .map(|frame| {
            let Some((head, data)) = frame.split_once("data: ") else { return frame };
            match serde_json::from_str::<Value>(data.trim()) {
                Ok(mut v) if v.pointer(pointer).is_some() => {
                    merge(&mut v, extra);
                    format!("{head}data: {v}\n\n")
                }
                _ => frame,
            }
        })
        .collect();
    Reply::Sse(frames)
}

/// A non-streamed Chat Completions reply.
pub fn openai_json(text: &str) -> Reply {
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
    Reply::Status(200, vec![], body.to_string())
}

pub fn run_call(command: &str) -> String {
    json!({ "command": command }).to_string()
}

fn event(name: &str, v: Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

/// An Anthropic Messages stream: optional text, then tool uses `(id, input)`.
pub fn anthropic_reply(text: &str, tools: &[(&str, &str)], input_tokens: u64, output_tokens: u64) -> Reply {
    let mut frames = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [], "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in text.as_bytes().chunks(4) {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": String::from_utf8_lossy(piece)}}),
            ));
        }
        frames.push(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
        index = 1;
    }
    for (id, input) in tools {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": "run", "input": {}}}),
        ));
        for piece in input.as_bytes().chunks(6) {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": String::from_utf8_lossy(piece)}}),
            ));
        }
        frames.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let stop = if tools.is_empty() { "end_turn" } else { "tool_use" };
    frames.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output_tokens}}),
    ));
    frames.push(event("message_stop", json!({"type": "message_stop"})));
    Reply::Sse(frames)
}
