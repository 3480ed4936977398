//! The OpenAI-compatible embedder against a scripted `/v1/embeddings`
//! server over real HTTP on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

#[path = "support/backends.rs"]
mod backends;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use backends::{Fixture, conformance};
use clix_memory::{Filter, MemorySettings, OpenAiEmbedder};

conformance!(openai_embedder_stores_and_searches_through_the_api, openai_errors_say_what_went_wrong_and_lose_nothing);
use serde_json::{Value, json};

/// (path, authorization header, body) of each request.
type Log = Arc<Mutex<Vec<(String, String, Value)>>>;

/// Answers with 3-dimensional vectors: [has "key"/"credentials", has
/// "lunch"/"food", 1]; with `status` != 200, an OpenAI-style error.
fn server(status: u16) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
            let (mut length, mut auth) = (0, String::new());
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap(),
                    "authorization" => auth = value.trim().to_string(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            let answer = if status == 200 {
                let data: Vec<Value> = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(i, text)| {
                        let t = text.as_str().unwrap().to_lowercase();
                        let key = f32::from(u8::from(t.contains("key") || t.contains("credentials")));
                        let food = f32::from(u8::from(t.contains("lunch") || t.contains("food")));
                        json!({"object": "embedding", "index": i, "embedding": [key, food, 0.1]})
                    })
                    .collect();
                json!({"object": "list", "data": data, "model": body["model"]})
            } else {
                // As OpenAI does, the error names (part of) the key it got.
                let key = auth.trim_start_matches("Bearer ");
                let message = format!("Incorrect API key provided: {key}. Find your key at platform.openai.com");
                json!({"error": {"message": message, "type": "invalid_request_error"}})
            };
            seen.lock().unwrap().push((path, auth, body));
            let text = answer.to_string();
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, log)
}

fn openai_embedder_stores_and_searches_through_the_api(f: Fixture) {
    let (url, log) = server(200);
    let settings = MemorySettings {
        embedder: "openai".into(),
        model: "test-embed".into(),
        base_url: url.clone(),
        ..Default::default()
    };
    let embedder = settings.embedder(|k| (k == "CLIX_MEMORY_API_KEY").then(|| "sk-memory".to_string())).unwrap();
    let mut s = f.open().with_embedder(embedder.unwrap()).unwrap();
    let answer = s.store("credentials are replaced every Friday", "ops", "fact", "").unwrap();
    s.store("lunch is served at noon", "ops", "note", "").unwrap();
    let hits = s.search("when does the signing key rotate", &Filter::default(), 1).unwrap();
    assert_eq!(hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(), vec![answer]);
    assert!(s.take_warnings().is_empty());
    assert_eq!(s.spaces().unwrap(), vec![(format!("openai:{url}:test-embed"), 3, 2)]);

    let log = log.lock().unwrap();
    assert_eq!(log.len(), 3, "two stores and one query");
    for (path, auth, body) in log.iter() {
        assert_eq!(path, "/v1/embeddings");
        assert_eq!(auth, "Bearer sk-memory");
        assert_eq!(body["model"], "test-embed");
    }
    assert_eq!(log[2].2["input"], json!(["when does the signing key rotate"]));
}

fn openai_errors_say_what_went_wrong_and_lose_nothing(f: Fixture) {
    let (url, _log) = server(401);
    let embedder = OpenAiEmbedder::new(&url, "test-embed", Some("sk-wrong".into()));
    let mut s = f.open().with_embedder(Box::new(embedder)).unwrap();
    let id = s.store("deploys go through CI", "ops", "note", "").unwrap();
    let warnings = s.take_warnings().join("\n");
    assert!(warnings.contains("HTTP 401") && warnings.contains("Incorrect API key provided"), "{warnings}");
    assert!(!warnings.contains("sk-wrong"), "the key is never shown: {warnings}");
    assert!(warnings.contains("Incorrect API key provided: ***."), "{warnings}");
    assert_eq!(s.get(id).unwrap().unwrap().text, "deploys go through CI");
    assert_eq!(s.search("deploys", &Filter::default(), 3).unwrap().len(), 1);

    // Nothing listening: a connection error that names the URL.
    let gone = OpenAiEmbedder::new("http://127.0.0.1:9/v1", "m", None);
    let mut s = f.another().open().with_embedder(Box::new(gone)).unwrap();
    s.store("x", "t", "note", "").unwrap();
    let warnings = s.take_warnings().join("\n");
    assert!(warnings.contains("http://127.0.0.1:9/v1/embeddings") && warnings.contains("cannot reach"), "{warnings}");
}
