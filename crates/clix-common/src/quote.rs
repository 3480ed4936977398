//! Quoting for a POSIX shell, written once: a word single-quoted, each `'`
//! written `'\''`, so the shell reads every other byte as itself. Used for
//! the line a sandbox's stub `exec`s, the line clip hands a remote shell,
//! and the words of `clix run ls -la` put back together.

/// `text` as one word for a POSIX shell.
pub fn shell_quote(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    shell_quote_into(&mut out, text.as_bytes());
    // Only ASCII quotes and backslashes were added to valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// `bytes` as one word for a POSIX shell, appended to `out` (any bytes: a
/// path need not be UTF-8).
pub fn shell_quote_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
}

/// `word` as a shell reads it back as one word: as it is when it holds
/// only characters no shell gives a meaning, else single-quoted (the
/// words of `clix run ls -la`, of `clix memory search …` put back together).
pub fn shell_word(word: &str) -> std::borrow::Cow<'_, str> {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | ',' | '+' | '=' | '@' | '%')
        });
    if plain { word.into() } else { shell_quote(word).into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case quoted, then read back by a real `sh` as one argument.
    #[test]
    fn a_real_shell_reads_each_quoted_word_back_unchanged() {
        let words = ["plain", "it's", "'", "''", "$HOME `id` $(id) \\n", "two\nlines", "", "*", "-c", "é ü"];
        let line: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf '<%s>' {}", line.join(" "))])
            .output()
            .expect("sh runs");
        let want: String = words.iter().map(|w| format!("<{w}>")).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout), want);
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
