//! `hub search`: the tools that fit a request, ranked by BM25 over their
//! name, description and parameters (SQLite FTS5), so a large hub shows the
//! model a few relevant tools instead of all of them (seed 001's
//! "retrieve the top 3–5").

use rusqlite::Connection;

use crate::manifest::Manifest;

/// A ranked tool.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Found {
    /// The tool's name, the command to call it by.
    pub name: String,
    /// Its manifest's description.
    pub description: String,
    /// Higher is better (negated BM25).
    pub score: f64,
}

/// An in-memory full-text index of a hub's tools, built once per load.
pub(crate) struct SearchIndex {
    conn: Connection,
}

/// Column weights: a word in the name counts most, then the description,
/// then parameter names and descriptions.
const WEIGHTS: &str = "bm25(tools, 8.0, 3.0, 1.0)";

impl SearchIndex {
    pub(crate) fn build<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> rusqlite::Result<Self> {
        Self::of(manifests.into_iter().map(|m| {
            let params: Vec<String> =
                m.parameters.iter().map(|p| format!("{} {}", p.name.replace(['-', '_'], " "), p.description)).collect();
            (m.name.clone(), m.description.clone(), params.join("\n"))
        }))
    }

    /// An index of (name, description, parameters' text) rows.
    fn of(rows: impl IntoIterator<Item = (String, String, String)>) -> rusqlite::Result<Self> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(
            "CREATE VIRTUAL TABLE tools USING fts5(name, description, parameters, tokenize = 'porter unicode61');",
        )?;
        {
            let tx = conn.unchecked_transaction()?;
            let mut insert = tx.prepare("INSERT INTO tools (name, description, parameters) VALUES (?1, ?2, ?3)")?;
            for row in rows {
                insert.execute(row)?;
            }
            drop(insert);
            tx.commit()?;
        }
        Ok(SearchIndex { conn })
    }

    /// The `k` best tools for `query`; any of its words may match.
    pub(crate) fn search(&self, query: &str, k: usize) -> rusqlite::Result<Vec<Found>> {
        let Some(expr) = match_expression(query) else { return Ok(Vec::new()) };
        let sql = format!(
            "SELECT name, description, -{WEIGHTS} AS score FROM tools WHERE tools MATCH ?1 ORDER BY {WEIGHTS} LIMIT ?2"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt
            .query_map((expr, k as i64), |r| Ok(Found { name: r.get(0)?, description: r.get(1)?, score: r.get(2)? }))?;
        rows.collect()
    }
}

/// The `k` of `tools` (name, description, parameter names) that best fit
/// `query`, ranked as `hub search` ranks hub tools: what `mcp search`
/// ranks MCP servers' tools with (each named `SERVER TOOL`).
pub fn rank(
    tools: impl IntoIterator<Item = (String, String, Vec<String>)>,
    query: &str,
    k: usize,
) -> Result<Vec<Found>, SearchError> {
    let rows = tools.into_iter().map(|(name, description, params)| {
        let params: Vec<String> = params.iter().map(|p| p.replace(['-', '_'], " ")).collect();
        (name, description, params.join("\n"))
    });
    Ok(SearchIndex::of(rows)?.search(query, k)?)
}

/// Why a search found nothing to rank with: its in-memory index failed.
#[derive(Debug, thiserror::Error)]
#[error("the search index: {0}")]
pub struct SearchError(#[from] rusqlite::Error);

/// Words too common to say anything about a tool; in a request written as
/// a sentence they would rank short descriptions that happen to hold them.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is",
    "it", "me", "my", "of", "on", "or", "please", "show", "that", "the", "this", "to", "what", "when", "which", "with",
    "you",
];

/// The query's words, each quoted (so no word is read as FTS5 syntax),
/// joined with OR: a request in plain words finds tools sharing any of them.
fn match_expression(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_quoted_or_terms() {
        assert_eq!(match_expression("find ERROR logs").unwrap(), "\"find\" OR \"error\" OR \"logs\"");
        assert_eq!(match_expression("x\"y NOT (z)*").unwrap(), "\"x\" OR \"y\" OR \"not\" OR \"z\"");
        assert_eq!(match_expression(" -- "), None);
        assert_eq!(match_expression("what is the"), None, "only stopwords");
    }
}
