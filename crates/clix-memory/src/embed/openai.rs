//! Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
//! llama.cpp's server, vLLM…).

use std::time::Duration;

use serde_json::{Value, json};

use clix_common::Secret;

use super::{EmbedError, Embedder};

/// Embeds through `POST {base_url}/embeddings`, with the key as a bearer token.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    base_url: String,
    model: String,
    api_key: Option<Secret>,
}

impl OpenAiEmbedder {
    /// An embedder for `model` at `base_url` (e.g. `http://localhost:11434/v1`).
    pub fn new(base_url: &str, model: &str, api_key: Option<Secret>) -> Self {
        OpenAiEmbedder { base_url: base_url.trim_end_matches('/').to_string(), model: model.to_string(), api_key }
    }

    /// `message` with the configured key replaced by `***`.
    fn redact(&self, message: String) -> String {
        match self.api_key.as_ref().map(Secret::expose) {
            Some(key) if !key.is_empty() => message.replace(key, "***"),
            _ => message,
        }
    }

    fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let url = format!("{}/embeddings", self.base_url);
        // A server may quote the key it got in its error: never show it.
        let fail = |message: String| EmbedError::Request { url: url.clone(), message: self.redact(message) };
        let unavailable = |message: String| EmbedError::Unavailable { url: url.clone(), message: self.redact(message) };
        // reqwest is built without a default crypto provider; ring is lighter to build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let mut request = client.post(&url).json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response =
            request.send().map_err(|e| unavailable(format!("cannot reach it ({e}); is the server running?")))?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(unavailable(format!("HTTP {status}: the server is busy or failing; try again later")));
        }
        let body: Value = response.json().map_err(|e| fail(format!("HTTP {status}, not JSON: {e}")))?;
        if !status.is_success() {
            let message = body.pointer("/error/message").and_then(Value::as_str).unwrap_or("no message");
            return Err(fail(format!("HTTP {status}: {message} (check memory.model, memory.base_url and the key)")));
        }
        let data = body.get("data").and_then(Value::as_array).ok_or_else(|| fail("no \"data\" array".into()))?;
        let mut vectors = vec![Vec::new(); texts.len()];
        for (n, item) in data.iter().enumerate() {
            let index = item.get("index").and_then(Value::as_u64).map_or(n, |i| i as usize);
            let vector: Vec<f32> = item
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| fail(format!("data[{n}] has no \"embedding\" array")))?
                .iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect::<Option<_>>()
                .ok_or_else(|| fail(format!("data[{n}].embedding holds a non-number")))?;
            match vectors.get_mut(index) {
                Some(slot) => *slot = vector,
                None => return Err(fail(format!("data[{n}] has index {index}, past the {} inputs", texts.len()))),
            }
        }
        if vectors.iter().any(Vec::is_empty) {
            return Err(fail(format!("{} inputs but {} embeddings", texts.len(), data.len())));
        }
        Ok(vectors)
    }
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> String {
        format!("openai:{}:{}", self.base_url, self.model)
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // reqwest's blocking client refuses to run on an async runtime's
        // thread (the memory command runs on one): use a thread of its own.
        std::thread::scope(|s| s.spawn(|| self.request(texts)).join())
            .unwrap_or_else(|_| Err(EmbedError::Request { url: self.base_url.clone(), message: "panicked".into() }))
    }
}
