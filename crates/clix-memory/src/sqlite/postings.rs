//! clix's own full-text index beside FTS5: for each term, its postings
//! (memory, term frequency, memory length, topic) in blocks of about
//! [`BLOCK`] postings, and the ranking read from them in Rust.
//!
//! Why beside FTS5, not instead of it. FTS5 answers an `OR` query by
//! merging every term's doclist in its virtual-table machinery and calling
//! `bm25()` once per matching memory: at 100,000 memories a query of a few
//! common terms matches thousands, and the ranking took 10 ms at p50 and
//! 17 ms at p95 (`clix-bench memory`, stop 48), more than the vector KNN.
//! Read as a few dozen blobs and merged in one loop, the same postings
//! rank in well under a millisecond. FTS5 stays for what it does well:
//! snippets of the few memories shown, `indexed`, and the rare query this
//! index does not take (a quoted word FTS5 reads as more than one token).
//!
//! The terms are FTS5's own (`tokens.rs`) and the score is FTS5's `bm25()`
//! computed in the same order with the same operations, so the two agree
//! to the bit; a test holds this index to FTS5 over random corpora with
//! deletions and topic moves.
//!
//! Layout (schema step 4):
//! - `ft_blocks (term, first, last, n, data)`: the `n` postings of `term`
//!   whose ids are at least `first` and below the next block's `first`
//!   (`last` the highest), as varints (id − previous id, from `first`;
//!   frequency; length; topic number).
//! - `ft_pending (id, topic, len, terms)`: new memories whose postings are
//!   not in the blocks yet, one row each, moved there [`PENDING`] at a time
//!   (each term's postings appended to its last block, undecoded): a store
//!   writes one row instead of one block per term.
//! - `ft_stats`: how many memories are indexed and their tokens in all, for
//!   N and avgdl.
//! - `ft_topics (id, topic)`: the topic numbers. Several numbers may name
//!   one topic: moving a topic's memories (`retopic`) renames its numbers
//!   instead of rewriting their postings.
//!
//! The store writes every memory through the backend, which keeps this
//! index in the same transaction as the memory: `add`, `remove`, `retopic`.

use std::collections::{BTreeMap, HashSet};

use rusqlite::{Connection, OptionalExtension, params};

use super::tokens::Tokenizer;
use crate::backend::Scope;
use crate::bm25::{self, Posting, Ties};
use crate::record::Filter;

/// Memories that wait in `ft_pending` before their postings go into the
/// blocks: a store then writes one row, and every 256th writes each block
/// its memories touch once. A search reads them all (about 30 KB).
const PENDING: usize = 256;

/// Postings per block: a block stays within one SQLite page (about 4–5
/// bytes a posting), small enough to rewrite when a posting goes in the
/// middle of it or is removed.
const BLOCK: usize = 128;

/// Part of the index that does not decode (`what`): the index is damaged,
/// which is an error that says how to mend it, never a shorter answer.
fn damaged(what: String) -> rusqlite::Error {
    rusqlite::Error::UserFunctionError(
        format!(
            "clix's full-text index is damaged ({what}); \
             `clix storage migrate` builds it again from the memories"
        )
        .into(),
    )
}

