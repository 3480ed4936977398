//! An opt-in cache of model replies (`--cache`), for debugging and tests:
//! an identical request gets the stored reply instead of a model call.
//! SQLite under the data folder, so several clix processes can share it.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::message::{Role, ToolCall};
use crate::provider::{ChatRequest, ChatResponse, ToolChoice, Usage};

/// The reply cache's SQLite file (`reply-cache.sqlite`), shared by processes.
pub struct ReplyCache {
    db: Mutex<Connection>,
}

/// `…[exit:0 | 12ms]` → `…[exit:0`.
fn without_duration(text: &str) -> &str {
    match text.rfind("[exit:") {
        Some(at) => match text[at..].find(" | ") {
            Some(bar) => &text[..at + bar],
            None => text,
        },
        None => text,
    }
}

/// Why the reply cache cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Its folder cannot be made.
    #[error("cannot create {}: {source}", dir.display())]
    Folder {
        /// The folder.
        dir: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The SQLite file cannot be opened or set up.
    #[error("cannot open the reply cache {}: {source}", path.display())]
    Database {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
}

impl ReplyCache {
    /// Opens (and creates) the cache at `path`; the error names the file.
    pub fn open(path: &Path) -> Result<Self, CacheError> {
        let fail = |source| CacheError::Database { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| CacheError::Folder { dir: dir.to_path_buf(), source })?;
        }
        let db = Connection::open(path).map_err(fail)?;
        db.busy_timeout(std::time::Duration::from_secs(5)).map_err(fail)?;
        db.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE IF NOT EXISTS replies (
                 key TEXT PRIMARY KEY,
                 text TEXT NOT NULL,
                 tool_calls TEXT NOT NULL,
                 input_tokens INTEGER NOT NULL,
                 output_tokens INTEGER NOT NULL,
                 created_at INTEGER NOT NULL DEFAULT (unixepoch())
             );",
        )
        .map_err(fail)?;
        Ok(ReplyCache { db: Mutex::new(db) })
    }

    /// A hash of everything that decides the reply: endpoint, model and
    /// request, with the durations in tool-result footers left out (they
    /// differ on every run, and would make a replay never hit).
    pub(crate) fn key(endpoint: &str, model: &str, temperature: Option<f64>, req: &ChatRequest<'_>) -> String {
        let mut h = Sha256::new();
        h.update(endpoint.as_bytes());
        h.update([0]);
        h.update(model.as_bytes());
        h.update([0]);
        for m in req.messages {
            let text = if m.role == Role::Tool { without_duration(&m.text) } else { &m.text };
            h.update(text.as_bytes());
            h.update([0]);
            h.update(serde_json::to_vec(&(&m.role, &m.images, &m.tool_calls, &m.tool_call_id)).unwrap_or_default());
        }
        for tool in req.tools {
            h.update(tool.name.as_bytes());
            h.update([0]);
            h.update(tool.description.as_bytes());
            h.update(tool.parameters.to_string().as_bytes());
        }
        // Auto and None keep the bytes older caches were keyed with.
        h.update([match req.tool_choice {
            ToolChoice::None => 0,
            ToolChoice::Auto => 1,
            ToolChoice::Required => 2,
        }]);
        h.update(req.max_output_tokens.to_le_bytes());
        // Unset, the bytes of older caches.
        if let Some(t) = temperature {
            h.update(t.to_le_bytes());
        }
        clix_common::hex(&h.finalize())
    }

    pub(crate) fn get(&self, key: &str) -> Option<ChatResponse> {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        db.query_row(
            "SELECT text, tool_calls, input_tokens, output_tokens FROM replies WHERE key = ?1",
            params![key],
            |row| {
                let calls: String = row.get(1)?;
                Ok(ChatResponse {
                    text: row.get(0)?,
                    tool_calls: serde_json::from_str::<Vec<ToolCall>>(&calls).unwrap_or_default(),
                    usage: Usage {
                        input_tokens: row.get::<_, i64>(2)?.max(0) as u64,
                        output_tokens: row.get::<_, i64>(3)?.max(0) as u64,
                        ..Usage::default()
                    },
                })
            },
        )
        .optional()
        .ok()
        .flatten()
    }

    pub(crate) fn put(&self, key: &str, reply: &ChatResponse) {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let calls = serde_json::to_string(&reply.tool_calls).unwrap_or_else(|_| "[]".into());
        // A failed write only costs a future cache miss.
        let _ = db.execute(
            "INSERT OR REPLACE INTO replies (key, text, tool_calls, input_tokens, output_tokens) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                key,
                reply.text,
                calls,
                i64::try_from(reply.usage.input_tokens).unwrap_or(i64::MAX),
                i64::try_from(reply.usage.output_tokens).unwrap_or(i64::MAX)
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn a_temperature_is_part_of_the_key_only_when_sent() {
        let messages = [Message::new(Role::User, "hi")];
        let req = ChatRequest { messages: &messages, tools: &[], tool_choice: ToolChoice::Auto, max_output_tokens: 8 };
        let key = |t| ReplyCache::key("http://m/v1", "m", t, &req);
        assert_ne!(key(None), key(Some(0.0)));
        assert_ne!(key(Some(0.0)), key(Some(0.7)));
        assert_eq!(key(Some(0.7)), key(Some(0.7)));
    }
}
