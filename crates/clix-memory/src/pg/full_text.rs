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
//! The terms are the positive lexemes of `websearch_to_tsquery`'s query,
//! as FTS5 scores only the phrases a document holds: `querytree` drops
//! what is negated (`-word` only excludes, it adds nothing); both sides of
//! an `OR` count, each where it occurs; a lexeme the query repeats counts
//! each time (as two phrases in FTS5). A phrase (`"signing key"`) counts
//! as its lexemes, each on its own, where FTS5 scores the phrase as one
//! term: the store never sends one (`store::fts_query` quotes single
//! words, one lexeme each), so its queries score as FTS5 scores them. A
//! memory is found when it matches the query and holds one of its
//! positive lexemes: one matched by a negation alone (`a or -b`, which
//! FTS5 has no syntax for) is not.
//!
//! n(t) comes from `memory_lexeme_docs` (kept by a trigger, schema step
//! 4), so a search reads only the memories that may rank. This is
//! MaxScore (Turtle and Flood, 1995) over sets: each term adds at most
//! idf(t) · (k1 + 1) to a memory's score, whatever f(t, D) and |D|. The
//! commonest terms, whose bounds add up to less than the k-th best score,
//! are "non-essential": a memory holding only those cannot rank, so only
//! the memories holding an essential term are scored (in full, every
//! term). The k-th score is not known beforehand: the first try leaves
//! out the terms held by more than 1 in 100 memories, and when the
//! bounds left out reach the k-th score found (or fewer than k memories
//! were found), the search runs again leaving out only what that score
//! allows; each try's memories include the last's, so the second is
//! exact, and leaving nothing out is today's full scan. The result is
//! the same as scoring every memory.
//!
//! Each scored memory yields one row per query lexeme it holds, with its
//! frequency: `setweight` marks the query's lexemes in its `tsvector` and
//! `ts_filter` keeps only those, without unnesting the whole vector.
//! Scores differ from FTS5's where tokenizing does: PostgreSQL's snowball
//! stemmer against FTS5's porter, FTS5's folding of diacritics, a
//! hyphenated word (one token in FTS5, three lexemes here), and a
//! `tsvector`'s limit of 256 positions per lexeme.

use postgres::Client;

use super::{COLUMNS, memory};
use crate::backend::Scope;
use crate::store::{Filter, Hit};

/// BM25's k1 + 1: the most one term adds to a score, per unit of idf.
const TERM_BOUND: f64 = 2.2;

/// The first try leaves out the terms held by more than this share of
/// the memories (and never every term).
const COMMON_SHARE: f64 = 0.01;

/// The query's terms (each positive lexeme, as often as the query has
/// it, in order), n(t) of each, N and avgdl.
const TERMS: &str = r#"
    WITH q AS (SELECT websearch_to_tsquery('clix_english', $1) AS q),
    terms AS (
        SELECT x.ord, x.t[1] AS quoted,
               replace(replace(substr(x.t[1], 2, length(x.t[1]) - 2), '''''', ''''), '\\', '\') AS lexeme
        FROM q, regexp_matches(querytree(q.q), $re$'(?:[^']|'')*'$re$, 'g') WITH ORDINALITY AS x(t, ord)
    ),
    corpus AS (
        SELECT greatest(sum(docs), 1)::float8 AS n, greatest(sum(tokens), 1)::float8 / greatest(sum(docs), 1) AS avgdl
        FROM memory_fts_stats
    )
    SELECT t.lexeme, t.quoted,
           coalesce((SELECT sum(d.docs) FROM memory_lexeme_docs d WHERE d.lexeme = t.lexeme), 0)::float8,
           c.n, c.avgdl
    FROM terms t CROSS JOIN corpus c ORDER BY t.ord"#;

/// The best `$4` memories that match the query (`$1`) and hold one of the
/// essential lexemes (`$8`, a tsquery), filters applied first, each scored
/// over every term (`$6` lexemes, `$7` their idf; `$9` avgdl).
static SCORED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        r#"
    WITH q AS MATERIALIZED (SELECT websearch_to_tsquery('clix_english', $1) AS q),
    terms AS MATERIALIZED (SELECT * FROM unnest($6::text[], $7::float8[]) AS t(lexeme, idf)),
    found AS MATERIALIZED (
        SELECT m.id, m.tokens, u.lexeme, cardinality(u.positions) AS tf
        FROM memories m, unnest(ts_filter(setweight(m.tsv, 'A', $6::text[]), '{{a}}')) u
        WHERE m.tsv @@ $8::text::tsquery
          AND m.tsv @@ (SELECT q FROM q)
          AND ($2 = '' OR m.topic = $2)
          AND ($3 = '' OR strpos(m.folded, $3) > 0)
          AND ($5::text[] IS NULL OR m.topic = ANY ($5))
    ),
    ranked AS (
        SELECT f.id, sum(t.idf * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * f.tokens / $9::float8))) AS bm25
        FROM found f JOIN terms t ON t.lexeme = f.lexeme
        GROUP BY f.id
        ORDER BY bm25 DESC, f.id DESC LIMIT $4
    )
    SELECT {COLUMNS}, r.bm25,
           ts_headline('clix_english', m.text, q.q,
                       'StartSel=[, StopSel=], MaxWords=12, MinWords=4, ShortWord=0, MaxFragments=1')
    FROM ranked r JOIN memories m ON m.id = r.id CROSS JOIN q
    ORDER BY r.bm25 DESC, m.id DESC"#
    )
});

/// One term of the query: its lexeme (plain and quoted as a tsquery
/// reads it), idf and n(t).
struct Term {
    lexeme: String,
    quoted: String,
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
    let (n, avgdl): (f64, f64) = (first.get(3), first.get(4));
    let mut terms: Vec<Term> = rows
        .iter()
        .map(|r| {
            let docs: f64 = r.get(2);
            let idf = ((n - docs + 0.5) / (docs + 0.5)).ln().max(1e-6);
            Term { lexeme: r.get(0), quoted: r.get(1), idf, docs }
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

    let mut cut = terms.iter().take_while(|t| t.docs > n * COMMON_SHARE).count().min(terms.len() - 1);
    loop {
        let essential: Vec<&str> = terms[cut..].iter().map(|t| t.quoted.as_str()).collect();
        let essential = essential.join(" | ");
        let rows = db.query(
            SCORED.as_str(),
            &[&query, &filter.topic, &keyword, &limit_sql, &scope, &lexemes, &idfs, &essential, &avgdl],
        )?;
        // The k-th best score found; a memory left out scores at most `left_out(cut)`.
        let kth = (rows.len() == limit).then(|| rows.last().map(|r| r.get::<_, f64>(7))).flatten();
        let exact = |cut: usize, kth: f64| left_out(cut) < kth * (1.0 - 1e-9);
        if cut == 0 || kth.is_some_and(|kth| exact(cut, kth)) {
            return Ok(rows
                .iter()
                .map(|r| {
                    let bm25: f64 = r.get(7);
                    Hit { memory: memory(r), score: bm25, bm25: Some(bm25), similarity: None, snippet: r.get(8) }
                })
                .collect());
        }
        // Leave out only what the score found allows (nothing when fewer
        // than `limit` were found): the next try holds this one's memories,
        // so its k-th score is at least as high, and it is exact.
        cut = match kth {
            Some(kth) => (0..cut).rev().find(|c| exact(*c, kth)).unwrap_or(0),
            None => 0,
        };
    }
}
