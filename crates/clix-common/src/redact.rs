//! The one rule for secret-looking values in free text: whatever its
//! name, a value shaped like a token (a known service's prefix, or a long
//! high-entropy word), a credential in an `Authorization:` header and the
//! password of a URL's userinfo are hidden. Every audit record,
//! trajectory, memory and log line that may hold what a model typed or
//! read goes through [`redact_text`].

/// Prefixes of tokens issued by well-known services.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
    "npm_",
    "pypi-",
    "dop_v1_",
    "shpat_",
    "sk_live_",
    "rk_live_",
    "sk_test_",
    "SG.",
    "eyJ",
];

/// A token's characters (base64, base64url, and the separators tokens use).
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/' | '=')
}

/// Whether `word` is shaped like a token: a known prefix followed by at
/// least 8 token characters, or 32 or more characters of mixed case and
/// digits (no `/` or `.`, so paths and file names are not) whose
/// character entropy is at least 4 bits. Hex (commit ids, UUIDs) is not:
/// it has one case.
pub fn looks_like_token(word: &str) -> bool {
    if !word.chars().all(token_char) {
        return false;
    }
    if TOKEN_PREFIXES.iter().any(|p| word.starts_with(p) && word.len() >= p.len() + 8) {
        return true;
    }
    if word.len() < 32 || word.contains(['/', '.']) {
        return false;
    }
    let upper = word.chars().any(|c| c.is_ascii_uppercase());
    let lower = word.chars().any(|c| c.is_ascii_lowercase());
    let digits = word.chars().filter(char::is_ascii_digit).count();
    upper && lower && digits >= 2 && entropy(word) >= 4.0
}

/// Shannon entropy of `word`'s characters, in bits per character.
fn entropy(word: &str) -> f64 {
    let mut counts = [0u32; 128];
    for b in word.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
    }
    let n = word.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c) / n).map(|p| -p * p.log2()).sum()
}

/// Whether `text` holds a secret-looking value, as [`redact_text`] finds them.
pub fn holds_secret(text: &str) -> bool {
    redact_text(text) != text
}

/// `text` with every secret-looking value replaced by `***`: token-shaped
/// words, the credential after `Authorization: Bearer`/`Basic`/`token` (and
/// `Bearer` anywhere), a URL's userinfo password, and the value of
/// `NAME=value` where NAME looks secret. Everything else is kept as it was.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut hide_next = false;
    let mut after_authorization = false;
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        if word.is_empty() {
            continue;
        }
        if std::mem::take(&mut hide_next) {
            out.push_str("***");
            continue;
        }
        let bare = word.trim_matches(|c: char| matches!(c, '\'' | '"' | ',' | ';' | '(' | ')' | '[' | ']' | '{' | '}'));
        let lower = bare.to_ascii_lowercase();
        // `Bearer X` anywhere; `Basic X`, `token X` only as a header's scheme.
        let scheme =
            lower == "bearer" || (after_authorization && matches!(lower.as_str(), "basic" | "token" | "digest"));
        after_authorization = lower.ends_with("authorization:");
        if scheme {
            hide_next = true;
            out.push_str(word);
            continue;
        }
        out.push_str(&redact_word(word));
    }
    out
}

/// Words longer than this are left as they are: image data and other
/// blobs in base64, whose random pieces would read as tokens (a secret
/// inside such a blob is not found).
const MAX_WORD: usize = 4096;

/// One word (no whitespace) with its secret parts hidden.
fn redact_word(word: &str) -> String {
    if word.len() > MAX_WORD {
        return word.to_string();
    }
    if let Some((key, value)) = word.split_once('=')
        && !value.is_empty()
        && crate::is_secret_name(key.trim_start_matches('-').trim_start_matches(['\'', '"']))
        && !key.contains("://")
    {
        return format!("{key}=***");
    }
    if let Some(at) = word.find("://") {
        let hidden = crate::redact_url(&word[at..]);
        let url = if hidden != word[at..] { format!("{}{hidden}", &word[..at]) } else { word.to_string() };
        return redact_pieces(&url);
    }
    redact_pieces(word)
}

/// Each run of token characters in `word` that looks like a token, as `***`.
fn redact_pieces(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut piece = String::new();
    let flush = |piece: &mut String, out: &mut String| {
        // A sentence's full stop after a token is not part of it.
        if looks_like_token(piece) || looks_like_token(piece.trim_end_matches('.')) {
            out.push_str("***");
        } else {
            out.push_str(piece);
        }
        piece.clear();
    };
    for c in word.chars() {
        // `/` and `=` end a piece: `aws=AKIA…`, `path/ghp_…` (a token's `=` padding is left after it).
        if token_char(c) && c != '/' && c != '=' {
            piece.push(c);
        } else {
            flush(&mut piece, &mut out);
            out.push(c);
        }
    }
    flush(&mut piece, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values the red team found logged in clear, and what must stay readable.
    #[test]
    fn secret_shaped_values_are_hidden_wherever_they_sit() {
        for (text, want) in [
            ("echoer --query ghp_0123456789abcdefghij", "echoer --query ***"),
            ("[\"sk-proj-abcdefghijklmnop\", \"AKIAABCDEFGHIJKLMNOP\"]", "[\"***\", \"***\"]"),
            ("curl -H 'Authorization: Bearer ghp_short1234' x", "curl -H 'Authorization: Bearer *** x"),
            ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
            ("git clone https://u:ghp_0123456789abcdef@github.com/o/r", "git clone https://u:***@github.com/o/r"),
            ("psql postgresql://admin:pw@db:5432/x", "psql postgresql://admin:***@db:5432/x"),
            ("GH_TOKEN=abc git push", "GH_TOKEN=*** git push"),
            ("--api-key=s3cr3t", "--api-key=***"),
            ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "jwt ***"),
            ("key: Zk9xR2p3TGs4bVFuV3ZkYnVhN0p4UTJyY0Fz end", "key: *** end"),
            ("aws=AKIAABCDEFGHIJKLMNOP\n", "aws=***\n"),
            ("The key is AKIAABCDEFGHIJKLMNOP.", "The key is ***"),
            // What must stay: paths, hashes, uuids, plain words, short things.
            ("cat /usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "cat /usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"),
            ("git show 3f786850e387550fdab836ed7e6dc881de23001b", "git show 3f786850e387550fdab836ed7e6dc881de23001b"),
            ("id 123e4567-e89b-12d3-a456-426614174000", "id 123e4567-e89b-12d3-a456-426614174000"),
            ("sk-short and ghp_", "sk-short and ghp_"),
            ("grep -rn TODO src/ | wc -l", "grep -rn TODO src/ | wc -l"),
            ("TestVeryLongRustFunctionNameThatIsCamelCase", "TestVeryLongRustFunctionNameThatIsCamelCase"),
            ("  two  spaces\nkept  ", "  two  spaces\nkept  "),
            ("Basic usage: the token is in the file", "Basic usage: the token is in the file"),
        ] {
            assert_eq!(redact_text(text), want, "{text}");
        }
    }
}
