//! Model providers behind one call: send the conversation, stream the reply.

mod anthropic;
mod openai;
mod retry;

use std::time::Duration;

use clix_common::Secret;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, ToolCall, ToolSpec};
use crate::settings::{ProviderKind, ResolvedProvider};

pub(crate) use retry::RetryPolicy;

/// Whether the model may call the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model calls the tool or answers, as it sees fit.
    Auto,
    /// A last call after a budget ran out: the model must answer in text.
    None,
    /// The model must call a tool: asked again after a first answer given
    /// without looking (`agent.look_first`) or a command shown, not run.
    Required,
}

impl ToolChoice {
    /// The OpenAI Chat Completions name (`tool_choice`).
    pub(crate) fn openai(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        }
    }

    /// The Anthropic Messages name (`tool_choice.type`).
    pub(crate) fn anthropic(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "any",
        }
    }
}

/// One model call.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    /// The whole conversation, system prompt first.
    pub messages: &'a [Message],
    /// The tools offered (clix's: the one `run` tool).
    pub tools: &'a [ToolSpec],
    /// Whether the model may call them.
    pub tool_choice: ToolChoice,
    /// The cap on the reply's length, in tokens.
    pub max_output_tokens: u32,
}

/// Tokens of one call or a run, as the provider counted them (0 when it
/// does not say). The input splits into the part read from the provider's
/// prompt cache, the part written to it, and the rest
/// ([`Usage::uncached_input_tokens`]); each is billed at its own price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the conversation sent, all of them: cached or not.
    pub input_tokens: u64,
    /// Tokens of the reply.
    pub output_tokens: u64,
    /// Of the input, the tokens read from the provider's prompt cache
    /// (OpenAI's `cached_tokens`, Anthropic's `cache_read_input_tokens`,
    /// llama.cpp's `cache_n`). Records from before it read as 0.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of the input, the tokens written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, billed above plain input).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Input plus output: what `agent.max_total_tokens` limits.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The input neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_read_tokens + self.cache_write_tokens)
    }

    /// Adds `other`'s tokens: a run's usage is the sum of its calls'.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// The model's reply to one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatResponse {
    /// Its text (empty when it only called the tool).
    pub text: String,
    /// Its tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The call's tokens.
    pub usage: Usage,
}

/// Why a model call failed; messages are scrubbed of keys.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with an error status.
    #[error("HTTP {status} from the model provider: {message}")]
    Http {
        /// The HTTP status (429 and 5xx are retried).
        status: u16,
        /// The provider's own message, else the start of the body.
        message: String,
        /// The server's `Retry-After`, honoured (capped) before the next try.
        retry_after: Option<Duration>,
    },
    /// No connection (refused, reset, DNS, TLS).
    #[error("cannot reach the model provider at {url}: {message}")]
    Connect {
        /// The base URL called.
        url: String,
        /// The cause, with its chain.
        message: String,
    },
    /// The connection was refused at clix's default endpoint, which no one
    /// configured: nothing to retry, a model to set up.
    #[error(
        "nothing is listening at {url}, clix's default endpoint (a local Ollama), and no model is configured. \
         Set one up: `[agent] base_url` and `model` in the config file (`clix config path`), or AGENT_BASE_URL \
         and AGENT_MODEL, or OPENAI_API_KEY, or ANTHROPIC_API_KEY; see \"Agent\" in the README"
    )]
    NothingListening {
        /// The default endpoint called.
        url: String,
    },
    /// The call took longer than `agent.model_call_secs`.
    #[error("the model call took longer than {0:?}")]
    Timeout(Duration),
    /// A reply that is not what the API promises (a garbled stream chunk).
    #[error("unexpected reply from the model provider: {0}")]
    Protocol(String),
}

impl ProviderError {
    /// 429, 5xx, connection errors, time-outs and garbled streams are worth
    /// another try; any other 4xx is a mistake that repeating will not fix.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => *status == 429 || *status >= 500,
            ProviderError::NothingListening { .. } => false,
            _ => true,
        }
    }
}

/// A configured model endpoint.
#[derive(Debug, Clone)]
pub struct Provider {
    kind: ProviderKind,
    base_url: String,
    /// Shown as `***` by Debug: a provider may be logged whole.
    api_key: Option<Secret>,
    /// The model's name as the provider knows it.
    pub model: String,
    stream: bool,
    temperature: Option<f64>,
    /// The endpoint is clix's fallback, not the person's ([`ResolvedProvider::default_endpoint`]).
    default_endpoint: bool,
    client: reqwest::Client,
}

