//! Embedders: text to vectors for the hybrid search. The store only sees
//! the [`Embedder`] trait; which one runs comes from the `[memory]` section.

mod model2vec;
mod openai;

pub use model2vec::Model2Vec;
pub use openai::OpenAiEmbedder;

use clix_common::Secret;
use serde::{Deserialize, Serialize};

/// Why texts could not be embedded; each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The `[memory]` settings do not describe a usable embedder.
    #[error("{0}")]
    Config(String),
    /// The model2vec folder is missing or unreadable.
    #[error("model2vec folder {path}: {message} (build one with scripts/make-minilm-model2vec.py, or set memory.path)")]
    Load {
        /// The folder, as configured.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The server refused these texts or answered with something unusable.
    #[error("embeddings request to {url}: {message}")]
    Request {
        /// The endpoint called.
        url: String,
        /// The server's answer or the parse error, key redacted.
        message: String,
    },
    /// The server could not answer now (unreachable, 429, 5xx): says
    /// nothing about the texts, so none is marked as unembeddable.
    #[error("embeddings request to {url}: {message}")]
    Unavailable {
        /// The endpoint called.
        url: String,
        /// Why, key redacted.
        message: String,
    },
}

impl EmbedError {
    /// Worth trying again later, as opposed to a text or setting it will never accept.
    pub fn is_transient(&self) -> bool {
        matches!(self, EmbedError::Unavailable { .. })
    }
}

/// Turns texts into vectors of one space.
pub trait Embedder: Send {
    /// Names the vector space, e.g. `model2vec:/models/minilm` or
    /// `openai:https://api.openai.com/v1:text-embedding-3-small`. Vectors of
    /// different ids (or dimensions) are kept in different tables and never
    /// compared.
    fn id(&self) -> String;
    /// One vector per text, in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// The `[memory]` section of the config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySettings {
    /// "none" (full-text search only), "openai" (any OpenAI-compatible
    /// /v1/embeddings: OpenAI, Ollama, llama.cpp) or "model2vec" (a local folder).
    pub embedder: String,
    /// openai: the embedding model, e.g. text-embedding-3-small or nomic-embed-text.
    pub model: String,
    /// openai: the API's base URL (empty: https://api.openai.com/v1).
    pub base_url: String,
    /// openai: the key; prefer the environment (CLIX_MEMORY_API_KEY, else OPENAI_API_KEY).
    pub api_key: Secret,
    /// model2vec: the model folder (model.safetensors, tokenizer.json, config.json).
    pub path: String,
    /// The topic of this session's memories (empty: the workspace folder's name; `--topic` sets it).
    pub topic: String,
    /// Agent: memories recalled into each new task (0: no recall).
    pub recall: usize,
    /// Agent: least cosine similarity of a recalled memory (with an embedder).
    pub recall_min_similarity: f64,
    /// Agent: least BM25 score of a recalled memory found by its words.
    pub recall_min_bm25: f64,
    /// Agent: store a short summary of each run (kind `summary`).
    pub summaries: bool,
    /// Inside `run`, let `memory -t TOPIC` read and change topics other than
    /// the session's (and searches without -t cover every topic). Off: a
    /// session sees only its own topic and the global one, so one project's
    /// agent cannot read, plant or forget another project's memories.
    /// `clix memory` on the command line always reaches every topic.
    pub cross_topic: bool,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            embedder: "none".into(),
            model: String::new(),
            base_url: String::new(),
            api_key: Secret::default(),
            path: String::new(),
            topic: String::new(),
            recall: 3,
            recall_min_similarity: 0.5,
            recall_min_bm25: 1.0,
            summaries: true,
            cross_topic: false,
        }
    }
}

pub(crate) const OPENAI_URL: &str = "https://api.openai.com/v1";

/// The embedders there are, for the setting's check and its message.
const EMBEDDERS: [&str; 3] = ["none", "openai", "model2vec"];

/// An unknown embedder is a typo to name at load, not a session that
/// quietly runs on full text; a similarity is a cosine.
impl clix_common::settings::Validate for MemorySettings {
    fn validate(&self) -> Vec<clix_common::settings::BadValue> {
        use clix_common::settings::BadValue;
        let mut bad = Vec::new();
        if !self.embedder.is_empty() && !EMBEDDERS.contains(&self.embedder.as_str()) {
            let near = clix_common::names::did_you_mean(&self.embedder, EMBEDDERS)
                .map(|n| format!("; did you mean {n:?}?"))
                .unwrap_or_default();
            bad.push(BadValue::new(
                "embedder",
                format!("{:?}", self.embedder),
                format!("one of {}{near}", EMBEDDERS.join(", ")),
            ));
        }
        if !(-1.0..=1.0).contains(&self.recall_min_similarity) {
            bad.push(BadValue::new("recall_min_similarity", self.recall_min_similarity, "from -1 to 1 (a cosine)"));
        }
        if !self.recall_min_bm25.is_finite() {
            bad.push(BadValue::new("recall_min_bm25", self.recall_min_bm25, "a number (a BM25 score)"));
        }
        bad
    }
}

impl MemorySettings {
    /// The embedder's API key: `memory.api_key`, else `CLIX_MEMORY_API_KEY`,
    /// else `OPENAI_API_KEY` as `env` gives them (empty when none is set).
    pub fn api_key_from(&self, env: impl Fn(&str) -> Option<String>) -> Secret {
        Some(self.api_key.clone())
            .filter(|k| !k.is_empty())
            .or_else(|| env("CLIX_MEMORY_API_KEY").filter(|k| !k.is_empty()).map(Secret::new))
            .or_else(|| env("OPENAI_API_KEY").map(Secret::new))
            .unwrap_or_default()
    }

    /// The configured embedder, or `None` for `embedder = "none"`. `env`
    /// supplies the API key when the settings hold none.
    pub fn embedder(&self, env: impl Fn(&str) -> Option<String>) -> Result<Option<Box<dyn Embedder>>, EmbedError> {
        match self.embedder.as_str() {
            "" | "none" => Ok(None),
            "model2vec" => {
                if self.path.is_empty() {
                    return Err(EmbedError::Config(
                        "memory.embedder = \"model2vec\" needs memory.path, the model folder \
                         (scripts/make-minilm-model2vec.py builds one)"
                            .into(),
                    ));
                }
                Ok(Some(Box::new(Model2Vec::load(std::path::Path::new(&self.path))?)))
            }
            "openai" => {
                if self.model.is_empty() {
                    return Err(EmbedError::Config(
                        "memory.embedder = \"openai\" needs memory.model, e.g. text-embedding-3-small \
                         (OpenAI) or nomic-embed-text (Ollama)"
                            .into(),
                    ));
                }
                let base_url = if self.base_url.is_empty() { OPENAI_URL } else { &self.base_url };
                let key = Some(self.api_key_from(env)).filter(|k| !k.is_empty());
                Ok(Some(Box::new(OpenAiEmbedder::new(base_url, &self.model, key))))
            }
            other => Err(EmbedError::Config(format!(
                "memory.embedder must be one of {}, not {other:?}",
                EMBEDDERS.join(", ")
            ))),
        }
    }
}
