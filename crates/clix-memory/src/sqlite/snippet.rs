//! What a full-text hit shows: up to [`WINDOW`] tokens of the memory
//! around the most query terms, each term in `[` `]`, `…` where the text
//! is cut (the shape of FTS5's `snippet(…, '[', ']', '…', 12)`).
//!
//! Made here from FTS5's own tokens (`tokens.rs`) rather than by FTS5:
//! FTS5's `snippet()` needs the memory found again by `MATCH` on its
//! rowid, which costs a merge of every query term's doclist (about 0.2 ms
//! a memory at 100,000 memories), more than ranking them all did.

use super::tokens::Tokenizer;

/// Tokens a snippet shows at most.
const WINDOW: usize = 12;

/// The snippet of `text` for a query of `terms` (FTS5 tokens).
pub(super) fn snippet(tokenizer: &Tokenizer<'_>, text: &str, terms: &[Vec<u8>]) -> rusqlite::Result<String> {
    let mut tokens: Vec<(std::ops::Range<usize>, Option<usize>)> = Vec::new();
    tokenizer.spans(text, |token, span| tokens.push((span, terms.iter().position(|t| t == token))))?;
    let start = best_window(&tokens);
    let end = (start + WINDOW).min(tokens.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut at = tokens.get(start).map_or(0, |t| t.0.start);
    for (span, term) in &tokens[start..end] {
        // FTS5 gives byte offsets on character boundaries; a bad one is skipped, not a panic.
        let (Some(between), Some(word)) = (text.get(at..span.start), text.get(span.clone())) else { continue };
        out.push_str(between);
        match term {
            Some(_) => {
                out.push('[');
                out.push_str(word);
                out.push(']');
            }
            None => out.push_str(word),
        }
        at = span.end;
    }
    if end < tokens.len() {
        out.push('…');
    } else if let Some(rest) = text.get(at..) {
        // The text's own ending (a full stop) after its last token.
        out.push_str(rest.trim_end());
    }
    Ok(out)
}

/// The first token of the window holding the most distinct query terms,
/// then the most term occurrences; a window starts two tokens before a
/// term (for context) or at the text's start, the earliest best one wins.
fn best_window(tokens: &[(std::ops::Range<usize>, Option<usize>)]) -> usize {
    if tokens.len() <= WINDOW {
        return 0;
    }
    let last_start = tokens.len() - WINDOW;
    let starts = std::iter::once(0).chain(
        tokens.iter().enumerate().filter(|(_, t)| t.1.is_some()).map(|(i, _)| i.saturating_sub(2).min(last_start)),
    );
    let score = |start: usize| {
        let window = &tokens[start..start + WINDOW];
        let mut distinct: Vec<usize> = window.iter().filter_map(|t| t.1).collect();
        let occurrences = distinct.len();
        distinct.sort_unstable();
        distinct.dedup();
        (distinct.len(), occurrences)
    };
    let mut best = (0, score(0));
    for start in starts {
        let s = score(start);
        if s > best.1 {
            best = (start, s);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(text: &str, words: &[&str]) -> String {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let tokenizer = Tokenizer::new(&db).unwrap();
        let mut terms = Vec::new();
        for w in words {
            tokenizer.tokens(w, |t| terms.push(t.to_vec())).unwrap();
        }
        snippet(&tokenizer, text, &terms).unwrap()
    }

    /// The table of what a snippet shows: stems and folded letters
    /// bracketed as written, the window around the most terms, `…` where cut.
    #[test]
    fn a_snippet_brackets_the_terms_in_a_window_around_them() {
        let long = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen \
                    the key rotates every friday at noon when the vault seals";
        for (text, words, want) in [
            ("Credentials are replaced every Friday.", &["friday"][..], "Credentials are replaced every [Friday]."),
            ("Running the café's tests", &["run", "cafe"], "[Running] the [café]'s tests"),
            ("nothing here", &["absent"], "nothing here"),
            (long, &["rotate", "vault"], "…fourteen the key [rotates] every friday at noon when the [vault] seals"),
            (long, &["one"], "[one] two three four five six seven eight nine ten eleven twelve…"),
            (long, &["seven"], "one two three four five six [seven] eight nine ten eleven twelve…"),
            (long, &["thirteen"], "…eleven twelve [thirteen] fourteen the key rotates every friday at noon when…"),
        ] {
            assert_eq!(show(text, words), want, "{text:?} for {words:?}");
        }
    }
}
