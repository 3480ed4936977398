//! The full-text search on PostgreSQL: Okapi BM25 computed the way SQLite's FTS5
//! computes it (`fts5Bm25Function` in its `fts5_aux.c`), so that
//! [`crate::Hit::bm25`] is on one scale on both backends and one
//! `recall_min_bm25` serves both. For a query of terms t, a memory D
//! scores the sum over t of
//!
//! idf(t) · f(t, D) · (k1 + 1) / (f(t, D) + k1 · (1 − b + b · |D| / avgdl))
//!
//! with k1 = 1.2 and b = 0.75; idf(t) = ln((N − n(t) + 0.5) / (n(t) + 0.5)),
//! clamped to 1e-6 where that is not positive (a term in half the
//! memories or more), as FTS5 clamps it. N is the number of memories and
//! avgdl their mean length, from `memory_fts_stats` (the whole store's,
//! whatever the filters, as FTS5's are the whole index's); n(t) the
//! memories holding t (every topic too); |D| D's length in tokens
//! (`tokens`); f(t, D) how often t occurs in D (its positions in D's
//! `tsvector`). The score is returned positive: SQLite's query negates
//! `bm25()`, so both give higher-is-better.
//!
//! The terms are the positive lexemes of `websearch_to_tsquery`'s query
//! (`querytree` drops what is negated); a lexeme the query repeats counts
//! each time (as two phrases in FTS5). A memory is found when it holds one
//! of the terms: the store's queries are words joined by `OR`
//! (`store::fts_query` quotes single words, one lexeme each), which is
//! what this reads. A phrase or a negation would be read as its positive
//! lexemes joined by `OR`.
//!
//! Nothing reads the memories' `tsvector`s at search time. The trigger of
//! schema step 4 keeps n(t) per lexeme (`memory_lexeme_docs`) and one
//! posting per lexeme and memory, with f(t, D), |D| and the topic in the
//! primary key's index (`memory_postings`), so that scoring is an
//! index-only scan.
//!
//! And only the memories that may rank are scored. This is MaxScore
//! (Turtle and Flood, 1995) over sets: each term adds at most
//! idf(t) · (k1 + 1) to a memory's score, whatever f(t, D) and |D|. The
//! commonest terms, whose bounds add up to less than the k-th best score,
//! are "non-essential": a memory holding only those cannot rank, so only
//! the memories holding an essential term are scored (in full, every
//! term). The k-th score is not known beforehand, so it is bounded from
//! below first: the memories holding the rarest terms (a few hundred) are
//! scored, and their k-th score is a bar every answer clears. Then the
//! commonest terms whose bounds add up to less than that bar are left
//! out, the rest scored: that try holds the sample's memories, so its
//! k-th score clears the bar too, and its answer is exactly that of
//! scoring every memory. The snippets (`ts_headline`, which parses the
//! text again) are made last, for the answer only.
//!
//! Scores equal to 9 decimals rank the newer memory (the higher id) first,
//! whatever order a sum was added up in. Scores differ from FTS5's where
//! tokenizing does: PostgreSQL's snowball stemmer against FTS5's porter,
//! FTS5's folding of diacritics, a hyphenated word (one token in FTS5,
//! three lexemes here), and a `tsvector`'s limit of 256 positions per
//! lexeme.

use postgres::Client;

use super::{COLUMNS, memory};
use crate::backend::Scope;
use crate::store::{Filter, Hit};

/// BM25's k1 + 1: the most one term adds to a score, per unit of idf.
const TERM_BOUND: f64 = 2.2;

/// The sample that sets the bar: the rarest terms, as many as hold at
/// least this many memories (counted with repeats) or `limit` times this
/// many tenths of them, whichever is more.
const SAMPLE_DOCS: f64 = 200.0;

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
        SELECT greatest(sum(docs), 1)::float8 AS n, greatest(sum(tokens), 1)::float8 / greatest(sum(docs), 1) AS avgdl
        FROM memory_fts_stats
    )
    SELECT t.lexeme,
           coalesce((SELECT sum(d.docs) FROM memory_lexeme_docs d WHERE d.lexeme = t.lexeme), 0)::float8,
           c.n, c.avgdl
    FROM terms t CROSS JOIN corpus c ORDER BY t.ord"#;

