//! The embedder's side of vector search, the same for every backend: one
//! space per (embedder, dimension), so vectors of different spaces never
//! mix; which memories still need a vector, embedded in batches; texts the
//! embedder rejects or gives a zero vector for are recorded as having none
//! (found by their words only, not embedded again), while an embedder that
//! is down marks nothing. Where vectors are kept and how the nearest are
//! found is each backend's.

use crate::backend::{Backend, Pending, Scope, Space, Target};
use crate::embed::{EmbedError, Embedder};
use crate::record::{Filter, MemoryError};

/// What the embedder made of one text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Embedding {
    /// A usable vector, scaled to unit length.
    Vector(Vec<f32>),
    /// No vector for this text in a space of this dimension: a zero or
    /// non-finite vector, or an error for this text alone.
    None { dim: usize, reason: String },
}

impl Embedding {
    pub(crate) fn dim(&self) -> usize {
        match self {
            Embedding::Vector(v) => v.len(),
            Embedding::None { dim, .. } => *dim,
        }
    }
}

/// Why a zero or non-finite vector is not stored.
pub(crate) const NO_DIRECTION: &str = "the embedder gives a zero (or non-finite) vector for it";

/// `vector` scaled to unit length (cosine similarity is unchanged, and
/// f32 sums can neither overflow nor vanish), or `None` for a zero, empty
/// or non-finite vector: it has no direction to compare.
pub(crate) fn unit(vector: &[f32]) -> Option<Vec<f32>> {
    let norm = vector.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (norm.is_finite() && norm > 0.0).then(|| vector.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
}

/// The configured embedder and the space its vectors go to.
pub(crate) struct Vectors {
    embedder: Box<dyn Embedder>,
    key: String,
    /// Known once a vector of this embedder exists (its dimension).
    space: Option<Space>,
    /// The backend's mark when every memory last had a vector here (or a
    /// record of having none): while it stands, there is nothing to fill.
    synced_at: Option<String>,
    /// The dimension of a vector the embedder gave during the current
    /// operation (a store or a search): proof that it is up, so a text it
    /// rejects alone is rejected for itself.
    answered: Option<usize>,
}

impl Vectors {
    pub(crate) fn new(db: &dyn Backend, embedder: Box<dyn Embedder>) -> Result<Self, MemoryError> {
        let key = embedder.id();
        let space = db.newest_space(&key)?;
        Ok(Vectors { embedder, key, space, synced_at: None, answered: None })
    }

    /// Where this embedder's vectors go.
    pub(crate) fn target(&self) -> Target<'_> {
        Target { key: &self.key, known: self.space.as_ref() }
    }

    /// The space a write used: a new one holds none of the other memories yet.
    pub(crate) fn used(&mut self, space: Option<Space>) {
        if let Some(space) = space
            && self.space.as_ref() != Some(&space)
        {
            self.space = Some(space);
            self.synced_at = None;
        }
    }

    /// After a failed transaction: a space it created was rolled back too,
    /// so what is known about the spaces is read again.
    pub(crate) fn reload(&mut self, db: &dyn Backend) {
        self.space = db.newest_space(&self.key).ok().flatten();
        self.synced_at = None;
    }

    /// A store or a search begins: whether the embedder is up is not
    /// known yet.
    pub(crate) fn begin(&mut self) {
        self.answered = None;
    }

    /// One vector per text (checked), noting that the embedder answered.
    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.embedder.embed(texts)?;
        if vectors.len() != texts.len() {
            let message = format!("gave {} vectors for {} texts", vectors.len(), texts.len());
            return Err(EmbedError::Request { url: self.key.clone(), message });
        }
        if let Some(v) = vectors.iter().find(|v| !v.is_empty()) {
            self.answered = Some(v.len());
        }
        Ok(vectors)
    }

    /// The embedding of one text (a memory being stored, a query):
    /// [`Embedding::None`] for a zero, empty or non-finite vector.
    pub(crate) fn embed_one(&mut self, text: &str) -> Result<Embedding, String> {
        let vector = self.embed(&[text.to_string()]).map_err(|e| e.to_string())?.pop().unwrap_or_default();
        Ok(match unit(&vector) {
            Some(v) => Embedding::Vector(v),
            None => Embedding::None { dim: vector.len(), reason: NO_DIRECTION.into() },
        })
    }

    /// A memory was stored without a vector: the next store or search
    /// looks for missing vectors again.
    pub(crate) fn unsynced(&mut self) {
        self.synced_at = None;
    }

    /// Embeds every memory without a vector in the current space, `batch`
    /// at a time, each batch in one transaction; `progress(done, total)`
    /// after each. A batch the embedder rejects is embedded text by text:
    /// the texts it still rejects alone (while it answers others), and those
    /// it gives zero vectors for, are recorded as having no vector (named in
    /// `warnings`) and skipped from then on. An embedder that answers nothing
    /// marks nothing: the error is returned and the next call tries again.
    pub(crate) fn fill_missing(
        &mut self,
        db: &dyn Backend,
        batch: usize,
        mut progress: impl FnMut(usize, usize),
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        let mark = db.mark().map_err(|e| e.to_string())?;
        if self.synced_at.as_ref() == Some(&mark) {
            return Ok(());
        }
        let since = self.synced_at.take();
        let total = db.missing_count(self.space.as_ref(), since.as_deref()).map_err(|e| e.to_string())?;
        if total == 0 {
            self.synced_at = Some(mark);
            return Ok(());
        }
        let mut done = 0;
        let mut left_out: Vec<(i64, String)> = Vec::new();
        let first_space = self.space.clone();
        let result = loop {
            // A space the first batch made holds none of the older memories.
            let since = since.as_deref().filter(|_| self.space == first_space);
            let rows = db.missing(self.space.as_ref(), since, batch).map_err(|e| e.to_string())?;
            if rows.is_empty() {
                self.synced_at = Some(mark);
                break Ok(());
            }
            let embeddings = match self.embed_rows(&rows) {
                Ok(e) => e,
                Err(e) => break Err(e),
            };
            let pairs: Vec<(&Pending, &Embedding)> = rows.iter().zip(&embeddings).collect();
            match db.save_embeddings(self.target(), &pairs) {
                Ok(space) => self.used(space),
                Err(e) => {
                    self.reload(db);
                    break Err(e.to_string());
                }
            }
            for ((id, _, _), embedding) in rows.iter().zip(&embeddings) {
                if let Embedding::None { reason, .. } = embedding {
                    left_out.push((*id, reason.clone()));
                }
            }
            done += rows.len();
            progress(done.min(total), total);
        };
        if let Some((_, reason)) = left_out.first() {
            let ids: Vec<String> = left_out.iter().take(10).map(|(id, _)| format!("#{id}")).collect();
            let more = if left_out.len() > ids.len() { ", …" } else { "" };
            warnings.push(format!(
                "{} left without a vector ({reason}), found by their words only: {}{more}",
                if left_out.len() == 1 { "1 memory".to_string() } else { format!("{} memories", left_out.len()) },
                ids.join(", ")
            ));
        }
        result
    }

    /// The embeddings of a batch of rows, one per row, all of one
    /// dimension. When the embedder rejects the batch, each text is tried
    /// alone; a text rejected alone gets no vector once the embedder has
    /// answered another text during this operation. Two texts rejected
    /// before any answer: the embedder looks down, the error is returned.
    fn embed_rows(&mut self, rows: &[Pending]) -> Result<Vec<Embedding>, String> {
        let texts: Vec<String> = rows.iter().map(|(_, _, text)| text.clone()).collect();
        let results: Vec<Result<Vec<f32>, EmbedError>> = match self.embed(&texts) {
            Ok(vectors) => vectors.into_iter().map(Ok).collect(),
            Err(e) if texts.len() == 1 => vec![Err(e)],
            Err(_) => {
                let mut results = Vec::with_capacity(texts.len());
                let mut unanswered = 0;
                for text in &texts {
                    let result = self.embed(std::slice::from_ref(text)).map(|mut v| v.pop().unwrap_or_default());
                    if let Err(e) = &result
                        && self.answered.is_none()
                    {
                        unanswered += 1;
                        if unanswered == 2 {
                            return Err(e.to_string());
                        }
                    }
                    results.push(result);
                }
                results
            }
        };
        let dims: Vec<usize> =
            results.iter().filter_map(|r| r.as_ref().ok()).map(Vec::len).filter(|n| *n > 0).collect();
        if dims.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("the embedder {} gave vectors of mixed dimensions", self.key));
        }
        let Some(dim) = dims.first().copied().or(self.answered).or(self.space.as_ref().map(|s| s.dim)) else {
            return Err(results
                .into_iter()
                .find_map(Result::err)
                .map_or_else(|| format!("the embedder {} gave empty vectors", self.key), |e| e.to_string()));
        };
        let mut embeddings = Vec::with_capacity(results.len());
        for result in results {
            embeddings.push(match result {
                Ok(vector) => match unit(&vector) {
                    Some(v) => Embedding::Vector(v),
                    None => Embedding::None { dim, reason: NO_DIRECTION.into() },
                },
                // A busy or unreachable server says nothing about the text:
                // it stays missing and is tried again next time.
                Err(e) if self.answered.is_some() && !e.is_transient() => {
                    Embedding::None { dim, reason: format!("the embedder rejects it alone: {e}") }
                }
                Err(e) => return Err(e.to_string()),
            });
        }
        Ok(embeddings)
    }

    /// The `k` nearest memories to `query` in the current space as (id,
    /// cosine similarity); none when the space is not of the query's
    /// dimension (nothing embedded yet).
    pub(crate) fn knn(
        &self,
        db: &dyn Backend,
        query: &[f32],
        filter: &Filter<'_>,
        scope: Scope<'_>,
        k: usize,
    ) -> Result<Vec<(i64, f64)>, MemoryError> {
        let Some(space) = self.space_of(query) else { return Ok(Vec::new()) };
        db.knn(space, query, filter, scope, k)
    }

    /// The current space when `query` is of its dimension (none: nothing
    /// embedded yet, or not in this dimension).
    pub(crate) fn space_of(&self, query: &[f32]) -> Option<&Space> {
        self.space.as_ref().filter(|s| s.dim == query.len())
    }
}
