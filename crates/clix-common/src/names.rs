//! Which known name a mistyped one was meant to be: the one rule behind
//! every "did you mean" of clix (an unknown command, hub tool, manifest
//! field, parameter type or flag), so they all suggest the same way.
//!
//! A name is suggested only when it is close *and* plausible as a slip of
//! the keyboard: at most one edit (a letter added, dropped, changed, or two
//! neighbours swapped) per four characters typed, and at least one. So
//! `gerp` finds `grep` and `verison` finds `version`, but `rename` (two
//! edits in six letters) does not find `uname`: a model that typed `rename`
//! meant another program, and being sent to `uname` makes it give up. A
//! word of three or more characters also finds the names it begins
//! (`hea` → `head`, `timeout` → `timeout_ms`), counted as one edit.
//!
//! [`UnknownField`] is the one way every reader of clix (the config file,
//! hub manifests, plan files, eval tasks) refuses a field it does not know:
//! the near name when there is one, else every known field.

use std::fmt;

/// The names of `candidates` that `word` is a plausible slip for, all at
/// the smallest distance found (several when they tie), in the order of
/// `candidates`, each once; empty when none is near enough. `word` itself
/// is never among them.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let typed: Vec<char> = word.chars().collect();
    let limit = (typed.len() / 4).max(1);
    let mut best = limit;
    let mut found: Vec<&'a str> = Vec::new();
    for candidate in candidates {
        if candidate == word || found.contains(&candidate) {
            continue;
        }
        let Some(distance) = distance_within(&typed, word, candidate, best) else { continue };
        if distance < best {
            best = distance;
            found.clear();
        }
        found.push(candidate);
    }
    found
}

/// The one name of `candidates` to suggest for `word`: the first of
/// [`nearest`], if any.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    nearest(word, candidates).into_iter().next()
}

/// A field a reader does not know, and what to write instead: the known
/// field it is a slip for ([`did_you_mean`]), else the list of known fields.
/// Displayed as `unknown field `timout_secs`; did you mean `timeout_secs`?`;
/// where the field is (file, line, section) is the reader's to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// The field as written.
    pub field: String,
    /// The known field it is a slip for, if one is near enough.
    pub near: Option<String>,
    /// Every known field, in the reader's order.
    pub known: Vec<String>,
}

impl UnknownField {
    /// `field`, unknown among `known`.
    pub fn new<'a>(field: &str, known: impl IntoIterator<Item = &'a str>) -> Self {
        let known: Vec<&str> = known.into_iter().collect();
        UnknownField {
            field: field.to_string(),
            near: did_you_mean(field, known.iter().copied()).map(String::from),
            known: known.into_iter().map(String::from).collect(),
        }
    }

    /// Each of `keys` that is not in `known`, in the order of `keys`: a
    /// reader that reads a document's keys by hand checks them all at once.
    pub fn among<'a>(keys: impl IntoIterator<Item = &'a str>, known: &[&str]) -> Vec<Self> {
        keys.into_iter().filter(|k| !known.contains(k)).map(|k| Self::new(k, known.iter().copied())).collect()
    }

    /// The unknown field of serde's own error for a `deny_unknown_fields`
    /// type ("unknown field `x`, expected one of `a`, `b`"), whose expected
    /// names are the type's fields as its derive declares them: a reader that
    /// deserializes with serde needs no list of its own. `None` for any other
    /// error.
    pub fn from_serde(message: &str) -> Option<Self> {
        let rest = &message[message.find("unknown field `")? + "unknown field `".len()..];
        if let Some(at) = rest.find("`, there are no fields") {
            return Some(Self::new(&rest[..at], []));
        }
        let at = rest.find("`, expected ")?;
        let expected = &rest[at + "`, expected ".len()..];
        // serde writes each name in backticks: "`a`", "`a` or `b`", "one of `a`, `b`, `c`".
        let expected = expected.strip_prefix("one of ").unwrap_or(expected);
        let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        Some(Self::new(&rest[..at], names))
    }

    /// What to write instead: `did you mean `timeout_secs`?`, else `known
    /// fields: a, b, c`.
    pub fn hint(&self) -> String {
        match (&self.near, self.known.is_empty()) {
            (Some(near), _) => format!("did you mean `{near}`?"),
            (None, true) => "it takes no fields".to_string(),
            (None, false) => format!("known fields: {}", self.known.join(", ")),
        }
    }
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown field `{}`; {}", self.field, self.hint())
    }
}