/// The best `$3` memories (id, score) holding one of the essential lexemes
/// (`$7`), filters applied first (`$1` topic, `$2` keyword, `$4` scope),
/// each scored over every term (`$5` lexemes, `$6` their idf; `$8`
/// avgdl), from the postings alone.
const SCORED: &str = r#"
    WITH terms AS MATERIALIZED (SELECT * FROM unnest($5::text[], $6::float8[]) AS t(lexeme, idf)),
    found AS MATERIALIZED (
        SELECT DISTINCT p.id FROM memory_postings p
        WHERE p.lexeme = ANY ($7::text[])
          AND ($1 = '' OR p.topic = $1)
          AND ($4::text[] IS NULL OR p.topic = ANY ($4))
    ),
    kept AS MATERIALIZED (
        SELECT f.id FROM found f
        WHERE $2 = '' OR EXISTS (SELECT 1 FROM memories m WHERE m.id = f.id AND strpos(m.folded, $2) > 0)
    )
    SELECT id, bm25 FROM (
        SELECT p.id, sum(t.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.tokens / $8::float8))) AS bm25
        FROM memory_postings p JOIN terms t ON t.lexeme = p.lexeme
        WHERE p.lexeme = ANY ($5::text[]) AND p.id IN (SELECT id FROM kept)
        GROUP BY p.id
    ) s
    ORDER BY round(bm25::numeric, 9) DESC, id DESC LIMIT $3"#;

/// The memories `$2` (ids), each with its snippet for the query `$1`.
static SHOWN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {COLUMNS}, ts_headline('clix_english', m.text, websearch_to_tsquery('clix_english', $1),
                'StartSel=[, StopSel=], MaxWords=12, MinWords=4, ShortWord=0, MaxFragments=1')
         FROM memories m WHERE m.id = ANY ($2)"
    )
});

/// One term of the query: its lexeme, idf and n(t).
struct Term {
    lexeme: String,
    idf: f64,
    docs: f64,
}

/// The best `limit` memories for `query` (a `store::fts_query`), exactly
/// as scoring every memory would rank them.
pub(super) fn search(
    db: &mut Client,
    query: &str,
    filter: &Filter<'_>,
    scope: Scope<'_>,
    limit: usize,
) -> Result<Vec<Hit>, postgres::Error> {
    let rows = db.query(TERMS, &[&query])?;
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let (n, avgdl): (f64, f64) = (first.get(2), first.get(3));
    let mut terms: Vec<Term> = rows
        .iter()
        .map(|r| {
            let docs: f64 = r.get(1);
            let idf = ((n - docs + 0.5) / (docs + 0.5)).ln().max(1e-6);
            Term { lexeme: r.get(0), idf, docs }
        })
        .collect();
    // Ascending bounds: the non-essential terms are always a prefix.
    terms.sort_by(|a, b| a.idf.total_cmp(&b.idf));
    let bounds: Vec<f64> = terms.iter().map(|t| t.idf * TERM_BOUND).collect();
    let left_out = |cut: usize| bounds[..cut].iter().sum::<f64>();
    let lexemes: Vec<&str> = terms.iter().map(|t| t.lexeme.as_str()).collect();
    let idfs: Vec<f64> = terms.iter().map(|t| t.idf).collect();
    let keyword = filter.keyword.to_lowercase();
    let limit_sql = limit as i64;

    let scored = |db: &mut Client, cut: usize| -> Result<Vec<(i64, f64)>, postgres::Error> {
        let essential: Vec<&str> = terms[cut..].iter().map(|t| t.lexeme.as_str()).collect();
        let rows =
            db.query(SCORED, &[&filter.topic, &keyword, &limit_sql, &scope, &lexemes, &idfs, &essential, &avgdl])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    };
    // The k-th best score of a try, when it found `limit` memories.
    let kth = |found: &[(i64, f64)]| (found.len() == limit).then(|| found.last().map(|f| f.1)).flatten();

    // The sample: the rarest terms, and the memories holding them.
    let wanted = SAMPLE_DOCS.max(limit as f64 * SAMPLE_DOCS / 10.0);
    let mut sample_cut = terms.len();
    let mut held = 0.0;
    while sample_cut > 0 && held < wanted {
        sample_cut -= 1;
        held += terms[sample_cut].docs;
    }
    let mut found = scored(db, sample_cut)?;
    if sample_cut > 0 {
        // Its k-th score is a bar every answer clears: leave out the
        // commonest terms whose bounds add up to less (the sample's terms
        // stay in, so the next try holds its memories and is exact).
        let bar = kth(&found).unwrap_or(0.0);
        let cut = (0..=sample_cut).rev().find(|c| left_out(*c) < bar * (1.0 - 1e-9)).unwrap_or(0);
        if cut < sample_cut {
            found = scored(db, cut)?;
        }
    }
    let ids: Vec<i64> = found.iter().map(|f| f.0).collect();
    let mut shown: std::collections::HashMap<i64, (crate::Memory, String)> = db
        .query(SHOWN.as_str(), &[&query, &ids])?
        .iter()
        .map(|r| (r.get::<_, i64>(0), (memory(r), r.get(7))))
        .collect();
    Ok(found
        .into_iter()
        .filter_map(|(id, bm25)| {
            let (memory, snippet) = shown.remove(&id)?;
            Some(Hit { memory, score: bm25, bm25: Some(bm25), similarity: None, snippet })
        })
        .collect())
}