impl Provider {
    /// A client for the endpoint `resolved` names (no request is made yet).
    pub fn new(resolved: &ResolvedProvider) -> Self {
        // reqwest is built without a default crypto provider; ring is lighter to build.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No idle connections are kept: a server that drops a request (llama.cpp
        // does) leaves a dead pooled connection that the next call would hit.
        // A fresh connection costs nothing next to a model call.
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap_or_default();
        Provider {
            kind: resolved.kind,
            base_url: resolved.base_url.trim_end_matches('/').to_string(),
            api_key: resolved.api_key.clone(),
            model: resolved.model.clone(),
            stream: resolved.stream,
            temperature: resolved.temperature,
            default_endpoint: resolved.default_endpoint,
            client,
        }
    }

    /// The key sent with every call, for the trajectory to hide.
    pub(crate) fn api_key(&self) -> Option<&Secret> {
        self.api_key.as_ref()
    }

    /// The endpoint, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The sampling temperature sent, when one is.
    pub(crate) fn temperature(&self) -> Option<f64> {
        self.temperature
    }

    /// Which API it speaks.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The same endpoint, asked without streaming (an OpenAI-compatible
    /// one; Anthropic replies always stream).
    pub(crate) fn unstreamed(&self) -> Provider {
        Provider { stream: false, ..self.clone() }
    }

    /// What a call of `req` sends of its system prompt and tools, as the
    /// API's body has them (`clix ask --show-prompt`): `{"system", "tools"}`.
    pub fn shown_prompt(&self, req: &ChatRequest<'_>) -> serde_json::Value {
        let (system, tools) = match self.kind {
            ProviderKind::OpenAi => {
                let mut body = openai::body(self, req, self.stream);
                let system: Vec<serde_json::Value> = body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["role"] == "system")
                    .map(|m| m["content"].clone())
                    .collect();
                let system = if system.len() == 1 { system[0].clone() } else { serde_json::Value::from(system) };
                (system, body["tools"].take())
            }
            ProviderKind::Anthropic => {
                let mut body = anthropic::body(self, req);
                (body["system"].take(), body["tools"].take())
            }
        };
        serde_json::json!({ "system": system, "tools": tools })
    }

    /// One call, with text deltas passed to `on_text` as they stream in.
    pub async fn complete(
        &self,
        req: &ChatRequest<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let result = match self.kind {
            ProviderKind::OpenAi => openai::complete(self, req, on_text).await,
            ProviderKind::Anthropic => anthropic::complete(self, req, on_text).await,
        };
        result.map_err(|e| self.scrub(e))
    }

    /// `e` with this provider's key and every key of the secret store
    /// hidden: a server may quote a rejected key back, and the error goes
    /// to the terminal, the trajectory and the log.
    fn scrub(&self, e: ProviderError) -> ProviderError {
        let clean = |text: String| {
            let text = clix_config::secrets::scrub(&text).into_owned();
            match &self.api_key {
                Some(key) if key.expose().len() >= 8 => text.replace(key.expose(), "***"),
                _ => text,
            }
        };
        match e {
            ProviderError::Http { status, message, retry_after } => {
                ProviderError::Http { status, message: clean(message), retry_after }
            }
            ProviderError::Connect { url, message } => {
                ProviderError::Connect { url: clean(url), message: clean(message) }
            }
            ProviderError::Protocol(message) => ProviderError::Protocol(clean(message)),
            ProviderError::Timeout(limit) => ProviderError::Timeout(limit),
            ProviderError::NothingListening { url } => ProviderError::NothingListening { url: clean(url) },
        }
    }

    fn connect_error(&self, e: reqwest::Error) -> ProviderError {
        if self.default_endpoint && refused(&e) {
            return ProviderError::NothingListening { url: self.base_url.clone() };
        }
        // reqwest's own message is generic; the cause (refused, reset, DNS) is in the chain.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        ProviderError::Connect { url: self.base_url.clone(), message }
    }
}

/// The connection was refused: nothing listens at the address (the cause
/// is an I/O error deep in reqwest's chain).
fn refused(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused) {
            return true;
        }
        source = cause.source();
    }
    false
}

/// Turns a non-success HTTP response into an error, keeping the provider's
/// message and any `Retry-After`.
async fn http_error(resp: reqwest::Response) -> ProviderError {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        // A negative, NaN, infinite or huge value is no wait at all (found by fuzzing).
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok());
    let body = resp.text().await.unwrap_or_default();
    let message = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message").or_else(|| v.get("message")).and_then(Value::as_str).map(str::to_string)
        })
        .unwrap_or_else(|| body.chars().take(500).collect());
    ProviderError::Http { status, message, retry_after }
}
