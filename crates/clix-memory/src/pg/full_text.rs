//! The full-text search on PostgreSQL: Okapi BM25 as FTS5 computes it
//! (`crate::bm25`), so that [`crate::Hit::bm25`] is on one scale on both
//! backends and one `recall_min_bm25` serves both. N is the number of
//! memories and avgdl their mean length, from `memory_fts_stats` (the
//! whole store's, whatever the filters, as FTS5's are the whole index's);
//! n(t) the memories holding t (every topic too); |D| D's length in
//! tokens (`tokens`); f(t, D) how often t occurs in D (its positions in
//! D's `tsvector`).
//!
//! The terms are the positive lexemes of `websearch_to_tsquery`'s query
//! (`querytree` drops what is negated); a lexeme the query repeats counts
//! each time (as two phrases in FTS5). A memory is found when it holds one
//! of the terms: the store's queries are words joined by `OR`
//! (`record::fts_query` quotes single words, one lexeme each), which is
//! what this reads. A phrase or a negation would be read as its positive
//! lexemes joined by `OR`.
//!
//! Nothing reads the memories' `tsvector`s at search time. The trigger of
//! schema step 4 keeps n(t) per lexeme (`memory_lexeme_docs`) and one
//! posting per lexeme and memory, with f(t, D), |D| and the topic in the
//! primary key's index (`memory_postings`). A search reads the postings of
//! its lexemes in one index-only scan, filters applied there, as one array
//! per lexeme, and ranks them in Rust (`crate::bm25`, which SQLite's
//! postings use too). Scoring in SQL instead (a `GROUP BY` over the
//! postings, with MaxScore leaving out the commonest terms) took 15 ms at
//! p50 and 29 ms at p95 at 100,000 memories (`clix-bench memory`, stop 48).
//! The snippets (`ts_headline`, which parses the text again) are made
//! last, for the answer only.
//!
//! Scores equal to 9 decimals rank the newer memory (the higher id) first,
//! whatever order a sum was added up in. Scores differ from FTS5's where
//! tokenizing does: PostgreSQL's snowball stemmer against FTS5's porter,
//! FTS5's folding of diacritics, a hyphenated word (one token in FTS5,
//! three lexemes here), and a `tsvector`'s limit of 256 positions per
//! lexeme.

use std::collections::HashMap;

use postgres::Client;

use super::{COLUMNS, memory};
use crate::backend::Scope;
use crate::bm25::{self, Posting, Ties};
use crate::record::{Filter, Hit};

/// The query's terms (each positive lexeme, as often as the query has
/// it, in order), n(t) of each, N and avgdl.
const TERMS: &str = r#"
    WITH q AS (SELECT websearch_to_tsquery('clix_english', $1) AS q),
    terms AS (
        SELECT x.ord,
               replace(replace(substr(x.t[1], 2, length(x.t[1]) - 2), '''''', ''''), '\\', '\') AS lexeme
        FROM q, regexp_matches(querytree(q.q), $re$'(?:[^']|'')*'$re$, 'g') WITH ORDINALITY AS x(t, ord)
    ),
    corpus AS (
        SELECT greatest(sum(docs), 1)::int8 AS n, greatest(sum(tokens), 1)::float8 / greatest(sum(docs), 1) AS avgdl
        FROM memory_fts_stats
    )
    SELECT t.lexeme,
           coalesce((SELECT sum(d.docs) FROM memory_lexeme_docs d WHERE d.lexeme = t.lexeme), 0)::int8,
           c.n, c.avgdl
    FROM terms t CROSS JOIN corpus c ORDER BY t.ord"#;

/// The postings of the lexemes `$1` that the filters keep (`$2` topic,
/// `$3` scope, `$4` keyword), one row of arrays per lexeme.
const POSTINGS: &str = r#"
    SELECT p.lexeme, array_agg(p.id), array_agg(p.tf), array_agg(p.tokens)
    FROM memory_postings p
    WHERE p.lexeme = ANY ($1::text[])
      AND ($2 = '' OR p.topic = $2)
      AND ($3::text[] IS NULL OR p.topic = ANY ($3))
      AND ($4 = '' OR EXISTS (SELECT 1 FROM memories m WHERE m.id = p.id AND strpos(m.folded, $4) > 0))
    GROUP BY p.lexeme"#;

/// The memories `$2` (ids), each with its snippet for the query `$1`.
static SHOWN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS}, ts_headline('clix_english', m.text, websearch_to_tsquery('clix_english', $1),
                'StartSel=[, StopSel=], MaxWords=12, MinWords=4, ShortWord=0, MaxFragments=1')
         FROM memories m WHERE m.id = ANY ($2)"
    )
});

/// The best `limit` memories for `query` (a `record::fts_query`), each
/// scored over every term of the query.
pub(super) fn search(
    db: &mut Client,
    query: &str,
    filter: &Filter<'_>,
    scope: Scope<'_>,
    limit: usize,
) -> Result<Vec<Hit>, postgres::Error> {
    let rows = db.query(TERMS, &[&query])?;
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let (n, avgdl): (i64, f64) = (first.get(2), first.get(3));
    let terms: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mut lexemes: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    lexemes.sort_unstable();
    lexemes.dedup();
    let keyword = filter.keyword.to_lowercase();
    let mut lists: HashMap<String, Vec<Posting>> = HashMap::new();
    for row in db.query(POSTINGS, &[&lexemes, &filter.topic, &scope, &keyword])? {
        let (ids, tfs, lens): (Vec<i64>, Vec<i32>, Vec<i32>) = (row.get(1), row.get(2), row.get(3));
        let count = |x: i32| u32::try_from(x).unwrap_or(0);
        let mut postings: Vec<Posting> = ids
            .into_iter()
            .zip(tfs.into_iter().zip(lens))
            .map(|(id, (tf, len))| Posting { id, tf: count(tf), len: count(len), topic: 0 })
            .collect();
        postings.sort_unstable_by_key(|p| p.id);
        lists.insert(row.get(0), postings);
    }
    let phrases = terms
        .iter()
        .map(|(lexeme, docs)| (bm25::idf(n, *docs), lists.get(lexeme).map_or(&[][..], Vec::as_slice)))
        .collect();
    let mut found = bm25::score_all(&bm25::Query { avgdl, phrases }, |_| true);
    bm25::best_first(&mut found, Some(limit), Ties::NineDecimals);
    let ids: Vec<i64> = found.iter().map(|f| f.1).collect();
    let mut shown: HashMap<i64, (crate::Memory, String)> = db
        .query(SHOWN.as_str(), &[&query, &ids])?
        .iter()
        .map(|r| (r.get::<_, i64>(0), (memory(r), r.get(7))))
        .collect();
    Ok(found
        .into_iter()
        .filter_map(|(bm25, id)| {
            let (memory, snippet) = shown.remove(&id)?;
            Some(Hit { memory, score: bm25, bm25: Some(bm25), similarity: None, snippet })
        })
        .collect())
}