/// A block of `term` from memory `first` that does not decode.
fn damaged_block(term: &[u8], first: i64) -> rusqlite::Error {
    damaged(format!("the block of term {:?} from memory {first}", String::from_utf8_lossy(term)))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// One posting as a block holds it, after the posting `previous` (or the block's `first`).
fn put_posting(out: &mut Vec<u8>, previous: i64, p: &Posting) {
    put_varint(out, (p.id - previous) as u64);
    put_varint(out, u64::from(p.tf));
    put_varint(out, u64::from(p.len));
    put_varint(out, p.topic as u64);
}

fn encode(first: i64, postings: &[Posting]) -> Vec<u8> {
    let mut out = Vec::with_capacity(postings.len() * 5);
    let mut previous = first;
    for p in postings {
        put_posting(&mut out, previous, p);
        previous = p.id;
    }
    out
}

/// Appends the block's postings to `out`, checking that ids rise from
/// `first` (the first posting may be `first` itself).
fn decode_into(term: &[u8], first: i64, data: &[u8], out: &mut Vec<Posting>) -> rusqlite::Result<()> {
    let mut at = 0;
    let mut previous: Option<i64> = None;
    while at < data.len() {
        let mut next = || get_varint(data, &mut at);
        let posting = (|| {
            let delta = i64::try_from(next()?).ok()?;
            let id = previous.unwrap_or(first).checked_add(delta)?;
            let (tf, len) = (u32::try_from(next()?).ok()?, u32::try_from(next()?).ok()?);
            let topic = i64::try_from(next()?).ok()?;
            Some(Posting { id, tf, len, topic })
        })();
        let Some(p) = posting.filter(|p| previous.is_none_or(|prev| p.id > prev)) else {
            return Err(damaged_block(term, first));
        };
        previous = Some(p.id);
        out.push(p);
    }
    Ok(())
}

/// Appends a block's postings to `out`, the block checked whole: they
/// decode, their ids rise from `first`, and they are the `n` postings up
/// to `last` that the block's row records. What a search reads and what
/// `intact` vouches for.
fn read_block(term: &[u8], first: i64, last: i64, n: i64, data: &[u8], out: &mut Vec<Posting>) -> rusqlite::Result<()> {
    let before = out.len();
    decode_into(term, first, data, out)?;
    let block = &out[before..];
    if block.len() as i64 != n || block.last().map(|p| p.id) != Some(last) {
        return Err(damaged_block(term, first));
    }
    Ok(())
}

/// A memory's terms with their frequencies, and its length in tokens.
fn terms_of(tokenizer: &Tokenizer<'_>, text: &str) -> rusqlite::Result<(BTreeMap<Vec<u8>, u32>, u32)> {
    let mut terms: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    let mut len = 0u32;
    tokenizer.tokens(text, |token| {
        len = len.saturating_add(1);
        *terms.entry(token.to_vec()).or_insert(0) += 1;
    })?;
    Ok((terms, len))
}

/// The number of `topic`, made when it has none.
fn topic_number(db: &Connection, topic: &str) -> rusqlite::Result<i64> {
    let known: Option<i64> =
        db.prepare_cached("SELECT min(id) FROM ft_topics WHERE topic = ?1")?.query_row([topic], |r| r.get(0))?;
    match known {
        Some(n) => Ok(n),
        None => {
            db.prepare_cached("INSERT INTO ft_topics (topic) VALUES (?1)")?.execute([topic])?;
            Ok(db.last_insert_rowid())
        }
    }
}

fn count(db: &Connection, docs: i64, tokens: i64) -> rusqlite::Result<()> {
    db.prepare_cached(
        "INSERT INTO ft_stats (id, docs, tokens) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET docs = docs + ?1, tokens = tokens + ?2",
    )?
    .execute(params![docs, tokens])?;
    Ok(())
}

/// The block of `term` that holds (or would hold) `id`, decoded.
fn block_of(db: &Connection, term: &[u8], id: i64) -> rusqlite::Result<Option<(i64, Vec<Posting>)>> {
    let found: Option<(i64, Vec<u8>)> = db
        .prepare_cached(
            "SELECT first, data FROM ft_blocks WHERE term = ?1 AND first <= ?2 ORDER BY first DESC LIMIT 1",
        )?
        .query_row(params![term, id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((first, data)) = found else { return Ok(None) };
    let mut postings = Vec::new();
    decode_into(term, first, &data, &mut postings)?;
    Ok(Some((first, postings)))
}

fn write_block(db: &Connection, term: &[u8], first: i64, postings: &[Posting]) -> rusqlite::Result<()> {
    let last = postings.last().map_or(first, |p| p.id);
    db.prepare_cached("INSERT OR REPLACE INTO ft_blocks (term, first, last, n, data) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![term, first, last, postings.len() as i64, encode(first, postings)])?;
    Ok(())
}

/// Adds `postings` (ascending ids) to `term`'s blocks. The usual case,
/// ids above every one the term holds, decodes no block: their bytes are
/// appended to the last block while it has room, and the rest start new
/// blocks. Otherwise each goes in its place, splitting a full block.
fn insert_postings(db: &Connection, term: &[u8], postings: &[Posting]) -> rusqlite::Result<()> {
    let last_block: Option<(i64, i64, i64, Vec<u8>)> = db
        .prepare_cached("SELECT first, last, n, data FROM ft_blocks WHERE term = ?1 ORDER BY first DESC LIMIT 1")?
        .query_row([term], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let rest = match last_block {
        Some((_, last, _, _)) if postings.first().is_some_and(|p| p.id <= last) => {
            return postings.iter().try_for_each(|p| insert_one(db, term, p));
        }
        Some((first, mut last, n, mut data)) => {
            let room = BLOCK.saturating_sub(n as usize).min(postings.len());
            for p in &postings[..room] {
                put_posting(&mut data, last, p);
                last = p.id;
            }
            if room > 0 {
                db.prepare_cached("UPDATE ft_blocks SET data = ?3, last = ?4, n = ?5 WHERE term = ?1 AND first = ?2")?
                    .execute(params![term, first, data, last, n + room as i64])?;
            }
            &postings[room..]
        }
        None => postings,
    };
    for block in rest.chunks(BLOCK) {
        write_block(db, term, block[0].id, block)?;
    }
    Ok(())
}

/// Puts `posting` in its place among `term`'s: in the block that holds
/// its id's range (a full block splits in two), or a block of its own
/// below every other.
fn insert_one(db: &Connection, term: &[u8], posting: &Posting) -> rusqlite::Result<()> {
    let Some((first, mut postings)) = block_of(db, term, posting.id)? else {
        return write_block(db, term, posting.id, std::slice::from_ref(posting));
    };
    match postings.binary_search_by_key(&posting.id, |p| p.id) {
        Ok(at) => postings[at] = *posting,
        Err(at) => postings.insert(at, *posting),
    }
    if postings.len() > BLOCK {
        let rest = postings.split_off(postings.len() / 2);
        write_block(db, term, rest[0].id, &rest)?;
    }
    write_block(db, term, first, &postings)
}

/// A memory's terms as `ft_pending` keeps them: (length, bytes, frequency) each.
fn encode_terms(terms: &BTreeMap<Vec<u8>, u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for (term, tf) in terms {
        put_varint(&mut out, term.len() as u64);
        out.extend_from_slice(term);
        put_varint(&mut out, u64::from(*tf));
    }
    out
}

/// Calls `each` with every (term, frequency) of a pending memory's bytes.
fn decode_terms(id: i64, data: &[u8], mut each: impl FnMut(&[u8], u32)) -> rusqlite::Result<()> {
    let mut at = 0;
    while at < data.len() {
        let term = get_varint(data, &mut at)
            .and_then(|len| usize::try_from(len).ok())
            .and_then(|len| data.get(at..at.checked_add(len)?))
            .inspect(|term| at += term.len());
        let tf = get_varint(data, &mut at).and_then(|tf| u32::try_from(tf).ok());
        let (Some(term), Some(tf)) = (term, tf) else {
            return Err(damaged(format!("the pending terms of memory {id}")));
        };
        each(term, tf);
    }
    Ok(())
}

/// Indexes memory `id` (new, or not yet indexed). It waits in
/// `ft_pending` (one row, one page written) with up to [`PENDING`] others;
/// then all go into the blocks at once, each block written once for all
/// of them instead of once per memory. A search reads the pending rows
/// beside the blocks.
pub(super) fn add(db: &Connection, id: i64, topic: &str, text: &str) -> rusqlite::Result<()> {
    let tokenizer = Tokenizer::new(db)?;
    let (terms, len) = terms_of(&tokenizer, text)?;
    let topic = topic_number(db, topic)?;
    db.prepare_cached("INSERT OR REPLACE INTO ft_pending (id, topic, len, terms) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![id, topic, len, encode_terms(&terms)])?;
    count(db, 1, i64::from(len))?;
    let pending: i64 = db.prepare_cached("SELECT count(*) FROM ft_pending")?.query_row([], |r| r.get(0))?;
    if pending as usize >= PENDING { flush(db) } else { Ok(()) }
}

/// Moves every pending memory into the blocks.
pub(super) fn flush(db: &Connection) -> rusqlite::Result<()> {
    let mut by_term: BTreeMap<Vec<u8>, Vec<Posting>> = BTreeMap::new();
    each_pending(db, |term, posting| by_term.entry(term.to_vec()).or_default().push(posting))?;
    for (term, postings) in &by_term {
        insert_postings(db, term, postings)?;
    }
    db.prepare_cached("DELETE FROM ft_pending")?.execute([])?;
    Ok(())
}

/// Every posting of the pending memories, by ascending id.
fn each_pending(db: &Connection, mut each: impl FnMut(&[u8], Posting)) -> rusqlite::Result<()> {
    let mut stmt = db.prepare_cached("SELECT id, topic, len, terms FROM ft_pending ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (id, topic, len): (i64, i64, u32) = (row.get(0)?, row.get(1)?, row.get(2)?);
        decode_terms(id, row.get_ref(3)?.as_blob()?, |term, tf| each(term, Posting { id, tf, len, topic }))?;
    }
    Ok(())
}

/// Removes memory `id`, whose text was `text`, from the index.
pub(super) fn remove(db: &Connection, id: i64, text: &str) -> rusqlite::Result<()> {
    let tokenizer = Tokenizer::new(db)?;
    let (terms, len) = terms_of(&tokenizer, text)?;
    if db.prepare_cached("DELETE FROM ft_pending WHERE id = ?1")?.execute([id])? > 0 {
        return count(db, -1, -i64::from(len));
    }
    let mut found = false;
    for term in terms.keys() {
        let Some((first, mut postings)) = block_of(db, term, id)? else { continue };
        let Ok(at) = postings.binary_search_by_key(&id, |p| p.id) else { continue };
        postings.remove(at);
        found = true;
        if postings.is_empty() {
            db.prepare_cached("DELETE FROM ft_blocks WHERE term = ?1 AND first = ?2")?.execute(params![term, first])?;
        } else {
            write_block(db, term, first, &postings)?;
        }
    }
    if found || terms.is_empty() { count(db, -1, -i64::from(len)) } else { Ok(()) }
}

/// Topic `from`'s memories are now `to`'s: its numbers are renamed.
pub(super) fn retopic(db: &Connection, from: &str, to: &str) -> rusqlite::Result<()> {
    db.prepare_cached("UPDATE ft_topics SET topic = ?2 WHERE topic = ?1")?.execute([from, to])?;
    Ok(())
}

/// Whether every block and pending row decodes, each block holding the
/// count and last id it records.
pub(super) fn intact(db: &Connection) -> rusqlite::Result<bool> {
    let mut blocks = db.prepare("SELECT term, first, last, n, data FROM ft_blocks")?;
    let mut rows = blocks.query([])?;
    let mut postings = Vec::new();
    while let Some(row) = rows.next()? {
        let (term, first, last, n): (Vec<u8>, i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        postings.clear();
        if read_block(&term, first, last, n, row.get_ref(4)?.as_blob()?, &mut postings).is_err() {
            return Ok(false);
        }
    }
    Ok(each_pending(db, |_, _| {}).is_ok())
}

/// Builds the index of every memory anew (schema step 4, on a file that
/// already holds memories), in one pass: each term's blocks written once.
pub(super) fn rebuild(db: &Connection) -> rusqlite::Result<()> {
    db.execute_batch("DELETE FROM ft_blocks; DELETE FROM ft_pending; DELETE FROM ft_stats; DELETE FROM ft_topics;")?;
    let tokenizer = Tokenizer::new(db)?;
    let mut index: BTreeMap<Vec<u8>, Vec<Posting>> = BTreeMap::new();
    let (mut docs, mut tokens) = (0i64, 0i64);
    let mut topics: BTreeMap<String, i64> = BTreeMap::new();
    let mut stmt = db.prepare("SELECT id, topic, text FROM memories ORDER BY id")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (id, topic, text): (i64, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let topic = match topics.get(&topic) {
            Some(n) => *n,
            None => {
                let n = topic_number(db, &topic)?;
                topics.insert(topic, n);
                n
            }
        };
        let (terms, len) = terms_of(&tokenizer, &text)?;
        for (term, tf) in terms {
            index.entry(term).or_default().push(Posting { id, tf, len, topic });
        }
        docs += 1;
        tokens += i64::from(len);
    }
    for (term, postings) in &index {
        for block in postings.chunks(BLOCK) {
            write_block(db, term, block[0].id, block)?;
        }
    }
    if docs > 0 {
        count(db, docs, tokens)?;
    }
    Ok(())
}

/// A `record::fts_query` (quoted words joined by ` OR `) as FTS5 reads it.
pub(super) struct Query {
    /// Every token of its words, in order.
    pub(super) terms: Vec<Vec<u8>>,
    /// Whether [`rank`] takes it: each word is one token (FTS5 reads a word
    /// of several as a phrase), and the query has the store's shape.
    pub(super) rankable: bool,
}

impl Query {
    pub(super) fn parse(tokenizer: &Tokenizer<'_>, query: &str) -> rusqlite::Result<Query> {
        let words: Option<Vec<&str>> = query
            .split(" OR ")
            .map(|w| w.strip_prefix('"').and_then(|w| w.strip_suffix('"')).filter(|w| !w.contains('"')))
            .collect();
        let mut terms = Vec::new();
        let Some(words) = words else {
            tokenizer.tokens(query, |t| terms.push(t.to_vec()))?;
            return Ok(Query { terms, rankable: false });
        };
        let mut rankable = true;
        for word in words {
            let before = terms.len();
            tokenizer.tokens(word, |t| terms.push(t.to_vec()))?;
            rankable &= terms.len() == before + 1;
        }
        Ok(Query { terms, rankable })
    }
}

/// The topic numbers a search may see (`None`: all).
fn allowed_topics(db: &Connection, filter: &Filter<'_>, scope: Scope<'_>) -> rusqlite::Result<Option<HashSet<i64>>> {
    if filter.topic.is_empty() && scope.is_none() {
        return Ok(None);
    }
    let mut allowed = HashSet::new();
    let mut stmt = db.prepare_cached("SELECT id, topic FROM ft_topics")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (id, topic): (i64, String) = (row.get(0)?, row.get(1)?);
        let wanted = filter.topic.is_empty() || topic == filter.topic;
        let in_scope = scope.is_none_or(|topics| topics.contains(&topic));
        if wanted && in_scope {
            allowed.insert(id);
        }
    }
    Ok(Some(allowed))
}

/// The best `limit` memories holding one of `terms`, as (id, BM25 score),
/// best first (equal scores: the newer memory first), filters and scope
/// applied before ranking. Exactly `-bm25(memories_fts)` of FTS5 for the
/// query of these terms joined by `OR`.
pub(super) fn rank(
    db: &Connection,
    terms: &[Vec<u8>],
    filter: &Filter<'_>,
    scope: Scope<'_>,
    limit: usize,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let (n, tokens): (i64, i64) = db
        .prepare_cached("SELECT docs, tokens FROM ft_stats WHERE id = 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((0, 0));
    if n <= 0 || limit == 0 {
        return Ok(Vec::new());
    }
    let allowed = allowed_topics(db, filter, scope)?;

    // Each distinct term's postings, read once; a term the query repeats
    // is a phrase of its own to FTS5, and scores each time.
    let mut lists: Vec<Vec<Posting>> = Vec::new();
    let mut phrase_list: Vec<usize> = Vec::with_capacity(terms.len());
    let mut list_terms: Vec<&[u8]> = Vec::new();
    let mut blocks = db.prepare_cached("SELECT first, last, n, data FROM ft_blocks WHERE term = ?1 ORDER BY first")?;
    for (i, term) in terms.iter().enumerate() {
        if let Some(same) = terms[..i].iter().position(|t| t == term) {
            phrase_list.push(phrase_list[same]);
            continue;
        }
        let mut postings = Vec::new();
        let mut rows = blocks.query([term])?;
        while let Some(row) = rows.next()? {
            read_block(term, row.get(0)?, row.get(1)?, row.get(2)?, row.get_ref(3)?.as_blob()?, &mut postings)?;
        }
        phrase_list.push(lists.len());
        lists.push(postings);
        list_terms.push(term.as_slice());
    }
    // The pending memories, whose ids are usually above every block's.
    each_pending(db, |term, posting| {
        if let Some(l) = list_terms.iter().position(|t| *t == term) {
            lists[l].push(posting);
        }
    })?;
    for list in &mut lists {
        if !list.is_sorted_by_key(|p| p.id) {
            list.sort_unstable_by_key(|p| p.id);
        }
    }
    let query = bm25::Query {
        avgdl: tokens as f64 / n as f64,
        phrases: phrase_list.iter().map(|&l| (bm25::idf(n, lists[l].len() as i64), lists[l].as_slice())).collect(),
    };
    let mut scored = bm25::score_all(&query, |p| allowed.as_ref().is_none_or(|a| a.contains(&p.topic)));
    if filter.keyword.is_empty() {
        bm25::best_first(&mut scored, Some(limit), Ties::Exact);
        return Ok(scored.into_iter().map(|(score, id)| (id, score)).collect());
    }
    // The keyword is read from the memories' text: the best first, a
    // chunk at a time, until `limit` hold it.
    bm25::best_first(&mut scored, None, Ties::Exact);
    let mut holds = db.prepare_cached(
        "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?1)) AND clix_contains(text, ?2)",
    )?;
    let mut kept = Vec::with_capacity(limit);
    for chunk in scored.chunks(256) {
        let ids: Vec<i64> = chunk.iter().map(|c| c.1).collect();
        let json = serde_json::to_string(&ids).unwrap_or_default();
        let with: HashSet<i64> =
            holds.query_map(params![json, filter.keyword], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        kept.extend(chunk.iter().filter(|c| with.contains(&c.1)).map(|&(score, id)| (id, score)));
        if kept.len() >= limit {
            kept.truncate(limit);
            break;
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per term: (id, frequency, length, topic name) of each posting.
    type Every = BTreeMap<Vec<u8>, Vec<(i64, u32, u32, String)>>;

    /// Every term's postings, decoded block by block (each block checked:
    /// its count, its highest id, ids from its `first`), topics by name.
    fn every_posting(db: &Connection) -> Every {
        let topics: BTreeMap<i64, String> = db
            .prepare("SELECT id, topic FROM ft_topics")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let mut all = Every::new();
        let mut stmt = db.prepare("SELECT term, first, last, n, data FROM ft_blocks ORDER BY term, first").unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let (term, first, last, n): (Vec<u8>, i64, i64, i64) =
                (row.get(0).unwrap(), row.get(1).unwrap(), row.get(2).unwrap(), row.get(3).unwrap());
            let mut block = Vec::new();
            read_block(&term, first, last, n, row.get_ref(4).unwrap().as_blob().unwrap(), &mut block).unwrap();
            assert!(block.len() <= BLOCK, "{term:?} from {first}");
            let list = all.entry(term).or_default();
            list.extend(block.iter().map(|p| (p.id, p.tf, p.len, topics[&p.topic].clone())));
            assert!(list.windows(2).all(|w| w[0].0 < w[1].0), "ids rise across blocks");
        }
        all
    }

    /// Postings added in any order (inserts in the middle of a block and
    /// splits included) and removed are what a rebuild makes of the same
    /// memories, and the corpus counts agree.
    #[test]
    fn postings_added_in_any_order_equal_a_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::Sqlite::open(&dir.path().join("m.sqlite")).unwrap();
        let db = &store.db;
        let mut ids: Vec<i64> = (1..=700).collect();
        ids.sort_by_key(|i| (i * 7919) % 701);
        let text = |id: i64| -> String {
            (0..3 + id % 5).map(|j| format!("w{}", (id * (j + 3)) % (2 + j * 4))).collect::<Vec<_>>().join(" ")
        };
        for &id in &ids {
            let topic = ["red", "green"][(id % 2) as usize];
            db.execute(
                "INSERT INTO memories (id, topic, kind, text) VALUES (?1, ?2, 'note', ?3)",
                params![id, topic, text(id)],
            )
            .unwrap();
            add(db, id, topic, &text(id)).unwrap();
        }
        for id in ids.iter().filter(|id| *id % 9 == 0) {
            db.execute("DELETE FROM memories WHERE id = ?1", [id]).unwrap();
            remove(db, *id, &text(*id)).unwrap();
        }
        let pending: i64 = db.query_row("SELECT count(*) FROM ft_pending", [], |r| r.get(0)).unwrap();
        assert!(pending > 0, "some memories still wait");
        flush(db).unwrap();
        let blocks: i64 = db.query_row("SELECT count(*) FROM ft_blocks WHERE n > 64", [], |r| r.get(0)).unwrap();
        assert!(blocks > 4, "the common terms filled blocks, so splits were made ({blocks})");
        let stats = |db: &Connection| {
            db.query_row("SELECT docs, tokens FROM ft_stats", [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .unwrap()
        };
        let (incremental, counted) = (every_posting(db), stats(db));
        rebuild(db).unwrap();
        assert_eq!(every_posting(db), incremental);
        assert_eq!(stats(db), counted);
    }
}
