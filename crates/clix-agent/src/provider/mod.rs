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
         and AGENT_MODEL, or OPENAI_API_KEY, or ANTHROPIC_API_KEY; see docs/agent.md"
    )]
    NothingListening {
        /// The default endpoint called.
        url: String,
    },
    /// The call took longer than `agent.model_call_secs`.
    #[error(
        "the model at {url} did not answer within {}s (agent.model_call_secs); is the server overloaded or stuck?",
        limit.as_secs_f64()
    )]
    Timeout {
        /// The limit that ran out.
        limit: Duration,
        /// The endpoint called.
        url: String,
    },
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
    /// Where the key, the endpoint and the model came from, for errors that
    /// say what to fix (see [`ResolvedProvider::from_env`]).
    from_env: Vec<(&'static str, &'static str)>,
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
            base_url: endpoint(resolved.kind, &resolved.base_url),
            api_key: resolved.api_key.clone(),
            model: resolved.model.clone(),
            stream: resolved.stream,
            temperature: resolved.temperature,
            default_endpoint: resolved.default_endpoint,
            from_env: resolved.from_env.clone(),
            client,
        }
    }

    /// Where `setting` came from, as a person would fix it: its variable,
    /// else the config file's key.
    fn source_of(&self, setting: &str) -> String {
        match self.from_env.iter().find(|(s, _)| *s == setting) {
            Some((_, var)) => (*var).to_string(),
            None => format!("`[agent] {}` in the config file", setting.trim_start_matches("agent.")),
        }
    }

    /// `e` with what to do about it, where the error alone does not say:
    /// which key was refused, which models the server has, that an
    /// endpoint someone set is not answering.
    async fn explained(&self, e: ProviderError) -> ProviderError {
        match e {
            ProviderError::Http { status: status @ (401 | 403), message, retry_after } => {
                let hint = match &self.api_key {
                    Some(_) => format!(
                        "the API key was refused; check the key in {} (and that it is for {})",
                        self.source_of("agent.api_key"),
                        self.base_url
                    ),
                    None => format!(
                        "no API key was sent; set {} (or `[agent] api_key` in the config file)",
                        match self.kind {
                            ProviderKind::OpenAi => "AGENT_API_KEY or OPENAI_API_KEY",
                            ProviderKind::Anthropic => "AGENT_API_KEY or ANTHROPIC_API_KEY",
                        }
                    ),
                };
                ProviderError::Http { status, message: format!("{message} ({hint})"), retry_after }
            }
            ProviderError::Http { status: 404, message, retry_after } => {
                let hint = match self.models().await {
                    Some(models) if models.contains(&self.model) => format!(
                        "the server has the model {:?} but not this path; check the endpoint {} (from {})",
                        self.model,
                        self.base_url,
                        self.source_of("agent.base_url")
                    ),
                    Some(models) => format!(
                        "no model {:?} here (from {}); {} offers: {}",
                        self.model,
                        self.source_of("agent.model"),
                        self.base_url,
                        shown_list(&models, 20)
                    ),
                    None => format!(
                        "check the model name {:?} (from {}) and the endpoint {} (from {})",
                        self.model,
                        self.source_of("agent.model"),
                        self.base_url,
                        self.source_of("agent.base_url")
                    ),
                };
                ProviderError::Http { status: 404, message: format!("{message} ({hint})"), retry_after }
            }
            ProviderError::Connect { url, message } => ProviderError::Connect {
                message: format!(
                    "{message}; the endpoint (from {}) is not answering: start its server, or fix the address",
                    self.source_of("agent.base_url")
                ),
                url,
            },
            other => other,
        }
    }

    /// The models the server lists (`GET {base}/models`, the same path for
    /// both API shapes), when it lists any within a few seconds.
    async fn models(&self) -> Option<Vec<String>> {
        let url = match self.kind {
            ProviderKind::OpenAi => format!("{}/models", self.base_url),
            ProviderKind::Anthropic => format!("{}/v1/models", self.base_url),
        };
        let mut request = self.client.get(url).timeout(Duration::from_secs(5));
        if let Some(key) = &self.api_key {
            request = match self.kind {
                ProviderKind::OpenAi => request.bearer_auth(key.expose()),
                ProviderKind::Anthropic => {
                    request.header("x-api-key", key.expose()).header("anthropic-version", anthropic::API_VERSION)
                }
            };
        }
        let response = request.send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let listed: Value = response.json().await.ok()?;
        let models: Vec<String> = listed["data"]
            .as_array()?
            .iter()
            .filter_map(|m| m["id"].as_str().map(|id| clix_config::secrets::scrub(id).into_owned()))
            .collect();
        (!models.is_empty()).then_some(models)
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
        match result {
            Ok(reply) => Ok(reply),
            Err(e) => Err(self.explained(self.scrub(e)).await),
        }
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
            ProviderError::Timeout { limit, url } => ProviderError::Timeout { limit, url: clean(url) },
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

/// The endpoint as calls are made to it, without a trailing `/`: an
/// OpenAI-compatible server given as its bare address (Ollama's
/// `http://127.0.0.1:11434`) gets `/v1`; an Anthropic one given with `/v1`
/// loses it (its calls add `/v1/messages`). So `AGENT_BASE_URL` works with
/// or without `/v1` for both.
fn endpoint(kind: ProviderKind, url: &str) -> String {
    let url = url.trim_end_matches('/');
    match kind {
        ProviderKind::Anthropic => url.strip_suffix("/v1").unwrap_or(url).to_string(),
        ProviderKind::OpenAi => {
            let path_starts = url.find("://").map(|at| at + 3).and_then(|host| url[host..].find('/'));
            if path_starts.is_none() { format!("{url}/v1") } else { url.to_string() }
        }
    }
}

/// Up to `most` of `items`, comma-separated, with how many more.
fn shown_list(items: &[String], most: usize) -> String {
    let mut shown = items.iter().take(most).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > most {
        shown.push_str(&format!(" and {} more", items.len() - most));
    }
    shown
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
