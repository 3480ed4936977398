//! Okapi BM25 as SQLite's FTS5 computes it (`fts5Bm25Function` in its
//! `fts5_aux.c`), over postings read from either backend: both rank their
//! full text here, so [`crate::Hit::bm25`] is one scale, written once.
//!
//! For a query of phrases t (a word the query repeats is a phrase each
//! time), a memory D scores the sum over t of
//!
//! idf(t) · f(t, D) · (k1 + 1) / (f(t, D) + k1 · (1 − b + b · |D| / avgdl))
//!
//! with k1 = 1.2 and b = 0.75, idf(t) = ln((N − n(t) + 0.5) / (n(t) + 0.5))
//! (1e-6 where that is not positive: a term in half the memories or more).
//! The operations and their order are FTS5's, so from the same counts the
//! score is FTS5's to the bit.
//!
//! The ranking reads each phrase's postings, ordered by memory, document
//! at a time: every memory holding a phrase is scored, in one loop, with
//! no index to consult per memory.

/// BM25's constants, as FTS5 has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One memory holding a term.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Posting {
    pub(crate) id: i64,
    /// How often the term occurs in the memory.
    pub(crate) tf: u32,
    /// The memory's length in tokens.
    pub(crate) len: u32,
    /// The memory's topic as the backend numbers it (0 where it filters elsewhere).
    pub(crate) topic: i64,
}

/// FTS5's idf of a term held by `hits` of `n` memories.
pub(crate) fn idf(n: i64, hits: i64) -> f64 {
    let idf = (((n - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The corpus and the query: N's avgdl, and each phrase's idf and postings.
pub(crate) struct Query<'a> {
    /// The mean memory length in tokens.
    pub(crate) avgdl: f64,
    /// Per phrase, in the query's order: its idf and its postings (ordered
    /// by id, without repeats; phrases of one term share them).
    pub(crate) phrases: Vec<(f64, &'a [Posting])>,
}

/// How equal scores are told apart: by the newer memory (the higher id),
/// after the score itself or the score rounded to 9 decimals (where the
/// backend adds terms in an order of its own, and sums differ in the last bits).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ties {
    Exact,
    NineDecimals,
}

impl Ties {
    fn key(self, score: f64) -> f64 {
        match self {
            Ties::Exact => score,
            Ties::NineDecimals => (score * 1e9).round(),
        }
    }
}

/// Every memory holding a phrase whose posting `keep` accepts, as
/// (score, id), in no order (see [`best_first`]).
pub(crate) fn score_all(query: &Query<'_>, keep: impl Fn(&Posting) -> bool) -> Vec<(f64, i64)> {
    let mut at = vec![0usize; query.phrases.len()];
    let mut scored = Vec::new();
    loop {
        let next = query.phrases.iter().zip(&at).filter_map(|((_, list), &i)| list.get(i).map(|p| p.id)).min();
        let Some(id) = next else { break };
        let mut score = 0.0f64;
        let mut kept = true;
        for ((idf, list), i) in query.phrases.iter().zip(at.iter_mut()) {
            let Some(p) = list.get(*i).filter(|p| p.id == id) else { continue };
            let f = f64::from(p.tf);
            let d = f64::from(p.len);
            score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / query.avgdl)));
            kept = keep(p);
            *i += 1;
        }
        if kept {
            scored.push((score, id));
        }
    }
    scored
}

/// Puts the best `limit` first, in order, and drops the rest (`None`:
/// orders them all).
pub(crate) fn best_first(scored: &mut Vec<(f64, i64)>, limit: Option<usize>, ties: Ties) {
    let order = |a: &(f64, i64), b: &(f64, i64)| ties.key(b.0).total_cmp(&ties.key(a.0)).then(b.1.cmp(&a.1));
    if let Some(limit) = limit
        && scored.len() > limit
    {
        scored.select_nth_unstable_by(limit, order);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(order);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: i64, tf: u32, len: u32) -> Posting {
        Posting { id, tf, len, topic: 0 }
    }

    /// Scores by hand from the formula, memory by memory; a repeated
    /// phrase counts twice; equal scores put the newer memory first.
    #[test]
    fn scores_follow_the_formula_and_ties_go_to_the_newer_memory() {
        let rare = [p(2, 1, 4), p(5, 2, 8)];
        let common = [p(1, 1, 4), p(2, 1, 4), p(3, 1, 4), p(5, 1, 8)];
        let (n, avgdl) = (10, 5.0);
        let query =
            Query { avgdl, phrases: vec![(idf(n, 2), &rare[..]), (idf(n, 4), &common[..]), (idf(n, 2), &rare[..])] };
        let term = |idf: f64, f: f64, d: f64| idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * d / avgdl));
        let mut scored = score_all(&query, |_| true);
        best_first(&mut scored, None, Ties::Exact);
        let want_2 = 2.0 * term(idf(n, 2), 1.0, 4.0) + term(idf(n, 4), 1.0, 4.0);
        let want_5 = 2.0 * term(idf(n, 2), 2.0, 8.0) + term(idf(n, 4), 1.0, 8.0);
        let ids: Vec<i64> = scored.iter().map(|s| s.1).collect();
        assert_eq!(ids[2..], [3, 1], "equal scores: the newer first");
        for (score, id) in &scored {
            let want = match id {
                2 => want_2,
                5 => want_5,
                _ => term(idf(n, 4), 1.0, 4.0),
            };
            assert!((score - want).abs() < 1e-12, "memory {id}: {score} against {want}");
        }
        assert!(idf(10, 5) == 1e-6 && idf(10, 7) == 1e-6, "a term in half the memories or more");
        let mut odd = score_all(&query, |p| p.id % 2 == 1);
        best_first(&mut odd, Some(2), Ties::Exact);
        assert_eq!(odd.iter().map(|s| s.1).collect::<Vec<_>>(), [5, 3]);
    }
}