/// How far `candidate` is from the typed word, when at most `limit`.
fn distance_within(typed: &[char], word: &str, candidate: &str, limit: usize) -> Option<usize> {
    if typed.len() >= 3 && candidate.starts_with(word) {
        return Some(1);
    }
    let other: Vec<char> = candidate.chars().collect();
    // Each edit changes the length by at most one: a far longer or shorter
    // name is not worth the table (and a huge word costs nothing).
    if typed.len().abs_diff(other.len()) > limit {
        return None;
    }
    Some(edit_distance(typed, &other)).filter(|d| *d <= limit)
}

/// Optimal-string-alignment distance: Levenshtein plus swaps of two
/// neighbouring characters (`grpe` → `grep` is one edit, not two).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    // Three rows of the table: the one before last (for swaps), the last, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j - 1] + cost).min(last[j] + 1).min(row[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

/// A character a terminal or a model's prompt acts on rather than shows: C0
/// and C1 controls, DEL, and the zero-width and text-direction marks.
pub fn acts_on_display(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` on one line, every character [`acts_on_display`] shown escaped
/// (`\n`, `\u{1b}`, `\u{202e}`): a name or a question from elsewhere (an MCP
/// server, a workspace file) as a terminal or a prompt may show it.
pub fn escape_controls(text: &str) -> String {
    escape_where(text, acts_on_display)
}

/// `text` as [`escape_controls`] shows it, but its newlines and tabs kept:
/// a model's answer, a file's text, a description of several lines. Text
/// with nothing to escape, most of it, is not copied.
pub fn escape_controls_in_text(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| acts_on_display(c) && c != '\n' && c != '\t';
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(escape_where(text, escaped))
}

fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> String {
    text.chars().map(|c| if escaped(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (typed, candidates, the nearest names)
    #[test]
    fn nearest_table() {
        let commands = ["cat", "grep", "egrep", "head", "help", "write", "wc", "uname", "python3", "rev"];
        let fields = ["name", "version", "description", "timeout_ms", "required", "format"];
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("gerp", &commands, &["grep"]),
            ("grpe", &commands, &["grep"]),
            ("hlep", &commands, &["help"]),
            ("hea", &commands, &["head"]),
            ("wirte", &commands, &["write"]),
            ("ca", &commands, &["cat"]),
            ("pyhton3", &commands, &["python3"]),
            ("reve", &commands, &["rev"]),
            ("zzzzzz", &commands, &[]),
            // Two edits in six letters is another word, not a slip.
            ("rename", &commands, &[]),
            ("rever", &commands, &[]),
            // A name is not a slip for itself; a neighbour still is.
            ("grep", &commands, &["egrep"]),
            ("cat", &["cat"], &[]),
            ("hel", &commands, &["help"]),
            ("verison", &fields, &["version"]),
            ("timeout", &fields, &["timeout_ms"]),
            ("requried", &fields, &["required"]),
            ("fromat", &fields, &["format"]),
            ("descriptoin", &fields, &["description"]),
            ("", &fields, &[]),
            // Ties are all kept, in the candidates' order, each once.
            ("lss", &["ls", "less", "lsx", "ls"], &["ls", "less", "lsx"]),
            ("ab", &["ab", "ax"], &["ax"]),
            // Characters, not bytes: one accented letter is one edit.
            ("cafe", &["café"], &["café"]),
        ];
        for (typed, candidates, want) in cases {
            assert_eq!(nearest(typed, candidates.iter().copied()), *want, "{typed}");
        }
    }

    #[test]
    fn did_you_mean_is_the_first_of_the_nearest() {
        assert_eq!(did_you_mean("lss", ["less", "ls"]), Some("less"));
        assert_eq!(did_you_mean("keywrd", ["limit", "keyword"]), Some("keyword"));
        assert_eq!(did_you_mean("rename", ["uname", "mv"]), None);
    }

    #[test]
    fn a_closer_name_replaces_farther_ones() {
        // Eight letters allow two edits: one at two is kept until one at one comes.
        assert_eq!(nearest("abcdefgh", ["abcdefxx", "abcdefgx", "abcdexxx"]), ["abcdefgx"]);
        assert_eq!(nearest("abcdefgh", ["abcdefxx"]), ["abcdefxx"]);
    }

    /// (the field, the known ones, the message)
    #[test]
    fn unknown_field_messages() {
        let limits = ["timeout_secs", "max_memory_bytes", "max_tmp_bytes"];
        let cases: &[(&str, &[&str], &str)] = &[
            ("timout_secs", &limits, "unknown field `timout_secs`; did you mean `timeout_secs`?"),
            ("colour", &limits, "unknown field `colour`; known fields: timeout_secs, max_memory_bytes, max_tmp_bytes"),
            ("x", &[], "unknown field `x`; it takes no fields"),
        ];
        for (field, known, want) in cases {
            assert_eq!(UnknownField::new(field, known.iter().copied()).to_string(), *want);
        }
        let found = UnknownField::among(["name", "nmae", "zzz"], &["name", "kind"]);
        let fields: Vec<&str> = found.iter().map(|u| u.field.as_str()).collect();
        assert_eq!(fields, ["nmae", "zzz"]);
        assert_eq!(found[0].near.as_deref(), Some("name"));
    }

    /// serde's message for every number of expected names reads back as
    /// the same names, checked against serde's own `unknown_field`.
    #[test]
    fn serde_unknown_field_errors_read_back() {
        use serde::de::Error as _;
        let cases: &[&'static [&'static str]] =
            &[&[], &["host"], &["host", "port"], &["name", "kind", "host", "user", "port"]];
        for expected in cases {
            let error = serde_json::Error::unknown_field("hots", expected);
            let found = UnknownField::from_serde(&error.to_string()).unwrap();
            assert_eq!(
                (found.field.as_str(), found.known.as_slice()),
                ("hots", &expected.iter().map(|s| s.to_string()).collect::<Vec<_>>()[..])
            );
            assert_eq!(found.near.as_deref(), expected.contains(&"host").then_some("host"));
        }
        // A message around it (a TOML error's position) does not matter; another error is none.
        let wrapped = "TOML parse error at line 3\nunknown field `nmae`, expected `name` or `kind`\n";
        assert_eq!(UnknownField::from_serde(wrapped).unwrap().near.as_deref(), Some("name"));
        assert_eq!(UnknownField::from_serde("invalid type: string \"x\", expected u64"), None);
    }

    #[test]
    fn edit_distances() {
        let d = |a: &str, b: &str| edit_distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>());
        for (a, b, want) in [("", "", 0), ("", "abc", 3), ("abc", "abc", 0), ("ab", "ba", 1), ("kitten", "sitting", 3)]
        {
            assert_eq!((d(a, b), d(b, a)), (want, want), "{a} / {b}");
        }
    }

    #[test]
    fn a_huge_word_is_answered_quickly() {
        let word = "x".repeat(1 << 20);
        let started = std::time::Instant::now();
        assert_eq!(nearest(&word, ["xx", "grep"]), Vec::<&str>::new());
        // Only a hang guard (a table of the word's length squared would take
        // hours): how quick it is, is a figure for a benchmark, not a test.
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}
