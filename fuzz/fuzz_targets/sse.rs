//! The model providers' reply parsing (SSE streams and JSON), through the
//! public `Provider::complete` against a loopback HTTP server that answers
//! with the fuzz input, then each tool call through the agent loop's own
//! argument parser (with the raw-control-character repair).
//!
//! Input: byte 0 picks the shape (bit 0: Anthropic, else OpenAI; bit 1: an
//! OpenAI provider set to not stream, so the body is read as one JSON
//! reply; bits 2-4: the HTTP status, 200 for 0-4, then 400, 429, 500); the
//! rest is the HTTP response body, served to every request of that input
//! (an OpenAI stream with nothing usable in it is retried unstreamed, and
//! that request gets the same body). For an error status the body's first
//! line is the `Retry-After` header's value and the rest the body.
//!
//! Properties checked on every input:
//! - nothing panics;
//! - the text passed to `on_text` as it streamed is exactly the reply's text;
//! - every tool call has an id (servers may omit them; a call without one
//!   cannot be answered), and an Anthropic call has arguments (`{}` at least);
//! - an error never carries the provider's API key, even when the body
//!   quotes it back;
//! - the loop's parser either gives a non-empty, trimmed command or an
//!   `[error] …` text that says what to send instead.

#![no_main]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, LazyLock, Mutex};

use clix_agent::fuzzing::parse_run_call;
use clix_agent::{ChatRequest, Message, Provider, ProviderKind, ResolvedProvider, Role, ToolChoice, ToolSpec};
use libfuzzer_sys::fuzz_target;

/// The provider's key: must never show in an error.
const KEY: &str = "sk-fuzz-canary-5bd0e8a1c4";

/// What the server answers with, set per input.
#[derive(Default, Clone)]
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Vec<u8>,
}

struct Fixture {
    answer: Arc<Mutex<Answer>>,
    /// OpenAI streaming, OpenAI unstreamed, Anthropic: made once (a client
    /// costs more to build than a whole reply costs to parse).
    providers: [Provider; 3],
    runtime: tokio::runtime::Runtime,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let answer: Arc<Mutex<Answer>> = Arc::default();
    let served = Arc::clone(&answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if read_request(&mut stream).is_none() {
                continue;
            }
            let Answer { status, retry_after, body } = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            if let Some(value) = retry_after {
                head.push_str(&format!("retry-after: {value}\r\n"));
            }
            head.push_str("\r\n");
            // One write: a second small one would wait for the client's delayed ACK.
            let mut response = head.into_bytes();
            response.extend_from_slice(&body);
            let _ = stream.write_all(&response);
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let provider = |kind, stream| {
        Provider::new(&ResolvedProvider {
            kind,
            base_url: url.clone(),
            api_key: Some(KEY.into()),
            model: "fuzz-model".into(),
            stream,
        })
    };
    let providers = [
        provider(ProviderKind::OpenAi, true),
        provider(ProviderKind::OpenAi, false),
        provider(ProviderKind::Anthropic, true),
    ];
    Fixture { answer, providers, runtime }
});

/// Reads one request (head and a `content-length` body) so that the client
/// never sees its request cut off.
fn read_request(stream: &mut std::net::TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, body)) = data.split_first() else { return };
    let f = &*FIXTURE;
    let status = [200, 200, 200, 200, 200, 400, 429, 500][usize::from(shape >> 2 & 7)];
    let answer = if status == 200 {
        Answer { status, retry_after: None, body: body.to_vec() }
    } else {
        // A header value is one line of visible ASCII; anything else the client refuses on its own.
        let at = body.iter().position(|&b| b == b'\n').unwrap_or(0);
        let value = String::from_utf8_lossy(&body[..at]);
        let retry_after = value.chars().all(|c| c.is_ascii_graphic() || c == ' ').then(|| value.into_owned());
        Answer { status, retry_after, body: body[at.min(body.len())..].to_vec() }
    };
    *f.answer.lock().unwrap_or_else(|e| e.into_inner()) = answer;
    let anthropic = shape & 1 != 0;
    let provider = match (anthropic, shape & 2 == 0) {
        (true, _) => &f.providers[2],
        (false, true) => &f.providers[0],
        (false, false) => &f.providers[1],
    };
    let tool = ToolSpec {
        name: "run".into(),
        description: "run a command line".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    };
    let messages = [Message::new(Role::System, "be brief"), Message::new(Role::User, "count the lines")];
    let request = ChatRequest {
        messages: &messages,
        tools: std::slice::from_ref(&tool),
        tool_choice: ToolChoice::Auto,
        max_output_tokens: 64,
    };
    let mut streamed = String::new();
    let reply = f.runtime.block_on(provider.complete(&request, &mut |t: &str| streamed.push_str(t)));

    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let shown = format!("{e} {e:?}");
            assert!(!shown.contains(KEY), "the API key in an error: {shown}");
            return;
        }
    };
    assert_eq!(streamed, reply.text, "on_text saw other text than the reply kept");
    for call in &reply.tool_calls {
        assert!(!call.id.is_empty(), "a tool call without an id: {call:?}");
        if anthropic {
            assert!(!call.arguments.is_empty(), "an Anthropic tool call without arguments: {call:?}");
        }
        match parse_run_call(call) {
            Ok((command, _stdin)) => {
                assert!(!command.is_empty() && command.trim() == command, "command {command:?} from {call:?}");
            }
            Err(message) => assert!(message.starts_with("[error] "), "the model gets {message:?}"),
        }
    }
});
